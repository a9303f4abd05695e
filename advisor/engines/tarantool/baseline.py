"""Tarantool baseline for a dedicated server: memtx holds every tuple and index in RAM, so its
arena is sized from the RAM budget, worst case accounted (``TarantoolEngine.memory``). When the
data is in vinyl (``Facts.storage_engine``), the budget goes to vinyl's tuple cache instead.

memtx_memory is a hard quota: data beyond it fails to insert ("Failed to allocate"), so it
must hold the data set; what it may take is what the budget leaves after the vinyl quotas, the
process itself and every connection's buffers. Durability: wal_mode = 'fsync', because
Tarantool's own default 'write' does not survive a power loss (2.6 manual, see the catalog's
safety_reason). The PMEM rules of ``rules/catalog`` (PM070-PM079) adjust the placement.
"""

from __future__ import annotations

from typing import Any

from pmem_advisor.rules.facts import Facts
from pmem_advisor.rules.fit import put_setting
from pmem_advisor.rules.memory import gib
from pmem_advisor.rules.model import PRIORITY_BASELINE, Bound, Bytes, Rule, Set, human_bytes

MB, GB = 1 << 20, 1 << 30
ARENA_STEP = 64 * MB  # whole 64 MB steps read better and change nothing that matters
MIN_ARENA = 256 * MB  # Tarantool's default: a budget too small to beat it keeps it
CONNECTIONS = {"oltp": 100, "olap": 16, "mixed": 50, "kv": 100}
SHARE = 0.75  # of the budget for memtx; the rest: OS, page cache for xlog/snap, vinyl, runtime

RUNTIME_BYTES = 64 * MB
MANUAL = "https://www.tarantool.io/en/doc/2.6/book/box/engines/vinyl/"

# Data in vinyl (Tarantool 2.6 manual, "Storing data with vinyl" and the box.cfg reference):
# memtx then holds only the system spaces; vinyl_memory is L0, the in-memory level every write
# enters (a full L0 is dumped to a run file, and writes wait while it is); vinyl_cache keeps
# recently read tuples. A read the tuple cache misses looks the key up in the run files'
# page indexes and bloom filters and reads a whole vinyl_page_size page (8 KB) through a
# vinyl read thread and the OS page cache; the page cache also holds the 7 cold records
# beside each hot one, so a budget's memory holds several times more hot tuples as tuples.
VINYL_MEMTX = 64 * MB  # system spaces and small lookup spaces; 32 MB is 2.6's minimum
VINYL_DEFAULT = 128 * MB  # 2.6's default of vinyl_memory and vinyl_cache
VINYL_STEP = 16 * MB


# An arena that holds data_bytes of tuples and indexes: slab classes round each tuple up (by
# up to slab_alloc_factor, 1.05) and fill 4 MB slabs per class; replaced tuples stay while a
# checkpoint's read view holds them; the system spaces and the schema need a few MB.
# Measured on 2.6.0: 100,000 YCSB records take 110 MB of arena (1,103 B each, index included).
ARENA_SLACK = 1.2
ARENA_BASE = 64 * MB


