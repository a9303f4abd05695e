"""report.html: report.md's tables and sentences plus plots in human units.

plotly.js (4.7 MB) is loaded once: by default it is written beside the report as
plotly.min.js (taken from the installed plotly package) and referenced with a relative
<script src>, so the report opens with no network (a CDN link would not) and the directory
carries one copy, not one per figure or per report; ``offline=True`` embeds it instead for a
single self-contained file to mail or archive.

The plots are drawn from the summary, not by Optuna's helpers, so they show what the tables
show: the history marks single search runs and the verdict's repeated medians (Optuna's
"best value" line would crown the luckiest single run); importance is the one fANOVA
computation of the summary; parallel-coordinate axes are in MiB, ms, on/off.
"""

from __future__ import annotations

import html
from typing import Any

import optuna

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
from pmem_advisor.report.markdown import (
    HEADERS,
    KNOB_HEADERS,
    comparison_rows,
    knob_table_rows,
    method_text,
)
from pmem_advisor.tuner.space import SearchSpace

PLOTLY_JS = "plotly.min.js"
MiB = 1024**2
STYLE = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;
text-align:right}th{background:#f3f3f3}td:first-child{text-align:left}.note{color:#555}
.verdict{font-size:1.2em;font-weight:bold}.caveat{background:#fff6d5;padding:.5em}
pre{background:#f6f6f6;padding:.5em;overflow-x:auto}"""


def plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def human_axis(knob: Any, values: list[Any]) -> tuple[str, list[Any], dict[str, Any]]:
    """An axis label, values and tick options in a DBA's units: sizes in MiB, durations in
    ms, enums and booleans by name (the base units are 8 kB pages, kB, us...)."""
    from pmem_advisor.knobs.units import BASE_BYTES, BASE_US

    name = knob.name if knob is not None else "?"
    kind = getattr(knob, "type", None)
    unit = getattr(knob, "unit", None)
    if kind == "size":
        per = BASE_BYTES.get(unit or "B", 1)
        return f"{name} (MiB)", [None if v is None else v * per / MiB for v in values], {}
    if kind == "duration" and unit in BASE_US:
        return f"{name} (ms)", [None if v is None else v * BASE_US[unit] / 1000
                                for v in values], {}
    if kind in ("enum", "bool") or any(isinstance(v, str) for v in values):
        labels = sorted({str(v) for v in values})
        return name, [labels.index(str(v)) for v in values], {
            "tickvals": list(range(len(labels))), "ticktext": labels}
    return name + (f" ({unit})" if unit else ""), values, {}


def _measured(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    from pmem_advisor.tuner.results import measured_trials

    return measured_trials(study)


def _ran(t: optuna.trial.FrozenTrial) -> dict[str, Any]:
    cfg = t.user_attrs.get("config") or {}
    return {**t.params, **(cfg.get("init_params") or {}), **(cfg.get("params") or {})}


def _figures(study: optuna.Study, summary: dict[str, Any], space: SearchSpace, catalog: Any
             ) -> list[tuple[str, Any]]:
    import plotly.graph_objects as go

    figs = []
    trials = _measured(study)
    objective = summary["objective"]
    unit = "tps" if objective == "throughput" else "ms"
    if trials:
        fig = go.Figure()
        for role in ("default", "rules", "search"):
            ts = [t for t in trials if t.user_attrs.get("role") == role]
            fig.add_trace(go.Scatter(x=[t.number for t in ts], y=[t.value for t in ts],
                                     mode="markers", name=f"{role} (single run)"))
        for key, label in (("tuned", "tuned"), ("rules", "rules-only"),
                           ("default", "defaults")):
            e = summary.get("tuned") if key == "tuned" else summary["baselines"].get(key)
            if e and e.get("repeated") and e.get("objective_median") is not None:
                fig.add_hline(y=e["objective_median"], line_dash="dot",
                              annotation_text=f"{label}: median of {e['runs']} re-measured runs")
        fig.update_layout(xaxis_title="trial", yaxis_title=f"{objective} ({unit})")
        figs.append(("Search runs and the verdict's repeated medians", fig))
    imp = summary.get("importance") or {}
    if imp:
        names = list(imp)[::-1]
        figs.append(("Knob importance (fANOVA, the same numbers as report.md)",
                     go.Figure(go.Bar(x=[imp[n] for n in names], y=names, orientation="h"))))
    knobs = [k.name for k in space.knobs]
    if trials and knobs:
        dims = []
        for name in knobs:
            knob = catalog.get(name) if catalog is not None and name in catalog else None
            label, vals, ticks = human_axis(knob, [_ran(t).get(name) for t in trials])
            dims.append({"label": label, "values": vals, **ticks})
        values = [t.value for t in trials]
        dims.append({"label": f"{objective} ({unit})", "values": values})
        figs.append(("Parallel coordinates (single search runs)", go.Figure(go.Parcoords(
            line={"color": values, "colorscale": "Viridis", "showscale": True},
            dimensions=dims))))
    return figs


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _p(text: str, cls: str = "") -> str:
    return f"<p{f' class={cls!r}' if cls else ''}>{html.escape(text)}</p>"


def render_html(study: optuna.Study, summary: dict[str, Any], space: SearchSpace,
                catalog: Any = None, *, offline: bool = False) -> str:
    s = summary
    title = f"pmem-advisor tune: {s['flavour']} {s['version']}, workload {s['workload']}"
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
             _p(f"Objective {s['objective']}; study {s['study']}: {s['trials_completed']} "
                f"trials measured, {s['trials_failed']} failed in the search, "
                f"{s.get('runs_failed', 0)} failed runs in all."),
             "<h2>Verdict</h2>", _p(verdict_line(s).removeprefix("verdict: "), "verdict"),
             _p(emitted_line(s)), _p(method_text(s), "note"),
             _table(HEADERS, comparison_rows(s))]
    for line in (timing_line(s), dashboard_line(s), end_line(s)):
        if line:
            parts.append(_p(line))
    parts += [_p("Caveat: " + c, "caveat") for c in caveat_lines(s)]
    if s.get("config_file"):
        parts += ["<h2>The config</h2>", f"<p><code>{html.escape(s['config_file'])}</code></p>"]
        parts += [_p(n, "note") for n in (s.get("gate") or {}).get("notes") or []]
        parts.append(f"<pre>{html.escape(chr(10).join(s.get('apply') or []))}</pre>")
    if s.get("knobs"):
        parts += ["<h2>Knobs: default, rules, tuned, emitted</h2>",
                  _table(KNOB_HEADERS, knob_table_rows(s))]
    if s.get("failures"):
        parts += ["<h2>Failed runs</h2>", "<ul>"]
        parts += [f"<li>{html.escape(f)}</li>" for f in failure_lines(s)]
        parts.append("</ul>")
    first = True
    for fig_title, fig in _figures(study, s, space, catalog):
        parts.append(f"<h2>{html.escape(fig_title)}</h2>")
        include: bool | str = (True if offline else PLOTLY_JS) if first else False
        parts.append(fig.to_html(full_html=False, include_plotlyjs=include))
        first = False
    if target_lines(s):
        parts += ["<h2>Production target and data</h2>", "<ul>"]
        parts += [f"<li>{html.escape(t)}</li>" for t in target_lines(s)]
        parts.append("</ul>")
    parts += ["<h2>Hardware</h2>", "<ul>"]
    parts += [f"<li>{html.escape(h)}</li>" for h in hardware_lines(s.get("profile"),
                                                                    s.get("meta"))]
    parts += ["</ul>", "</body></html>"]
    return "\n".join(parts)
