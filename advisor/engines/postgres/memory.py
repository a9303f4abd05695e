"""PostgreSQL's worst-case memory and its fit into the RAM budget (``Engine.memory`` and
``Engine.fit_memory``; the estimate's shape and the budget share are rules/memory.py's).

The worst case: global buffers + per-connection memory x max_connections + background
workers. The assumptions that are choices, not manual facts, are module constants:

- ``SORT_NODES``/``HASH_NODES``: a query runs 2 sort nodes and 1 hash node at once. Plans
  with a hash join under an ORDER BY plus a GROUP BY are ordinary; 3 nodes per connection is
  also pgtune's divisor for work_mem, so a pgtune-sized config is judged by the same yardstick.
  Hash nodes may use work_mem x hash_mem_multiplier (PostgreSQL 13+, default 2.0 since 15).
  Deeper plans can use more: that is stated in the output, not hidden.

Not counted (small or not bounded by a knob): the per-backend catalog/plan caches, lock tables
and other fixed shared memory. The output says so in ``assumptions``.

The fit: work_mem becomes the largest value whose worst case fits (it scales with every
connection and parallel worker). Below the server's default (4 MB, also pgtune's floor), when
the user gave no --clients, work_mem stays there and max_connections drops to what the budget
holds; with --clients shared_buffers gives first, down to its own default (128 MB), and only
then work_mem goes below 4 MB (the note says to pool connections). Sorts below the default
spill to disk, while a smaller shared_buffers only caches less: the pool gives first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pmem_advisor.knobs import units
from pmem_advisor.knobs.version import parse_version
from pmem_advisor.rules.fit import estimate, put_setting
from pmem_advisor.rules.memory import (
    GB,
    KB,
    MB,
    KnobReader,
    MemoryEstimate,
    MemoryPart,
    gib,
    mib,
    worst_case,
)
from pmem_advisor.rules.model import Bytes
from pmem_advisor.rules.result import Recommendation

ENGINE = "postgres"
SORT_NODES = 2  # ORDER BY + GROUP BY/DISTINCT sorts in one plan (see the module docstring)
HASH_NODES = 1  # one hash join or hash aggregate; with 2 sorts: pgtune's 3 nodes per connection

# Before PostgreSQL 17, VACUUM stored at most 1 GB of dead-tuple ids whatever
# maintenance_work_mem/autovacuum_work_mem said; 17's TidStore uses the whole setting.
PG_VACUUM_CAP_BEFORE_17 = 1 * GB

ASSUMPTIONS = (f"each connection runs one query with {SORT_NODES} sorts and {HASH_NODES} "
               "hash node(s) at once (pgtune's 3 work_mem nodes); deeper plans use more",
               "not counted: per-backend catalog/plan caches and fixed shared memory "
               "(lock tables, a few MB)")

PG_WORK_MEM_FLOOR = 4 * MB  # pgtune's floor: below it ordinary sorts and hashes spill to disk
MIN_CONNECTIONS = 20  # fewer is no longer a server for an application: say pool instead
PG_POOL_FLOOR = 128 * MB  # shared_buffers' default: the pool gives to work_mem down to here


# ------------------------------------------------------------------ the estimate
def postgres_worst_case(settings: Mapping[str, Any], *, flavour: str, version: str | None,
                        catalog) -> MemoryEstimate:
    """Global buffers + per-connection buffers x max_connections + background workers (see
    ASSUMPTIONS); knobs not given take the catalog's default for ``version``."""
    r = KnobReader(flavour, version, settings, catalog,
                   fallback=lambda name: _fallback_default(version, name),
                   parse_loose=_parse_loose)
    parts = _parts(r)
    return MemoryEstimate.from_parts(ENGINE, parts, int(r.value("max_connections")), ASSUMPTIONS)


def _fallback_default(version: str | None, name: str) -> float:
    """Defaults of knobs the catalogs do not list, from the manual."""
    if name == "hash_mem_multiplier":  # 1.0 in 13-14, 2.0 since 15
        v = parse_version(version, pad=True) if version else (99,)
        return 1.0 if v < (15,) else 2.0
    return 0.0


def _parse_loose(text: str) -> float | None:
    """Text for a knob the catalog lacks, with PostgreSQL's units (sizes in bytes)."""
    parsed = units.pg_number(text)
    if parsed is None:
        return None
    return units.pg_to_base(parsed[0], parsed[1], "B") if parsed[1] else parsed[0]


def pg_query_memory(work_mem: int, hash_mem_multiplier: float) -> int:
    """Memory one PostgreSQL query may take in sort/hash nodes (see SORT_NODES/HASH_NODES)."""
    return int(work_mem * (SORT_NODES + HASH_NODES * hash_mem_multiplier))


