"""Fit a recommendation's worst-case memory (rules/memory.py) into the RAM budget.

The rules size each knob on its own (pgtune's work_mem, the DAX rule's larger buffer pool, the
dedicated-server cache); together they can commit more than the machine (or the NUMA node the
server is bound to) has. This last step asks the engine (``Engine.fit_memory``, in its
package) to re-derive its memory settings from the final global ones, so a config never
exceeds its budget in the worst case. Every changed line says what it was and why it changed
(``put_setting``); a budget nothing fits is the caller's to refuse (rules/budget_search.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pmem_advisor.engines import api
from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.rules.memory import BUDGET_SHARE, MemoryEstimate, gib, worst_case
from pmem_advisor.rules.result import Recommendation, RecommendedSetting

RULE = "MEM-FIT"
SOURCE = "worst-case memory (rules/memory.py)"


def estimate(rec: Recommendation, view) -> MemoryEstimate:
    f = rec.facts
    host = int((f.profile.get("memory") or {}).get("total_bytes") or 0) or None
    return worst_case(f.engine, {s.name: s.value for s in rec.settings}, flavour=f.flavour,
                      version=f.version, catalog=view.catalog, host_memory_bytes=host,
                      files_in_memory=f.data_in_memory, host_cpus=f.cpus)


def fitted_budget(budget: int) -> int:
    """The part of the budget the worst case may take (BUDGET_SHARE, see rules/memory.py)."""
    return int(budget * BUDGET_SHARE)


def fit_memory(rec: Recommendation, view) -> MemoryEstimate | None:
    """Lower per-connection memory (then a buffer pool) until the worst case fits BUDGET_SHARE
    of the budget. Each engine fits its own (``Engine.fit_memory``); None: the engine has no
    memory model."""
    budget = fitted_budget(rec.facts.memory_bytes)
    engine = api.get_engine(rec.facts.engine)
    engine.fit_memory(rec, view, budget)
    if engine.kind == "advice" and estimate(rec, view) is None:
        return None  # nothing is sized here: the findings say what to set
    est = estimate(rec, view)
    if est is None:
        rec.notes.append(f"worst-case memory: pmem-advisor has no memory model for "
                         f"{rec.facts.engine}; size its memory settings to the budget yourself")
        return None
    if est.total_bytes > budget:
        rec.notes.append(f"the worst case ({gib(est.total_bytes)}) still exceeds the "
                         f"{gib(budget)} budget at the smallest per-connection memory: lower "
                         "max_connections and pool connections (pgbouncer / a thread pool)")
    return est


def largest_fitting(fits: Callable[[Any], bool], low: Any, high: Any) -> Any:
    """The largest value from ``low`` (which fits) to ``high`` that ``fits``, by bisection
    (what fits is everything below some value: memory grows with the knob): the largest whole
    one for an int ``high``, within 1/10,000 of ``high`` for a real one."""
    whole = isinstance(high, int)
    good, bad = low, high
    while bad - good > (1 if whole else abs(bad) * 1e-4):
        mid = (good + bad) // 2 if whole else (good + bad) / 2
        good, bad = (mid, bad) if fits(mid) else (good, mid)
    return good


def fit_bounds(rec: Recommendation, view) -> None:
    """Lower each numeric bound whose top would not fit: the largest value of that knob whose
    worst case, beside the recommendation's other settings, stays within the budget. A search
    bound above it only offers configs ``tune``'s memory gate (the whole budget, worst case)
    refuses to run; the PMEM and dedicated-server rules bound a buffer by its share of the
    budget (75% for InnoDB's pool) without the connections' worst case beside it."""
    f = rec.facts
    budget = f.memory_bytes
    settings = {s.name: s.value for s in rec.settings}
    host = int((f.profile.get("memory") or {}).get("total_bytes") or 0) or None

    def total(name: str, value: float) -> int | None:
        est = worst_case(f.engine, {**settings, name: value}, flavour=f.flavour,
                         version=f.version, catalog=view.catalog, host_memory_bytes=host,
                         files_in_memory=f.data_in_memory, host_cpus=f.cpus)
        return None if est is None else est.total_bytes

    for name, bound in list(rec.bounds.items()):
        if not isinstance(bound, tuple) or len(bound) != 2 or bound[1] is None:
            continue
        lo, hi = bound
        fitted = settings.get(name)
        if lo is not None and isinstance(fitted, int | float) and fitted < lo:
            # the pool fitted below a rule's floor: the rules' own config stays in the search
            lo = fitted
            rec.bounds[name] = (lo, max(hi, lo))
        at_top, at_bottom = total(name, hi), total(name, lo if lo is not None else 0)
        if at_top is None or at_top <= budget or at_top == at_bottom:
            continue  # fits, no model, or a knob the worst case does not count
        floor = settings.get(name, lo)
        if not isinstance(floor, int | float) or total(name, floor) > budget:
            continue  # the rules' own value does not fit: fit_memory's note says so
        top = largest_fitting(lambda v, n=name: total(n, v) <= budget, floor, hi)
        rec.bounds[name] = (lo, max(top, lo) if lo is not None else top)
        rec.notes.append(f"search bound {name}: at most {_readable(view, name, top)}, not "
                         f"{_readable(view, name, hi)}: the worst case above it exceeds the "
                         f"{gib(budget)} budget ({RULE})")


def _readable(view, name: str, value: Any) -> str:
    """A size as a person reads it (561MB, not 589161193); anything else as the config has it."""
    from pmem_advisor.knobs.units import size_bytes
    from pmem_advisor.rules.model import human_bytes

    try:
        knob = view.catalog.get(name) if view.catalog is not None else None
    except UnknownKnobError:
        knob = None
    n = size_bytes(knob, value)
    return human_bytes(n) if n is not None else view.render(name, value)


def put_setting(rec: Recommendation, view, name: str, value, why: str) -> None:
    """Change (or add) one setting, keeping the earlier reason in front of the new one."""
    try:
        base = view.to_base(name, value)
    except (UnknownKnobError, UsageError):  # a knob this flavour/version lacks
        return
    text = view.render(name, base)
    s = rec.setting(name)
    if s is None:
        rec.settings.append(RecommendedSetting(name, base, text, view.default(name), RULE, [],
                                               why, SOURCE, 0))
        rec.settings.sort(key=lambda x: x.name)
        return
    s.reason = f"{s.reason}; {why} ({RULE})"
    s.value, s.text = base, text
    if name in rec.priors:  # the rules-only trial starts from the fitted value, not the unfit one
        rec.priors[name] = base
