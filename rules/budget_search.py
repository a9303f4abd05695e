"""Budgets and connection counts a recommendation fits, found by asking the rules again.

A budget nothing fits is refused by ``recommend`` (exit 2) with two ways out, both found by
re-running the whole recommendation (its global buffers grow with the budget, its
per-connection memory with the clients): the smallest budget that fits the same connections,
and the most clients the given budget holds.
"""

from __future__ import annotations

from dataclasses import replace

from pmem_advisor.rules.combine import recommend
from pmem_advisor.rules.fit import fitted_budget
from pmem_advisor.rules.memory import BUDGET_SHARE, MB


def smallest_fitting_budget(facts, *, catalog=None, limit: int = 1 << 52) -> int | None:
    """The smallest memory budget (bytes, a multiple of 64 MiB) whose recommendation fits its
    worst case, with the same connections and everything else as ``facts``; None above
    ``limit``. The recommendation's global buffers grow with the budget (shared_buffers is a
    quarter of it), so the candidate is raised until it holds."""
    step = 64 * MB
    budget = max(step, facts.memory_bytes)
    while budget <= limit:
        rec = recommend(replace(facts, memory_bytes=budget), catalog=catalog)
        if rec.memory is None or rec.memory.total_bytes <= fitted_budget(budget):
            return budget
        need = int(rec.memory.total_bytes / BUDGET_SHARE)
        budget = max(budget + step, -(-need // step) * step)
    return None


def most_clients_that_fit(facts, *, catalog=None) -> int | None:
    """The most --clients whose recommendation fits the budget of ``facts`` (None: not even
    one). Connections only ever add memory, so a bisection finds it."""
    def fits(clients: int) -> bool:
        rec = recommend(replace(facts, clients=clients), catalog=catalog)
        return rec.memory is None or rec.memory.total_bytes <= fitted_budget(facts.memory_bytes)

    if not fits(1):
        return None
    lo, hi = 1, max(2, facts.clients or 1000)
    while fits(hi) and hi < 1 << 20:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo
