"""report.html: Optuna's plotly figures and the default / rules-only / tuned table, one file."""

from __future__ import annotations

import html
import warnings
from typing import Any

import optuna

from pmem_advisor.report.markdown import HEADERS, comparison_rows, fmt, gain

STYLE = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td:first-child{text-align:left}.note{color:#555}"""


def _figures(study: optuna.Study) -> list[tuple[str, Any]]:
    """(title, figure) for each plot that this study has enough trials for."""
    from optuna import visualization as vis

    plots = [("Optimisation history", vis.plot_optimization_history),
             ("Knob importance (fANOVA)", vis.plot_param_importances),
             ("Parallel coordinates", vis.plot_parallel_coordinate)]
    figs = []
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # "no complete trials" is shown anyway
    try:
        figs = _plots(study, plots)
    finally:
        optuna.logging.set_verbosity(level)
    return figs


def _plots(study: optuna.Study, plots: list) -> list[tuple[str, Any]]:
    figs = []
    for title, plot in plots:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                figs.append((title, plot(study)))
        except (ValueError, RuntimeError, ZeroDivisionError):
            continue  # e.g. importance needs two completed trials that differ
    return figs


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(study: optuna.Study, summary: dict[str, Any]) -> str:
    s = summary
    title = f"pmem-advisor tune: {s['flavour']} {s['version']}, workload {s['workload']}"
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<p>Objective {html.escape(s['objective'])}; study {html.escape(s['study'])}: "
             f"{s['trials_completed']} trials measured, {s['trials_failed']} failed.</p>",
             _table(HEADERS, comparison_rows(s)),
             f"<p>Tuned vs server defaults: {html.escape(gain(s.get('gain_vs_default')))}; "
             f"tuned vs rules only: {html.escape(gain(s.get('gain_vs_rules')))}. Run-to-run "
             f"spread {fmt(s.get('spread_pct'))}%.</p>"]
    if s.get("config_file"):
        parts.append(f"<p>Best config: <code>{html.escape(s['config_file'])}</code></p>")
    first = True
    for fig_title, fig in _figures(study):
        parts.append(f"<h2>{html.escape(fig_title)}</h2>")
        # plotly.js inline once: the report works offline, as one file
        parts.append(fig.to_html(full_html=False, include_plotlyjs=first))
        first = False
    if s.get("failures"):
        parts.append("<h2>Failed trials</h2>")
        parts.append(_table(["trial", "reason"],
                            [[str(f["trial"]), f["reason"] or ""] for f in s["failures"]]))
    parts.append("</body></html>")
    return "\n".join(parts)
