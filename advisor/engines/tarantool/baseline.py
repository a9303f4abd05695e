"""Tarantool baseline for a dedicated server: memtx holds every tuple and index in RAM, so its
arena is sized from the RAM budget, worst case accounted (``TarantoolEngine.memory``).

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


class TarantoolBaseline(Rule):
    id = "TT-BASE"
    title = "Tarantool dedicated-server sizing (memtx arena from the RAM budget, fsync WAL)"
    insights = ()
    paper = "Tarantool 2.6 manual (memtx_memory, wal_mode)"
    priority = PRIORITY_BASELINE
    engines = ("tarantool",)

    def condition(self, f: Facts) -> bool:
        return True

    def effects(self, f: Facts):
        arena = memtx_memory(f)
        out = [
            Set("memtx_memory", Bytes(arena),
                f"memtx keeps all data in RAM: {SHARE:.0%} of the {human_bytes(f.memory_bytes)}"
                f" budget less vinyl quotas, runtime and {connections(f)} connections' buffers"),
            # the tuner searches below the fitted arena, never above it (the worst case must
            # fit the budget) nor so low that tune's data (a quarter of the budget) cannot fit
            Bound("memtx_memory", lo=Bytes(max(64 * MB, arena * 3 // 4)), hi=Bytes(arena),
                  reason="at most the arena that fits the budget; at least 3/4 of it"),
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
    """Lower memtx_memory until the worst case fits ``budget`` (it is the only big quota)."""
    f = rec.facts
    settings = {s.name: s.value for s in rec.settings}
    est = engine.memory(settings, flavour="tarantool", version=f.version,
                        catalog=view.catalog, connections=connections(f))
    if est.total_bytes <= budget:
        return
    arena = next(p.bytes for p in est.parts if p.name == "memtx_memory")
    new = max(32 * MB, (arena - (est.total_bytes - budget)) // ARENA_STEP * ARENA_STEP)
    put_setting(rec, view, "memtx_memory", Bytes(new),
         f"lowered from {gib(arena)} so the worst case ({gib(est.total_bytes)} with "
         f"{est.connections} connections) fits the {gib(budget)} budget")
