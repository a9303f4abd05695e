"""report.md: the same facts as report.html, readable in a terminal or a pull request."""

from __future__ import annotations

from typing import Any

from pmem_advisor.report.describe import (
    caveat_lines,
    dashboard_line,
    emitted_line,
    end_line,
    failure_lines,
    hardware_lines,
    target_lines,
    timing_line,
    verdict_line,
)


def fmt(v: Any, spec: str = ".1f") -> str:
    return "n/a" if v is None else format(v, spec)


def gain(g: dict | None, *, words: bool = False) -> str:
    """'+4.1% [-2.0%, +9.8%]' for tables; with ``words``, '+4.1% (99.2% CI -2.0% .. +9.8%)'.
    The interval is at the level the verdict's test used (after its correction)."""
    if not g or g.get("gain_pct") is None:
        return "n/a"
    text = f"{g['gain_pct']:+.1f}%"
    if g.get("ci_low_pct") is not None:
        low, high = f"{g['ci_low_pct']:+.1f}%", f"{g['ci_high_pct']:+.1f}%"
        level = f"{100 * g.get('confidence', 0.95):.1f}% CI"
        text += f" ({level} {low} .. {high})" if words else f" [{low}, {high}]"
        if g.get("decision") == "none":
            text += " n.s."
    return text


HEADERS = ["config", "trial", "throughput (tps)", "p95 (ms)", "p99 (ms)", "runs", "spread",
           "vs defaults", "vs rules-only"]
KNOB_HEADERS = ["knob", "default", "rules", "tuned", "emitted", "unit", "reason"]


def comparison_rows(summary: dict[str, Any]) -> list[list[str]]:
    """defaults / rules-only / tuned: medians of the re-measured runs, spread, the verdict's
    gains (n.s. = not significant)."""
    comps = (summary.get("verdict") or {}).get("comparisons") or {}
    b = summary["baselines"]
    emit = (summary.get("best") or {}).get("role")
    rows = []
    for role, label, e in (("default", "server defaults", b.get("default")),
                           ("rules", "rules only", b.get("rules")),
                           ("tuned", "tuned (best search trial)", summary.get("tuned"))):
        label += " (emitted)" if role == emit else ""
        if not e or e.get("trial") is None:
            rows.append([label, "-", "n/a", "n/a", "n/a", "n/a", "-", "-", "-"])
            continue
        runs = f"{e.get('runs', 1)}" + ("" if e.get("repeated") else " (search run only)")
        rows.append([label, str(e["trial"]), fmt(e.get("throughput_tps")),
                     fmt(e.get("latency_p95_ms"), ".2f"), fmt(e.get("latency_p99_ms"), ".2f"),
                     runs, fmt(e.get("spread_pct")) + "%" if e.get("spread_pct") is not None
                     else "n/a",
                     gain(comps.get(f"{role}_vs_default")) if role != "default" else "-",
                     gain(comps.get("tuned_vs_rules")) if role == "tuned" else "-"])
    return rows


def knob_table_rows(summary: dict[str, Any]) -> list[list[str]]:
    return [[str(r[h]) for h in KNOB_HEADERS] for r in summary.get("knobs") or []]


def _md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    def cell(c: str) -> str:
        return c.replace("|", "\\|")

    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers),
            *("| " + " | ".join(cell(c) for c in r) + " |" for r in rows)]


def method_text(summary: dict[str, Any]) -> str:
    plan = (summary.get("verdict") or {}).get("plan") or {}
    if not plan:
        return "No repeated runs: the final comparison did not run."
    test = ("paired t-test on the per-round log ratios, intervals at the same level"
            if plan.get("paired") else "exact permutation test (Mann-Whitney U), intervals: "
            "bootstrap of the ratio of medians at the same level")
    first = plan.get("alpha_first_look")
    early = f"{first:.4f} at the early look, " if first else ""
    return (f"Runs: interleaved rounds (tuned, rules-only, defaults, repeated), at most "
            f"{plan.get('max_rounds')}, looks after rounds {plan.get('looks')}; {test}; "
            f"alpha {plan.get('alpha')} Bonferroni-corrected over the looks and "
            f"{plan.get('comparisons')} deciding comparisons ({early}"
            f"{plan.get('alpha_per_test', 0):.4f} per test at the last). The search's single "
            "runs are not used: the best of many single runs is the luckiest.")


def render_markdown(summary: dict[str, Any]) -> str:
    s = summary
    v = s.get("verdict") or {}
    lines = [
        f"# pmem-advisor tune: {s['flavour']} {s['version']}, workload {s['workload']}",
        "",
        f"Objective: {s['objective']}"
        + (f", p95 latency SLO {s['latency_slo_ms']} ms" if s.get("latency_slo_ms") else "")
        + f". Study `{s['study']}`: {s['trials_completed']} trials measured, "
        f"{s['trials_failed']} failed in the search, {s.get('runs_failed', 0)} failed runs in "
        f"all, {s.get('trials_infeasible', 0)} over the SLO.",
        "",
        "## Verdict",
        "",
        f"**{verdict_line(s).removeprefix('verdict: ')}**",
        "",
        emitted_line(s).replace("emitted:", "Emitted:", 1) + ".",
        "",
        method_text(s) + (f" Stopped after round {v['rounds']} of "
                          f"{(v.get('plan') or {}).get('max_rounds')}."
                          if v.get("rounds") else ""),
        "",
    ]
    lines += _md_table(HEADERS, comparison_rows(s))
    lines.append("")
    for line in (timing_line(s), dashboard_line(s), end_line(s)):
        if line:
            lines += [line[0].upper() + line[1:] + ".", ""]
    for c in caveat_lines(s):
        lines += [f"> **Caveat:** {c}", ""]
    if s.get("config_file"):
        lines += ["## The config", "", f"`{s['config_file']}`", ""]
        lines += [f"- {n}" for n in (s.get("gate") or {}).get("notes") or []]
        lines += ["```", *[ln for ln in s.get("apply") or []], "```", ""]
    if s.get("knobs"):
        lines += ["## Knobs: default, rules, tuned, emitted", ""]
        lines += _md_table(KNOB_HEADERS, knob_table_rows(s))
        lines.append("")
    if s.get("importance"):
        lines += ["## Knob importance (fANOVA over the measured trials)", ""]
        lines += [f"- `{k}`: {imp:.3f}" for k, imp in s["importance"].items()]
        lines.append("")
    if s.get("failures"):
        lines += ["## Failed runs", ""]
        lines += [f"- {f}" for f in failure_lines(s)]
        lines.append("")
    if target_lines(s):
        lines += ["## Production target and data", ""]
        lines += [f"- {t}" for t in target_lines(s)]
        lines.append("")
    lines += ["## Hardware", ""]
    lines += [f"- {h}" for h in hardware_lines(s.get("profile"), s.get("meta"))]
    lines.append("")
    return "\n".join(lines)
