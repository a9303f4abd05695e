"""Fit a recommendation's worst-case memory (rules/memory.py) into the RAM budget.

The rules size each knob on its own (pgtune's work_mem, the DAX rule's larger shared_buffers,
the dedicated-server buffer pool); together they can commit more than the machine (or the NUMA
node the server is bound to) has. This last step re-derives the per-connection memory from
the final global settings, so a config never exceeds its budget in the worst case:

- PostgreSQL: work_mem becomes the largest value whose worst case fits (it scales with every
  connection and parallel worker). Below pgtune's 4 MB floor, when the user gave no --clients,
  work_mem stays at 4 MB and max_connections drops to what the budget holds; otherwise (or
  below MIN_CONNECTIONS) the note says to pool connections.
- MySQL/MariaDB: the per-connection buffers (sort, join, read, read_rnd, in-memory temporary
  tables) are scaled down together, at most to a quarter of their value; then the buffer pool
  gives up the rest.
Every changed line says what it was and why it changed.
"""

from __future__ import annotations

from pmem_advisor.engines import api
from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.rules.memory import (
    BUDGET_SHARE,
    KB,
    MB,
    MemoryEstimate,
    gib,
    mib,
    pg_work_mem_to_fit,
    worst_case,
)
from pmem_advisor.rules.model import Bytes
from pmem_advisor.rules.result import Recommendation, RecommendedSetting

RULE = "MEM-FIT"
SOURCE = "worst-case memory (rules/memory.py)"
# MySQL per-connection buffers we may shrink, and the part of the estimate each one feeds.
MY_SCALABLE = {"sort_buffer_size": "sort_buffer_size", "join_buffer_size": "join_buffer_size",
               "read_buffer_size": "read_buffer_size",
               "read_rnd_buffer_size": "read_rnd_buffer_size",
               "tmp_table_size": "tmp tables", "max_heap_table_size": "tmp tables"}
PG_WORK_MEM_FLOOR = 4 * MB  # pgtune's floor: below it ordinary sorts and hashes spill to disk
MIN_CONNECTIONS = 20  # fewer is no longer a server for an application: say pool instead
MIN_SCALE = 0.25  # below a quarter of the defaults queries spill to disk for ordinary sorts
POOL_CHUNK = 128 * MB  # InnoDB rounds the pool to chunk x instances; 128 MB is the default chunk


def estimate(rec: Recommendation, view) -> MemoryEstimate:
    f = rec.facts
    host = int((f.profile.get("memory") or {}).get("total_bytes") or 0) or None
    return worst_case(f.engine, {s.name: s.value for s in rec.settings}, flavour=f.flavour,
                      version=f.version, catalog=view.catalog, host_memory_bytes=host)


def fitted_budget(budget: int) -> int:
    """The part of the budget the worst case may take (BUDGET_SHARE, see rules/memory.py)."""
    return int(budget * BUDGET_SHARE)


def fit_memory(rec: Recommendation, view) -> MemoryEstimate | None:
    """Lower per-connection memory (then MySQL's pool) until the worst case fits BUDGET_SHARE
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


def fit_mysql(rec: Recommendation, view, budget: int) -> None:
    """MySQL/MariaDB: scale the per-connection buffers down together, then the pool."""
    est = estimate(rec, view)
    if est.total_bytes > budget:
        _scale_mysql_buffers(rec, view, est, budget)
        est = estimate(rec, view)
    if est.total_bytes > budget:
        _shrink_pool(rec, view, est, budget)


def fit_postgres(rec: Recommendation, view, budget: int) -> None:
    f = rec.facts
    settings = {s.name: s.value for s in rec.settings}
    fit = pg_work_mem_to_fit(budget, settings, version=f.version, catalog=view.catalog)
    current = rec.setting("work_mem")
    have = int(current.value) * KB if current is not None else None
    if have is not None and have <= fit:
        return
    before = estimate(rec, view)
    if fit < PG_WORK_MEM_FLOOR and not f.clients and _pg_fewer_connections(rec, view, budget,
                                                                          before):
        return
    put_setting(rec, view, "work_mem", Bytes(fit),
         f"lowered from {current.text if current else 'the default'} so the worst case fits: "
         f"{before.describe()} would exceed the {gib(budget)} budget")


def _pg_fewer_connections(rec: Recommendation, view, budget: int,
                          before: MemoryEstimate) -> bool:
    """work_mem at pgtune's 4 MB floor and max_connections lowered to what the budget holds
    there (only when the user gave no --clients: the connection count is then ours to pick).
    False when not even MIN_CONNECTIONS fit (the caller falls back to a smaller work_mem)."""
    settings = {s.name: s.value for s in rec.settings}
    settings["work_mem"] = Bytes(PG_WORK_MEM_FLOOR)
    settings["max_connections"] = 1  # global_bytes does not depend on it
    est = worst_case("postgres", settings, version=rec.facts.version, catalog=view.catalog)
    conns = (budget - est.global_bytes) // max(1, est.per_connection_bytes)
    if conns < MIN_CONNECTIONS:
        return False
    was = rec.setting("max_connections")
    put_setting(rec, view, "work_mem", Bytes(PG_WORK_MEM_FLOOR),
         f"set to pgtune's 4MB floor (less spills every sort and hash to disk): "
         f"{before.describe()} would exceed the {gib(budget)} budget")
    put_setting(rec, view, "max_connections", int(conns),
         f"lowered from {was.text if was else 'the default'} to what the {gib(budget)} budget "
         f"holds at work_mem 4MB ({mib(est.per_connection_bytes)} per connection); pass "
         "--clients to size it yourself, pool connections (pgbouncer) above it")
    return True


def _scale_mysql_buffers(rec: Recommendation, view, est: MemoryEstimate, budget: int) -> None:
    parts = {p.name: p.bytes for p in est.parts if p.per_connection}
    scalable = sum(parts.get(part, 0) for part in set(MY_SCALABLE.values()))
    fixed = est.per_connection_bytes - scalable
    allowed = (budget - est.global_bytes) // max(1, est.connections)
    if scalable <= 0:
        return
    factor = max(MIN_SCALE, min(1.0, (allowed - fixed) / scalable))
    if factor >= 1.0:
        return
    for knob, part in MY_SCALABLE.items():
        base = parts.get(part)
        if base is None:
            continue
        if knob == "max_heap_table_size" and part not in parts:
            continue
        new = max(16 * KB, int(base * factor) // KB * KB)
        put_setting(rec, view, knob, Bytes(new),
             f"scaled to {factor:.0%} with the other per-connection buffers so "
             f"{est.connections} connections fit the {gib(budget)} budget "
             f"(worst case was {gib(est.total_bytes)})")


def _shrink_pool(rec: Recommendation, view, est: MemoryEstimate, budget: int) -> None:
    pool_part = next(p.bytes for p in est.parts if p.name == "innodb_buffer_pool_size")
    overhead = 1.1  # the pool plus InnoDB's ~10% control structures (see rules/memory.py)
    rest = est.total_bytes - int(pool_part * overhead)
    new = int((budget - rest) / overhead) // POOL_CHUNK * POOL_CHUNK
    new = max(POOL_CHUNK, new)
    put_setting(rec, view, "innodb_buffer_pool_size", Bytes(new),
         f"lowered from {gib(pool_part)} so the worst case ({gib(est.total_bytes)} with "
         f"{est.connections} connections) fits the {gib(budget)} budget")


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
