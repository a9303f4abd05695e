"""The outputs: a Markdown table per scenario, a PNG convergence plot, JSON for machines."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pmem_advisor.fileio import write_file_safely

from .runner import ArmStatus, TrialRecord
from .stats import ArmStats, best_curve, smac_target_budget


@dataclass
class ScenarioResult:
    name: str
    title: str  # one line: engine, version, workload, placement
    budgets: list[int]
    seeds: list[int]
    records: list[TrialRecord]
    statuses: list[ArmStatus]
    rows: list[ArmStats]
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)
    plot: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "budgets": self.budgets,
            "seeds": self.seeds,
            "notes": self.notes,
            "wall_s": round(self.wall_s, 1),
            "meta": self.meta,
            "plot": self.plot,
            "arms": [r.to_dict() for r in self.rows],
            "trials": [r.to_dict() for r in self.records],
        }


def _num(v: float | None, digits: int = 0) -> str:
    if v is None:
        return "-"
    return f"{v:,.{digits}f}"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _trials(row: ArmStats) -> str:
    t = row.trials_to_95_smac
    if t is None:
        return "-"
    if math.isinf(t):
        return f">{row.budget}"
    return f"{t:g}"


def markdown(result: ScenarioResult) -> str:
    target = smac_target_budget(result.rows)
    to_col = f"trials to 95% of smac@{target}" if target else "trials to 95% of smac"
    head = [
        "arm", "budget", "best tps median", "[min - max] over seeds", "x default",
        "x smac (same budget)", to_col, "x ceiling", "wall s (median)", "failed trials",
    ]
    lines = [f"### {result.name}: {result.title}", ""]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for row in result.rows:
        if not row.available:
            cells = [row.name, "-", f"not run: {row.unavailable_reason}"] + ["-"] * (len(head) - 3)
        else:
            spread = f"{_num(row.best_tps_min)} - {_num(row.best_tps_max)}"
            budget = str(row.budget)
            if row.trials_run and min(row.trials_run) < row.budget:
                budget += f" (ran {min(row.trials_run)})"
            cells = [
                row.name, budget, _num(row.best_tps_median), spread, _ratio(row.ratio_default),
                _ratio(row.ratio_smac), _trials(row), _ratio(row.ratio_ceiling),
                _num(row.wall_s_median, 1), str(row.failures),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for note in result.notes:
        lines.append(f"- {note}")
    for st in result.statuses:
        if st.unavailable is None:
            lines.append(f"- {st.name}: {st.note}")
        for err in st.errors:
            lines.append(f"- {st.name} stopped early, {err}")
    return "\n".join(lines) + "\n"


def write_json(results: Sequence[ScenarioResult], path: str | Path, meta: dict,
               skipped: Sequence[dict] = ()) -> None:
    """``{"meta", "scenarios": [{"name", "arms": [{"name", "budget", "best_tps_median",
    "best_tps_all", ...}], "trials": [...]}]}``; a scenario that could not run has
    ``"skipped": reason`` and no arms."""
    data = {
        "meta": meta,
        "scenarios": [r.to_dict() for r in results]
        + [{**s, "skipped": s["reason"], "arms": []} for s in skipped],
    }
    write_file_safely(path, json.dumps(data, indent=2, default=str) + "\n", backup=False)


def convergence_series(result: ScenarioResult) -> dict[str, list[tuple[float, float, float]]]:
    """Per searching arm: (median, min, max) over seeds of best-so-far after each trial."""
    series: dict[str, list[tuple[float, float, float]]] = {}
    for st in result.statuses:
        if not st.searching or st.unavailable:
            continue
        curves = []
        for seed in result.seeds:
            rs = [r for r in result.records if r.arm == st.name and r.seed == seed]
            curves.append(best_curve(rs))
        points = []
        for i in range(max((len(c) for c in curves), default=0)):
            vals = [c[min(i, len(c) - 1)] for c in curves if c]
            vals = [v for v in vals if v is not None]
            if vals:
                points.append((statistics.median(vals), min(vals), max(vals)))
            else:
                points.append((math.nan, math.nan, math.nan))
        series[st.name] = points
    return series


def plot_convergence(result: ScenarioResult, path: str | Path) -> str:
    """Best-so-far throughput per trial (median over seeds, min-max band); fixed arms as
    horizontal lines. matplotlib is imported here only (it is slow and optional)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(8, 5))
    for name, points in convergence_series(result).items():
        xs = list(range(1, len(points) + 1))
        med = [p[0] for p in points]
        (line,) = ax.plot(xs, med, marker="o", markersize=3, label=name)
        ax.fill_between(xs, [p[1] for p in points], [p[2] for p in points],
                        color=line.get_color(), alpha=0.15)
    styles = {"default": ":", "rules": "--", "ceiling": "-."}
    for row in result.rows:
        if not row.searching and row.available and row.best_tps_median is not None:
            ax.axhline(row.best_tps_median, linestyle=styles.get(row.name, ":"), color="grey",
                       label=f"{row.name} ({row.best_tps_median:,.0f})")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("trial")
    ax.set_ylabel("best throughput so far (tps, median over seeds)")
    ax.set_title(f"{result.name}\n{result.title}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    write_file_safely(path, buf.getvalue(), backup=False)
    plt.close(fig)
    return str(path)
