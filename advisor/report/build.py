"""Everything `tune` leaves in its output directory, rebuilt from the study alone.

``summary.json`` (machine-readable), the emitted config with a reason per line and a header
(verdict, hardware, emulation caveat, how to apply), ``report.md`` and ``report.html``
(plots in human units next to the same tables). The config written is the verdict's: tuned
only when it beat rules-only significantly; it passes our own check first (deployable.py).
Every file goes through the one safe writer (advisor/fileio.py: a changed file keeps a .bak).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import optuna

from pmem_advisor import fileio
from pmem_advisor.report.config_file import (
    Line,
    config_name,
    load_catalog_or_none,
    render_config,
    render_value,
)
from pmem_advisor.report.deployable import gate
from pmem_advisor.report.describe import (
    apply_lines,
    caveat_lines,
    emitted_line,
    end_line,
    failure_lines,
    hardware_lines,
    target_lines,
    verdict_line,
)
from pmem_advisor.report.html import PLOTLY_JS, plotly_js, render_html
from pmem_advisor.report.markdown import render_markdown
from pmem_advisor.schemas import stamp
from pmem_advisor.tuner.results import summarize
from pmem_advisor.tuner.space import SearchSpace
from pmem_advisor.tuner.study import SPACE_ATTR

SUMMARY = "summary.json"
SUMMARY_SCHEMA = "pmem-advisor.tune-summary/1"


def _write(path: Path, data: str | bytes) -> None:
    writer = getattr(fileio, "write_file_safely", None) or fileio.write_keeping_backup
    writer(path, data)


def _config_of(entry: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    cfg = (entry or {}).get("config") or {}
    return dict(cfg.get("params") or {}), dict(cfg.get("init_params") or {})


def _show(catalog: Any, name: str, value: Any) -> str:
    try:
        return render_value(catalog, name, value)
    except Exception:  # noqa: BLE001 - a value the catalog cannot render is shown as stored
        return str(value)


def production_settings(summary: dict[str, Any]) -> dict[str, Any]:
    """Settings sized for the production target, not for the benchmark (max_connections):
    in the file whichever config won, defaults included."""
    return dict((summary.get("meta") or {}).get("production_settings") or {})


def reason_for(name: str, summary: dict[str, Any], space: SearchSpace) -> str:
    """Why the emitted file sets ``name`` (rule, measurement, or kept base)."""
    if name in production_settings(summary):
        t = (summary.get("meta") or {}).get("target") or {}
        return (f"production target ({t.get('connections_source') or 'the rules'}), not the "
                "benchmark's clients")
    best = summary.get("best") or {}
    rule = space.reasons.get(name)
    searched = name in {k.name for k in space.knobs}
    if best.get("role") == "tuned" and searched:
        rules_params = space.rules_params or {}
        why = f"tuned in trial {best['trial']}, confirmed by the verdict"
        if name in rules_params:
            why += f"; rules suggested {rules_params[name]}" if str(
                rules_params[name]) != str(_config_of(best)[0].get(name)) else \
                "; same as the rules' value"
        return why + (f" (rule {rule})" if rule else "")
    if rule:
        return f"rule {rule}"
    return "rules-only value" if best.get("role") == "rules" else \
        "rule setting kept in every tuned trial"


def _marked(name: str, value: Any, reason: str, catalog: Any) -> str:
    """A durability-risk value (only in a study tuned with --allow-unsafe; the deploy gate
    removes it otherwise) says so on its line, as `config render --allow-unsafe` marks it."""
    knob = catalog.get(name) if catalog is not None and name in catalog else None
    if knob is None or not knob.is_risky(value):
        return reason
    return f"UNSAFE, durability risk: {knob.safety_reason or 'see the catalog'}; {reason}"


def knob_rows(summary: dict[str, Any], space: SearchSpace, catalog: Any,
              written: dict[str, Any], removed: dict[str, str]) -> list[dict[str, Any]]:
    """knob, default, rules, tuned, emitted (what the file sets), unit, reason: one row per
    knob that the search or the rules touched."""
    rules_p, rules_i = _config_of((summary.get("baselines") or {}).get("rules"))
    tuned_p, tuned_i = _config_of(summary.get("tuned"))
    best_p, best_i = _config_of(summary.get("best"))
    best_p.update(production_settings(summary))
    rules, tuned, best = {**rules_i, **rules_p}, {**tuned_i, **tuned_p}, {**best_i, **best_p}
    names = sorted({k.name for k in space.knobs} | set(rules) | set(tuned) | set(best))
    rows = []
    for name in names:
        knob = catalog.get(name) if catalog is not None and name in catalog else None
        default = knob.default if knob is not None else space.default_params.get(name)
        if name in removed:
            emitted, why = "(server default)", f"left out: {removed[name]}"
        elif name in best_i:
            emitted, why = _show(catalog, name, best_i[name]), "set at initialisation " \
                "(initdb / first start), not in the file"
        elif name in written:
            emitted, why = _show(catalog, name, written[name]), reason_for(name, summary, space)
        else:
            emitted, why = "(server default)", "not set: the server default applies"
        rows.append({
            "knob": name,
            "default": _show(catalog, name, default) if default is not None else "-",
            "rules": _show(catalog, name, rules[name]) if name in rules else "-",
            "tuned": _show(catalog, name, tuned[name]) if name in tuned else "-",
            "emitted": emitted,
            "unit": (knob.unit or "") if knob is not None else "",
            "reason": why,
        })
    return rows


def _restart_knobs(names: list[str], catalog: Any) -> list[str]:
    return [n for n in names if catalog is not None and n in catalog
            and catalog.get(n).scope in ("restart", "reinit", "compile")]


def write_config(out: Path, summary: dict[str, Any], space: SearchSpace, catalog: Any
                 ) -> Path | None:
    """The emitted config, after our check; None when nothing was measured."""
    best = summary.get("best")
    if not best:
        summary["gate"] = None
        return None
    params, init = _config_of(best)
    params.update(production_settings(summary))
    meta = summary.get("meta") or {}
    g = gate(params, catalog=catalog, profile=summary.get("profile"), meta=meta)
    summary["gate"] = {"removed": g.removed, "notes": g.notes(),
                       "checked_with_rules": g.checked_with_rules,
                       "findings": g.findings}
    summary["knobs"] = knob_rows(summary, space, catalog, g.settings, g.removed)
    path = out / config_name(space.engine)
    rendered = {n: _show(catalog, n, v) for n, v in sorted(g.settings.items())}
    summary["apply"] = apply_lines(space.engine, str(path.resolve()), rendered,
                                   _restart_knobs(sorted(rendered), catalog), space.flavour,
                                   catalog)
    header = [
        f"pmem-advisor tune: {space.flavour} {space.version}, workload {summary['workload']}, "
        f"objective {summary['objective']}",
        verdict_line(summary), emitted_line(summary),
        *failure_lines(summary), *([end_line(summary)] if end_line(summary) else []),
        *target_lines(summary),
        *hardware_lines(summary.get("profile"), meta), *caveat_lines(summary),
        *[f"check: {n}" for n in g.notes()],
    ]
    header += [f"set at initialisation (not in this file): {n} = {_show(catalog, n, v)}"
               for n, v in sorted(init.items())]
    header += summary["apply"]
    lines = [Line(n, v, _marked(n, v, reason_for(n, summary, space), catalog))
             for n, v in sorted(g.settings.items())]
    _write(path, render_config(space.engine, lines, catalog=catalog, header=header))
    return path


def write_reports(study: optuna.Study, out_dir: str | Path, *, offline: bool = False
                  ) -> dict[str, Any]:
    """Write every output; returns the summary (with ``config_file``). ``offline`` embeds
    plotly.js in report.html (one self-contained file) instead of a plotly.min.js beside it."""
    out = Path(out_dir)
    fileio.ensure_dir(out)
    summary = summarize(study)
    space = SearchSpace.from_dict(study.user_attrs[SPACE_ATTR])
    catalog = load_catalog_or_none(space.engine, space.flavour, space.version)
    summary["knobs"] = knob_rows(summary, space, catalog, {}, {})
    config = write_config(out, summary, space, catalog)
    summary["config_file"] = str(config) if config else None
    for key in ("default", "rules"):  # keep the documented shape even without a baseline
        if summary["baselines"][key] is None:
            summary["baselines"][key] = {"trial": None, "throughput_tps": None}
    # summary.json is a contract like every --json output: schema id, tool version, target
    summary = stamp(summary, SUMMARY_SCHEMA, engine=space.engine, flavour=space.flavour,
                    version=None if space.version is None else str(space.version))
    _write(out / SUMMARY, json.dumps(summary, indent=2, default=str) + "\n")
    _write(out / "report.md", render_markdown(summary))
    js = out / PLOTLY_JS
    if not offline and not (js.is_file() and js.read_text(encoding="utf-8") == plotly_js()):
        _write(js, plotly_js())
    _write(out / "report.html", render_html(study, summary, space, catalog, offline=offline))
    return summary
