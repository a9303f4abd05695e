"""What the loaded data demands of every config: bounds no search point and no baseline leaves.

An in-memory engine's arena must hold the data (Tarantool's memtx_memory: a config whose arena
is smaller cannot even recover the golden copy), and a per-object allocation unit must not be
larger than the objects (memtx_min_tuple_size: 336 KiB per 1 KB tuple multiplies the memory by
300). The engine states these bounds from its workload and scale (``Engine.data_bounds``);
this module applies them alike to ``tune``'s space and to the benchmark's peers (through
``Limits``), gives a baseline whose defaults cannot hold the data the smallest change that
makes it feasible (said in every output), and refuses a scale that no config within the
memory budget can hold, before anything is loaded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pmem_advisor.errors import UsageError


@dataclass(frozen=True)
class DataBound:
    """A range the data imposes on one knob, in the knob's base unit (None: no bound)."""

    knob: str
    low: float | None = None
    high: float | None = None
    reason: str = ""

    def clamp(self, value: Any) -> Any:
        """``value`` moved the least distance into the bound (unchanged when inside)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return value
        if self.low is not None and value < self.low:
            return type(value)(math.ceil(self.low)) if isinstance(value, int) else self.low
        if self.high is not None and value > self.high:
            return type(value)(math.floor(self.high)) if isinstance(value, int) else self.high
        return value


def by_knob(bounds: Iterable[DataBound]) -> dict[str, DataBound]:
    """One bound per knob: several on one knob intersect (the largest low, smallest high)."""
    out: dict[str, DataBound] = {}
    for b in bounds:
        old = out.get(b.knob)
        if old is None:
            out[b.knob] = b
            continue
        lows = [x for x in (old.low, b.low) if x is not None]
        highs = [x for x in (old.high, b.high) if x is not None]
        out[b.knob] = DataBound(b.knob, max(lows) if lows else None,
                                min(highs) if highs else None,
                                "; ".join(r for r in (old.reason, b.reason) if r))
    return out


def check_catalog(bounds: Iterable[DataBound], specs: dict[str, Any], version: str,
                  flavour: str) -> None:
    """A bound the engine's version cannot take (beyond the knob's legal range, or a knob
    this version lacks) is a one-line UsageError naming the knob."""
    for b in bounds:
        spec = specs.get(b.knob)
        if spec is None:
            raise UsageError(f"knob {b.knob}: {flavour} {version} has no such setting, but "
                             f"the data needs it bounded ({b.reason})")
        lo, hi = getattr(spec, "min", None), getattr(spec, "max", None)
        if b.low is not None and hi is not None and b.low > hi:
            raise UsageError(f"knob {b.knob}: the data needs at least {b.low:,.0f}, more "
                             f"than {flavour} {version} accepts ({hi:,.0f}) ({b.reason})")
        if b.high is not None and lo is not None and b.high < lo:
            raise UsageError(f"knob {b.knob}: the data needs at most {b.high:,.0f}, less "
                             f"than {flavour} {version} accepts ({lo:,.0f}) ({b.reason})")


def baseline_fixes(bounds: Iterable[DataBound], defaults: dict[str, Any]
                   ) -> tuple[dict[str, Any], list[str]]:
    """(settings, notes): the smallest change that makes the server's defaults hold the
    data: each default outside its bound moved to the bound's edge, nothing else."""
    fixes: dict[str, Any] = {}
    notes: list[str] = []
    for b in by_knob(bounds).values():
        if b.knob not in defaults or defaults[b.knob] is None:
            continue
        value = defaults[b.knob]
        fixed = b.clamp(value)
        if fixed != value:
            fixes[b.knob] = fixed
            notes.append(f"defaults baseline: {b.knob} {_human(value)} -> {_human(fixed)} "
                         f"(the smallest change that makes the defaults feasible: "
                         f"{b.reason}); every other setting is the server's default")
    return fixes, notes


def largest_fitting_scale(fits: Callable[[int], bool], scale: int) -> int | None:
    """The largest scale below ``scale`` for which ``fits`` holds (monotone), None if not
    even scale 1 fits."""
    if not fits(1):
        return None
    lo, hi = 1, max(1, scale - 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _human(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 1 << 20:
        return f"{value / (1 << 20):,.0f} MiB"
    return f"{value:g}" if isinstance(value, float) else str(value)


def highest_allowed(spec: Any, limits: Any, rule_bound: Any = None) -> float | None:
    """The largest value a search space lets ``spec`` reach: the catalog's maximum, under
    the budget's cap (``Limits.cap``), under the rules' upper bound when they give one."""
    highs = [getattr(spec, "max", None), limits.cap(spec)]
    if isinstance(rule_bound, tuple) and len(rule_bound) == 2:
        highs.append(rule_bound[1])
    highs = [float(h) for h in highs if isinstance(h, (int, float)) and not isinstance(h, bool)]
    return min(highs) if highs else None


def refuse_unfit_scale(bounds_at: Callable[[int], list[DataBound]], scale: int,
                       specs: dict[str, Any], limits: Any, rule_bounds: dict[str, Any],
                       *, workload: str, budget: str) -> None:
    """UsageError (exit 2) before anything is loaded when the data at ``scale`` needs more of
    a knob than the budget lets it have, naming the largest scale that fits."""

    def unfit(s: int) -> tuple[DataBound, float] | None:
        for b in bounds_at(s):
            spec = specs.get(b.knob)
            if spec is None or b.low is None:
                continue
            high = highest_allowed(spec, limits, rule_bounds.get(b.knob))
            if high is not None and b.low > high:
                return b, high
        return None

    worst = unfit(scale)
    if worst is None:
        return
    bound, high = worst
    fit = largest_fitting_scale(lambda s: unfit(s) is None, scale)
    advice = (f"use --scale {fit} or less, or a larger --memory" if fit else
              "no scale fits: give a larger --memory")
    raise UsageError(f"{workload} scale {scale} cannot fit the {budget} memory budget: "
                     f"{bound.knob} must be at least {_human(bound.low)} ({bound.reason}), "
                     f"the budget allows at most {_human(high)}; {advice}")
