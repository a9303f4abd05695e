"""Everything `tune` leaves in its output directory, rebuilt from the study alone.

``summary.json`` (machine-readable), the best config with a reason per line, ``report.md`` and
``report.html`` (Optuna's plotly figures plus the default / rules-only / tuned table).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import optuna

from pmem_advisor.fileio import write_keeping_backup
from pmem_advisor.report.config_file import (
    CONFIG_NAMES,
    Line,
    load_catalog_or_none,
    render_config,
    render_value,
)
from pmem_advisor.report.html import render_html
from pmem_advisor.report.markdown import gain, render_markdown
from pmem_advisor.tuner.results import summarize
from pmem_advisor.tuner.space import SearchSpace
from pmem_advisor.tuner.study import SPACE_ATTR

SUMMARY = "summary.json"


def _pct(g: dict | None) -> str:
    return gain(g, words=True)


def config_lines(summary: dict[str, Any], space: SearchSpace, catalog: Any) -> list[Line]:
    """The best trial's settings, each with why it is there (rule or measured search)."""
    best = summary["best"]
    if not best:
        return []
    params = (best.get("config") or {}).get("params") or {}
    tuned = {k.name for k in space.knobs}
    rules = space.rules_params or {}
    lines = []
    for name in sorted(params):
        value = params[name]
        if best["role"] == "rules":
            why = space.reasons.get(name) or "rules-only value, measured best"
        elif name in tuned:
            why = f"tuned in trial {best['trial']}"
            if name in rules:
                same = str(rules[name]) == str(value)
                why += (", same as the rules' value" if same else
                        f"; rules suggested {render_value(catalog, name, rules[name])}")
            if space.reasons.get(name):
                why += f" (rule: {space.reasons[name]})"
        else:
            why = space.reasons.get(name) or "rule setting kept in every tuned trial"
        lines.append(Line(name, value, why))
    return lines


def write_config(out: Path, summary: dict[str, Any], space: SearchSpace) -> Path | None:
    best = summary["best"]
    if not best:
        return None
    catalog = load_catalog_or_none(space.engine, space.flavour, space.version)
    init = (best.get("config") or {}).get("init_params") or {}
    header = [
        f"pmem-advisor tune: {space.flavour} {space.version}, workload {summary['workload']}, "
        f"objective {summary['objective']}",
        f"best: trial {best['trial']} ({best['role']}), median "
        f"{best['throughput_tps'] or 0:.1f} tps over {best['runs']} runs",
        f"measured gain vs server defaults: {_pct(summary['gain_vs_default'])}",
        f"measured gain vs rules-only: {_pct(summary['gain_vs_rules'])}",
    ]
    for name, value in sorted(init.items()):
        header.append(f"set at initialisation (not in this file): {name} = "
                      f"{render_value(catalog, name, value)}")
    if best["role"] == "default":
        header.append("the server defaults won: nothing to set")
    text = render_config(space.engine, config_lines(summary, space, catalog), catalog=catalog,
                         header=header)
    path = out / CONFIG_NAMES[space.engine]
    write_keeping_backup(path, text)  # a config the user edited is kept as .bak
    return path


def write_reports(study: optuna.Study, out_dir: str | Path) -> dict[str, Any]:
    """Write every output; returns the summary (with ``config_file``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(study)
    space = SearchSpace.from_dict(study.user_attrs[SPACE_ATTR])
    config = write_config(out, summary, space)
    summary["config_file"] = str(config) if config else None
    for key in ("default", "rules"):  # keep the documented shape even without a baseline
        if summary["baselines"][key] is None:
            summary["baselines"][key] = {"trial": None, "throughput_tps": None}
    _atomic_write(out / SUMMARY, json.dumps(summary, indent=2, default=str) + "\n")
    _atomic_write(out / "report.md", render_markdown(summary))
    _atomic_write(out / "report.html", render_html(study, summary))
    return summary


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