def arena_for_data(data_bytes: int) -> int:
    """The smallest memtx_memory (a whole number of 64 MB steps) that holds the data."""
    need = int(data_bytes * ARENA_SLACK) + ARENA_BASE
    return -(-need // ARENA_STEP) * ARENA_STEP


def connections(f: Facts) -> int:
    return f.clients + 10 if f.clients else CONNECTIONS.get(f.workload, 100)


def memtx_memory(f: Facts) -> int:
    """3/4 of the budget less the other quotas and the connections' buffers (rounded down)."""
    others = 2 * 128 * MB + RUNTIME_BYTES + connections(f) * 2 * 16320
    arena = int(f.memory_bytes * SHARE) - others
    return max(MIN_ARENA, arena // ARENA_STEP * ARENA_STEP)


def in_vinyl(f: Facts) -> bool:
    return f.storage_engine == "vinyl"


def vinyl_memory(f: Facts) -> int:
    """L0: 1/8 of the budget, at least the 128 MB default."""
    return max(VINYL_DEFAULT, f.memory_bytes // 8 // VINYL_STEP * VINYL_STEP)


def vinyl_cache(f: Facts) -> int:
    """3/4 of the budget less memtx, L0, the runtime and the connections' buffers; the last
    quarter stays for the OS page cache (run pages read, the WAL written)."""
    others = VINYL_MEMTX + vinyl_memory(f) + RUNTIME_BYTES + connections(f) * 2 * 16320
    cache = int(f.memory_bytes * SHARE) - others
    return max(VINYL_DEFAULT, cache // VINYL_STEP * VINYL_STEP)


def _vinyl_effects(f: Facts) -> list:
    cache, l0, budget = vinyl_cache(f), vinyl_memory(f), human_bytes(f.memory_bytes)
    return [
        Set("memtx_memory", Bytes(VINYL_MEMTX),
            "the data is in vinyl: memtx holds only the system spaces (and small memtx "
            "spaces); the budget goes to vinyl's caches"),
        Set("vinyl_cache", Bytes(cache),
            f"vinyl keeps recently read tuples in its own cache ({MANUAL}): a hit skips the "
            "run files' page index, a read thread and an 8 KB page read, where the OS page "
            "cache would hold a whole page for each hot tuple; "
            f"{SHARE:.0%} of the {budget} budget less memtx, L0, runtime and "
            f"{connections(f)} connections' buffers (the rest: page cache for run pages and "
            "the WAL)"),
        Bound("vinyl_cache", lo=Bytes(max(VINYL_DEFAULT, cache // 2)), hi=Bytes(cache),
              reason="at most what the budget leaves after the other quotas; at least half"),
        Set("vinyl_memory", Bytes(l0),
            f"L0, vinyl's in-memory level: writes wait while a full one is dumped to disk "
            f"({MANUAL}); 1/8 of the {budget} budget, at least the 128 MB default"),
        Bound("vinyl_memory", lo=Bytes(VINYL_DEFAULT // 2), hi=Bytes(l0),
              reason="at most its share of the budget"),
    ]


class TarantoolBaseline(Rule):
    id = "TT-BASE"
    title = ("Tarantool dedicated-server sizing (memtx arena, or vinyl's caches when the data "
             "is in vinyl, from the RAM budget; fsync WAL)")
    insights = ()
    paper = "Tarantool 2.6 manual (memtx_memory, vinyl_cache, vinyl_memory, wal_mode)"
    priority = PRIORITY_BASELINE
    engines = ("tarantool",)

    def condition(self, f: Facts) -> bool:
        return True

    def effects(self, f: Facts):
        arena = memtx_memory(f)
        out = _vinyl_effects(f) if in_vinyl(f) else [
            Set("memtx_memory", Bytes(arena),
                f"memtx keeps all data in RAM: {SHARE:.0%} of the {human_bytes(f.memory_bytes)}"
                f" budget less vinyl quotas, runtime and {connections(f)} connections' buffers"),
            # the tuner searches below the fitted arena, never above it (the worst case must
            # fit the budget) nor so low that tune's data (a quarter of the budget) cannot fit
            Bound("memtx_memory", lo=Bytes(max(64 * MB, arena * 3 // 4)), hi=Bytes(arena),
                  reason="at most the arena that fits the budget; at least 3/4 of it"),
        ]
        out += [
            # requests here are ~1 KB records: a read buffer beyond 1 MB only costs memory
            # per connection (the worst case counts two of them per connection)
            Bound("readahead", lo=Bytes(16320), hi=Bytes(1 * MB),
                  reason="requests of ~1 KB records; larger buffers only cost memory"),
            Set("wal_mode", "fsync",
                "durable commits: Tarantool's default 'write' has no fsync and loses committed "
                "transactions on power loss"),
        ]
        if f.data is not None:  # Tarantool's placement lives in box.cfg itself
            out.append(Set("memtx_dir", f.data.path, "snapshots (.snap) in the data directory"))
        if f.wal is not None and f.data is not None and f.wal.path != f.data.path:
            out.append(Set("wal_dir", f.wal.path, "the WAL (.xlog) in its own directory"))
        if f.clients and f.clients * 2 > 768:
            # every client may have a request in flight plus one queued: keep reading sockets
            out.append(Set("net_msg_max", f.clients * 2,
                           f"{f.clients} clients: two requests in flight each"))
        return out


def fit_memtx(engine: Any, rec: Any, view: Any, budget: int) -> None:
    """Lower the big quota (memtx_memory; vinyl_cache when the data is in vinyl) until the
    worst case fits ``budget``."""
    f = rec.facts
    name, step = ("vinyl_cache", VINYL_STEP) if in_vinyl(f) else ("memtx_memory", ARENA_STEP)
    settings = {s.name: s.value for s in rec.settings}
    est = engine.memory(settings, flavour="tarantool", version=f.version,
                        catalog=view.catalog, connections=connections(f))
    if est.total_bytes <= budget:
        return
    have = next(p.bytes for p in est.parts if p.name == name)
    new = max(32 * MB, (have - (est.total_bytes - budget)) // step * step)
    put_setting(rec, view, name, Bytes(new),
         f"lowered from {gib(have)} so the worst case ({gib(est.total_bytes)} with "
         f"{est.connections} connections) fits the {gib(budget)} budget")
