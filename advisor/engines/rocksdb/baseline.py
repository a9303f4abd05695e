"""RocksDB baseline: the options RocksDB's own guides suggest trying, sized to the RAM budget.

Sources: RocksDB wiki "Setup Options and Basic Tuning" and "Memory usage in RocksDB" (block
cache, memtables, index and filter blocks, block size, bloom filters, background jobs). The
PMEM rules of ``rules/catalog`` (PM060-PM069) then adjust the result; this rule has the
lowest priority.

Memory: the worst case (advisor/engines/rocksdb/engine.py ``memory``) is the block cache plus every
memtable (write_buffer_size x max_write_buffer_number x column families) plus background
buffers; index and filter blocks go into the block cache so that nothing grows with the data
outside the budget.
"""

from __future__ import annotations

from pmem_advisor.rules.facts import Facts
from pmem_advisor.rules.model import PRIORITY_BASELINE, Bytes, Rule, Set

MB, GB = 1 << 20, 1 << 30
DEFAULT_BLOCK_CACHE = 8 * MB  # RocksDB 7.8's own cache when none is configured


def block_cache(f: Facts) -> int:
    """A third of the budget where RocksDB reads SST files through the OS page cache (it keeps
    the compressed blocks the block cache misses); half where there is no page cache (DAX,
    tmpfs): there the block cache is the only cache of uncompressed blocks."""
    share = 2 if (f.data is not None and f.data.page_cache_bypassed) else 3
    return max(DEFAULT_BLOCK_CACHE, f.memory_bytes // share // MB * MB)


def write_buffer(f: Facts) -> tuple[int, int]:
    """(write_buffer_size, max_write_buffer_number): memtables take about 1/16 of the budget,
    64 MB memtables (RocksDB's default) from 4 GB up, smaller below, 256 MB at most."""
    size = min(256 * MB, max(16 * MB, f.memory_bytes // 64 // MB * MB))
    return size, (4 if f.memory_bytes >= 4 * GB else 2)


def background_jobs(f: Facts) -> int:
    """RocksDB's IncreaseParallelism(): as many flush/compaction threads as cores; at least
    RocksDB's default of 2, at most 16 (PM061 bounds it further on PMEM)."""
    return max(2, min(f.physical_cores, 16))


def settings(f: Facts) -> dict[str, object]:
    wbs, nbuf = write_buffer(f)
    return {
        "block_cache": Bytes(block_cache(f)),
        "write_buffer_size": Bytes(wbs),
        "max_write_buffer_number": nbuf,
        "max_background_jobs": background_jobs(f),
        "bytes_per_sync": Bytes(1 * MB),
        "level_compaction_dynamic_level_bytes": True,
        "block_size": Bytes(16 * 1024),
        "cache_index_and_filter_blocks": True,
        "filter_policy": "bloomfilter:10:false",
        "sync": True,
    }


WHY = {
    "block_cache": "a third of the memory budget (half where DAX/tmpfs leaves no page cache)",
    "write_buffer_size": "memtables sized to about 1/16 of the budget",
    "max_write_buffer_number": "room for immutable memtables while one flushes",
    "max_background_jobs": "one flush/compaction thread per core (IncreaseParallelism)",
    "bytes_per_sync": "sync SST files in 1 MB steps: no write bursts at file end (wiki)",
    "level_compaction_dynamic_level_bytes": "less space amplification (wiki's general options)",
    "block_size": "16 kB blocks: a smaller index than 4 kB (wiki: 16-32 kB in production)",
    "cache_index_and_filter_blocks": "index and filter blocks inside the block cache, so the "
                                     "worst case is bounded by the budget",
    "filter_policy": "10-bit bloom filters: ~1% false positives, most point-lookup reads saved",
    "sync": "WriteOptions.sync=true: an acknowledged write survives a power loss",
}


class RocksDBBaseline(Rule):
    id = "ROCKS-BASE"
    title = "RocksDB options sized to the memory budget"
    insights = ()
    paper = "RocksDB wiki: Setup Options and Basic Tuning; Memory usage in RocksDB"
    priority = PRIORITY_BASELINE
    engines = ("rocksdb",)

    def condition(self, f: Facts) -> bool:
        return True

    def effects(self, f: Facts):
        return [Set(name, value, WHY[name]) for name, value in settings(f).items()]


RULE = RocksDBBaseline()
