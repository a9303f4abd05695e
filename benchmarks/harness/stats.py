"""The figures per scenario, arm and budget, computed the same way for every arm.

"Best throughput" of an arm after t trials: over the distinct configs it measured in its
first t trials, the one with the highest *median* of its measurements (a failure counts as 0);
on a surrogate server the arm is credited with that config's noise-free value.
A config measured twice is never credited with its luckier run, whichever arm measured it.
Budgets below the largest are prefixes of the same runs, not separate runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .arms import objective
from .runner import ArmStatus, TrialRecord
from .space import config_key

TARGET_FRACTION = 0.95  # "trials to reach 95% of SMAC's best"


def best_curve(records: Sequence[TrialRecord]) -> list[float | None]:
    """Best-so-far after each trial of one arm in one seed (records in trial order)."""
    groups: dict[str, list[float]] = {}
    truth: dict[str, float] = {}  # a surrogate's noise-free value of the config, if known
    ok: set[str] = set()
    curve: list[float | None] = []
    best: float | None = None
    for r in sorted(records, key=lambda r: r.index):
        key = config_key(r.config)
        groups.setdefault(key, []).append(objective(r.measurement))
        expected = (r.measurement.raw or {}).get("expected")
        if expected is not None:
            truth[key] = float(expected)
        if r.measurement.ok:
            ok.add(key)
        if key in ok:
            # The median of this config may drop with a repeat: recompute over all configs.
            # The arm picks by what it observed; it is credited with what that config is worth.
            pick = max(ok, key=lambda k: statistics.median(groups[k]))
            best = truth.get(pick, statistics.median(groups[pick]))
        curve.append(best)
    return curve


def trials_to_reach(curve: Sequence[float | None], target: float) -> int | None:
    for i, value in enumerate(curve, start=1):
        if value is not None and value >= target:
            return i
    return None


@dataclass
class ArmStats:
    name: str
    budget: int
    searching: bool
    note: str = ""
    available: bool = True
    unavailable_reason: str | None = None
    errors: list[str] = field(default_factory=list)
    trials_run: list[int] = field(default_factory=list)  # per seed (may be < budget)
    failures: int = 0
    best_tps_all: list[float | None] = field(default_factory=list)  # per seed
    best_tps_median: float | None = None
    best_tps_min: float | None = None
    best_tps_max: float | None = None
    ratio_default: float | None = None
    ratio_smac: float | None = None  # against SMAC at the same budget
    trials_to_95_smac_all: list[int | None] = field(default_factory=list)
    trials_to_95_smac: float | None = None  # median over seeds; inf = not reached by all
    ratio_ceiling: float | None = None
    wall_s_all: list[float] = field(default_factory=list)
    wall_s_median: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["trials_to_95_smac"] is not None and math.isinf(d["trials_to_95_smac"]):
            d["trials_to_95_smac"] = None  # JSON has no inf; the _all list says which seeds
        return d


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _median_or_none(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def compute(
    records: Sequence[TrialRecord],
    statuses: Sequence[ArmStatus],
    budgets: Sequence[int],
    seeds: Sequence[int],
) -> list[ArmStats]:
    """One ``ArmStats`` per searching arm and budget, one per fixed arm (budget 1)."""
    by_arm_seed: dict[tuple[str, int], list[TrialRecord]] = {}
    for r in records:
        by_arm_seed.setdefault((r.arm, r.seed), []).append(r)

    rows: list[ArmStats] = []
    curves: dict[tuple[str, int], list[float | None]] = {}
    for st in statuses:
        row_budgets = [b for b in budgets if b <= st.budget] if st.searching else [1]
        for budget in row_budgets:
            row = ArmStats(st.name, budget, st.searching, st.note, st.unavailable is None,
                           st.unavailable, list(st.errors))
            rows.append(row)
            if not row.available:
                continue
            for seed in seeds:
                rs = sorted(by_arm_seed.get((st.name, seed), []), key=lambda r: r.index)
                curve = curves.setdefault((st.name, seed), best_curve(rs))
                prefix = rs[:budget]
                row.trials_run.append(len(prefix))
                row.failures += sum(1 for r in prefix if not r.measurement.ok)
                row.best_tps_all.append(curve[len(prefix) - 1] if prefix else None)
                row.wall_s_all.append(round(sum(r.wall_s for r in prefix), 3))
            present = [v for v in row.best_tps_all if v is not None]
            if present:
                row.best_tps_median = statistics.median(present)
                row.best_tps_min, row.best_tps_max = min(present), max(present)
            row.wall_s_median = _median_or_none(row.wall_s_all)

    def lookup(name: str, budget: int | None = None) -> ArmStats | None:
        cands = [r for r in rows if r.name == name and r.available]
        if budget is not None:
            cands = [r for r in cands if r.budget == budget]
        return max(cands, key=lambda r: r.budget) if cands else None

    default, ceiling = lookup("default"), lookup("ceiling")
    smac_max = lookup("smac")
    target = (
        TARGET_FRACTION * smac_max.best_tps_median
        if smac_max and smac_max.best_tps_median
        else None
    )
    for row in rows:
        if not row.available:
            continue
        row.ratio_default = _ratio(row.best_tps_median, default and default.best_tps_median)
        row.ratio_ceiling = _ratio(row.best_tps_median, ceiling and ceiling.best_tps_median)
        smac = lookup("smac", row.budget) if row.searching else None
        row.ratio_smac = _ratio(row.best_tps_median, smac and smac.best_tps_median)
        if target is not None:
            for seed in seeds:
                curve = curves.get((row.name, seed), [])[: row.budget]
                row.trials_to_95_smac_all.append(trials_to_reach(curve, target))
            reached = [math.inf if t is None else t for t in row.trials_to_95_smac_all]
            row.trials_to_95_smac = statistics.median(reached) if reached else None
    return rows


def smac_target_budget(rows: Sequence[ArmStats]) -> int | None:
    """The SMAC budget the "trials to 95%" column refers to (its largest run)."""
    budgets = [r.budget for r in rows if r.name == "smac" and r.available]
    return max(budgets) if budgets else None
