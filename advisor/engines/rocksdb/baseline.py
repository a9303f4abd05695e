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
from pmem_advisor.rules.model import PRIORITY_BASELINE, Bound, Bytes, Rule, Set

MB, GB = 1 << 20, 1 << 30
DEFAULT_BLOCK_CACHE = 8 * MB  # RocksDB 7.8's own cache when none is configured
# Index and filter blocks go into the block cache only when it is at least this large. The
# wiki (Block-Cache, "Caching index, filter, and compression dictionary blocks"): with
# cache_index_and_filter_blocks they "compete with data blocks" for the cache, and a miss
# reads and parses a whole SST file's index or filter block again (hundreds of kB for a
# 64 MB file, against one 4-16 kB data block). A cache of a few MB holds little beside them:
# measured here, 8 MB with cache_index_and_filter_blocks=true ran at 0.07x the defaults
# (rocksdb78-ycsb-b-shm validation, 2026-11-26: 3,075 against 44,547 ops/s). 64 MB is eight
# times RocksDB's default cache; below it the blocks stay on the heap (RocksDB's default),
# outside the budget's count (see the engine's memory ASSUMPTIONS).
CACHE_INDEX_MIN = 64 * MB
LEVEL0_TRIGGER = 4  # level0_file_num_compaction_trigger, RocksDB's default (kept)


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


def tmpfs_settings(f: Facts, wbs: int, nbuf: int) -> dict[str, object]:
    """On tmpfs, bound the files RocksDB writes (they are memory there, counted by the
    engine's memory model): the WAL to the memtables it protects, L1 to L0's size."""
    if not f.data_in_memory:
        return {}
    return {
        # one column family: a WAL file is obsolete once its memtable is flushed, so the live
        # WAL is about the memtables; RocksDB's default (0) allows 4x that before forcing a
        # flush (options.h: "[sum of all write_buffer_size * max_write_buffer_number] * 4")
        "max_total_wal_size": Bytes(wbs * nbuf),
        # the tuning guide: L1 about the size of L0 (write_buffer_size x
        # level0_file_num_compaction_trigger), so an L0->L1 compaction rewrites little
        "max_bytes_for_level_base": Bytes(wbs * LEVEL0_TRIGGER),
    }


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
        **tmpfs_settings(f, wbs, nbuf),
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
                                     "worst case is bounded by the budget (only with a block "
                                     f"cache of {CACHE_INDEX_MIN // MB} MB or more)",
    "max_total_wal_size": "data on tmpfs, where the WAL is memory: at most the memtables' "
                          "size (one column family: older WAL files are already flushed)",
    "max_bytes_for_level_base": "L1 about L0's size (tuning guide); on tmpfs it also bounds the "
                                "L0->L1 compaction's output, memory there",
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
        out = [Set(name, value, WHY[name]) for name, value in settings(f).items()]
        # the tuner keeps the block cache large enough for the index and filter blocks it
        # holds (CACHE_INDEX_MIN); the memory fit drops both when the budget cannot
        out.append(Bound("block_cache", lo=Bytes(CACHE_INDEX_MIN),
                         reason=f"cache_index_and_filter_blocks=true needs a block cache of "
                                f"{CACHE_INDEX_MIN // MB} MB or more (RocksDB wiki, Block-Cache)"))
        return out


def small_cache_index_off(rec, view) -> None:
    """After the memory fit: a block cache under CACHE_INDEX_MIN keeps index and filter
    blocks on the heap (RocksDB's default), and the tuner may search it below that."""
    from pmem_advisor.rules.fit import put_setting

    cif, cache = rec.setting("cache_index_and_filter_blocks"), rec.setting("block_cache")
    if cif is None or not cif.value or cache is None or int(cache.value) >= CACHE_INDEX_MIN:
        return
    put_setting(rec, view, "cache_index_and_filter_blocks", False,
                f"the block cache ({int(cache.value) // MB} MB) is under {CACHE_INDEX_MIN // MB}"
                " MB: index and filter blocks in it would be evicted by data blocks and read "
                "again on every lookup (RocksDB wiki, Block-Cache)")
    bound = rec.bounds.get("block_cache")
    if isinstance(bound, tuple) and bound[0] == CACHE_INDEX_MIN:
        rec.bounds.pop("block_cache")
        rec.important = [n for n in rec.important if n != "block_cache"]


RULE = RocksDBBaseline()
