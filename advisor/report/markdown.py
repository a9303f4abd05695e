"""report.md: the same facts as report.html, readable in a terminal or a pull request."""

from __future__ import annotations

from typing import Any

from pmem_advisor.errors import AdvisorError
from pmem_advisor.report.config_file import load_catalog_or_none, render_value


def _render(catalog: Any, name: str, value: Any) -> str:
    try:
        return render_value(catalog, name, value)
    except AdvisorError:  # a value the catalog cannot render: show it as stored
        return str(value)


def fmt(v: Any, spec: str = ".1f") -> str:
    return "n/a" if v is None else format(v, spec)


def gain(g: dict | None, *, words: bool = False) -> str:
    """'+4.1% [-2.0%, +9.8%]' for tables; with ``words``, '+4.1% (95% CI -2.0% .. +9.8%)'
    for config-file headers."""
    if not g or g.get("gain_pct") is None:
        return "n/a"
    text = f"{g['gain_pct']:+.1f}%"
    if g.get("ci_low_pct") is not None:
        low, high = f"{g['ci_low_pct']:+.1f}%", f"{g['ci_high_pct']:+.1f}%"
        text += f" (95% CI {low} .. {high})" if words else f" [{low}, {high}]"
    return text


def comparison_rows(summary: dict[str, Any]) -> list[list[str]]:
    """default / rules-only / tuned: trial, throughput, p95, p99, runs, spread, gain."""
    rows = []
    b = summary["baselines"]
    for label, e, g in (("server defaults", b.get("default"), None),
                        ("rules only", b.get("rules"), summary.get("rules_gain_vs_default")),
                        ("tuned (best)", summary.get("best"), summary.get("gain_vs_default"))):
        if not e or e.get("trial") is None:
            rows.append([label, "-", "n/a", "n/a", "n/a", "-", "n/a"])
            continue
        rows.append([label, str(e["trial"]), fmt(e.get("throughput_tps")),
                     fmt(e.get("latency_p95_ms"), ".2f"), fmt(e.get("latency_p99_ms"), ".2f"),
                     str(e.get("runs", 1)), fmt(e.get("spread_pct")) + "%" if e.get(
                         "spread_pct") is not None else "n/a",
                     gain(g) if g else "-"])
    return rows


HEADERS = ["config", "trial", "throughput (tps)", "p95 (ms)", "p99 (ms)", "runs", "spread",
           "gain vs defaults"]


def render_markdown(summary: dict[str, Any]) -> str:
    s = summary
    lines = [
        f"# pmem-advisor tune: {s['flavour']} {s['version']}, workload {s['workload']}",
        "",
        f"Objective: {s['objective']}"
        + (f", p95 latency SLO {s['latency_slo_ms']} ms" if s.get("latency_slo_ms") else "")
        + f". Study `{s['study']}`: {s['trials_completed']} trials measured, "
        f"{s['trials_failed']} failed, {s.get('trials_infeasible', 0)} over the SLO.",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
    ]
    lines += ["| " + " | ".join(r) + " |" for r in comparison_rows(s)]
    lines += [
        "",
        f"Tuned vs server defaults: {gain(s.get('gain_vs_default'))}; "
        f"tuned vs rules only: {gain(s.get('gain_vs_rules'))} "
        "(ratios of medians of repeated runs; 95% bootstrap intervals).",
        f"Run-to-run spread (coefficient of variation): {fmt(s.get('spread_pct'))}%.",
        "",
    ]
    if s.get("config_file"):
        lines += [f"Best config: `{s['config_file']}`.", ""]
    if s.get("best"):
        lines += ["## Best parameters", ""]
        catalog = load_catalog_or_none(s.get("engine", ""), s.get("flavour"), s.get("version"))
        lines += [f"- `{k}` = `{_render(catalog, k, v)}`" for k, v in s["best"]["params"].items()]
        lines.append("")
    if s.get("importance"):
        lines += ["## Knob importance (fANOVA)", ""]
        lines += [f"- `{k}`: {v:.3f}" for k, v in s["importance"].items()]
        lines.append("")
    if s.get("failures"):
        lines += ["## Failed trials", ""]
        lines += [f"- trial {f['trial']}: {f['reason']}" for f in s["failures"]]
        lines.append("")
    return "\n".join(lines)