def _parts(r: KnobReader) -> list[MemoryPart]:
    v = parse_version(r.version, pad=True) if r.version else (99,)
    shared = int(r.value("shared_buffers"))
    wal = int(r.value("wal_buffers"))
    if wal < 0:  # -1: 1/32 of shared_buffers, at least 64 kB, at most one 16 MB WAL segment
        wal = min(max(shared // 32, 64 * KB), 16 * MB)
    work_mem = int(r.value("work_mem"))
    hmm = r.value("hash_mem_multiplier") if v >= (13,) else 1.0
    query = pg_query_memory(work_mem, hmm)
    temp = int(r.value("temp_buffers"))
    maint = int(r.value("maintenance_work_mem"))
    av_raw = int(r.value("autovacuum_work_mem")) if r.has("autovacuum_work_mem") else -1
    av = maint if av_raw < 0 else av_raw
    av_why = ("autovacuum_work_mem" if av_raw >= 0 else "maintenance_work_mem (autovacuum_work_mem"
              " = -1)")
    if v < (17,):
        av = min(av, PG_VACUUM_CAP_BEFORE_17)
        av_why += ", of which VACUUM uses at most 1 GB before PostgreSQL 17"
    else:
        av_why += "; PostgreSQL 17+ uses all of it (no 1 GB dead-tuple cap)"
    workers = int(r.value("autovacuum_max_workers"))
    par = int(min(r.value("max_parallel_workers"), r.value("max_worker_processes")))
    return [
        MemoryPart("shared_buffers", shared, False, "shared buffer cache, allocated at start"),
        MemoryPart("wal_buffers", wal, False, "WAL buffers in shared memory (-1: shared/32, "
                   "64 kB..16 MB)"),
        MemoryPart("maintenance_work_mem", maint, False,
                   "one manual VACUUM/CREATE INDEX at a time (parallel index builds share it)",
                   static=False),
        MemoryPart("background:autovacuum", workers * av, False,
                   f"autovacuum_max_workers={workers} x {av_why}"),
        MemoryPart("background:parallel workers", par * query, False,
                   f"max_parallel_workers={par} processes, each running the query's "
                   f"{SORT_NODES} sorts + {HASH_NODES} hash node(s)"),
        MemoryPart("work_mem", query, True,
                   f"work_mem x ({SORT_NODES} sorts + {HASH_NODES} hash x hash_mem_multiplier "
                   f"{hmm:g}) per query"),
        MemoryPart("temp_buffers", temp, True, "session-local buffers for temporary tables"),
    ]


def pg_work_mem_to_fit(budget_bytes: int, settings: Mapping[str, Any], *,
                       version: str | None = None, catalog=None, floor: int = 64 * KB) -> int:
    """The largest work_mem (bytes, whole kB) that keeps PostgreSQL's worst case within the
    budget, given the other settings; at least ``floor`` (the server's minimum, 64 kB)."""
    probe = dict(settings)
    probe["work_mem"] = Bytes(64 * KB)
    est = worst_case(ENGINE, probe, version=version, catalog=catalog)
    fixed = est.total_bytes - _work_mem_bytes(est)
    per_unit = _work_mem_bytes(est) / (64 * KB)  # bytes of worst case per byte of work_mem
    room = budget_bytes - fixed
    if room <= 0 or per_unit <= 0:
        return floor
    return max(floor, int(room / per_unit) // KB * KB)


def _work_mem_bytes(est: MemoryEstimate) -> int:
    """The part of the worst case that scales with work_mem."""
    out = 0
    for p in est.parts:
        if p.name == "work_mem":
            out += p.bytes * est.connections
        elif p.name == "background:parallel workers":
            out += p.bytes
    return out


# ------------------------------------------------------------------ the fit
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
    if fit < PG_WORK_MEM_FLOOR and _pg_shrink_pool(rec, view, budget, before):
        return
    if rec.setting("shared_buffers") is not None:  # the pool may have given some: fit again
        settings = {s.name: s.value for s in rec.settings}
        fit = pg_work_mem_to_fit(budget, settings, version=f.version, catalog=view.catalog)
    put_setting(rec, view, "work_mem", Bytes(fit),
         f"lowered from {current.text if current else 'the default'} so the worst case fits: "
         f"{before.describe()} would exceed the {gib(budget)} budget")


def _pg_shrink_pool(rec: Recommendation, view, budget: int, before: MemoryEstimate) -> bool:
    """shared_buffers gives what work_mem at the server's default (4 MB) needs, down to its own
    default (PG_POOL_FLOOR). True when that fits (work_mem is set to 4 MB); False: the pool
    went as low as it may and work_mem must go below its default."""
    pool = rec.setting("shared_buffers")
    if pool is None:
        return False
    settings = {s.name: s.value for s in rec.settings}
    settings["work_mem"] = Bytes(PG_WORK_MEM_FLOOR)
    est = worst_case(ENGINE, settings, version=rec.facts.version, catalog=view.catalog)
    have = next(p.bytes for p in est.parts if p.name == "shared_buffers")
    floor = min(have, PG_POOL_FLOOR)
    want = have - (est.total_bytes - budget)
    new = max(floor, want // MB * MB)
    if new < have:
        put_setting(rec, view, "shared_buffers", Bytes(new),
             f"lowered from {pool.text} so work_mem keeps the server's 4MB default and "
             f"{est.connections} connections fit the {gib(budget)} budget (a smaller cache "
             "costs less than sorts spilling to disk)")
    if want < floor:
        return False
    put_setting(rec, view, "work_mem", Bytes(PG_WORK_MEM_FLOOR),
         f"the server's default: {before.describe()} would exceed the {gib(budget)} budget; "
         "shared_buffers gave the rest")
    return True


def _pg_fewer_connections(rec: Recommendation, view, budget: int,
                          before: MemoryEstimate) -> bool:
    """work_mem at pgtune's 4 MB floor and max_connections lowered to what the budget holds
    there (only when the user gave no --clients: the connection count is then ours to pick).
    False when not even MIN_CONNECTIONS fit (the caller falls back to a smaller work_mem)."""
    settings = {s.name: s.value for s in rec.settings}
    settings["work_mem"] = Bytes(PG_WORK_MEM_FLOOR)
    settings["max_connections"] = 1  # global_bytes does not depend on it
    est = worst_case(ENGINE, settings, version=rec.facts.version, catalog=view.catalog)
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
