"""RocksDB's memory model and baseline: files on tmpfs count as memory, and index and filter
blocks stay out of a block cache too small to hold them beside the data blocks."""

from __future__ import annotations

import pytest

MB = 1 << 20


def _rec(medium: str, memory: str = "512M"):
    from pmem_advisor.library.recommend import build_recommendation

    data_dir = "/dev/shm/rocks" if medium == "tmpfs" else "/var/tmp/rocks"
    return build_recommendation("rocksdb", data_dir=data_dir, memory=memory, cpus=2, clients=4,
                                workload="kv", version="7.8.3",
                                medium=None if medium == "tmpfs" else f"{data_dir}=ssd")


def _values(rec) -> dict:
    return {s.name: s.value for s in rec.settings}


def test_tmpfs_files_are_counted_and_fitted_into_the_budget():
    from pmem_advisor.rules.memory import worst_case

    rec = _rec("tmpfs")
    v = _values(rec)
    parts = {p.name: p.bytes for p in rec.memory.parts}
    # the files RocksDB writes on tmpfs are memory: the WAL and one L0->L1 compaction
    assert parts["tmpfs: WAL"] == v["max_total_wal_size"] == 2 * 16 * MB
    assert v["max_bytes_for_level_base"] == 4 * v["write_buffer_size"]
    assert parts["tmpfs: flushed and compacted files"] == 2 * 4 * 16 * MB + 64 * MB
    assert rec.memory.total_bytes <= 0.9 * 512 * MB
    # the block cache is what the budget leaves: less than the half the rule starts from
    assert 64 * MB <= v["block_cache"] < 256 * MB
    # the same settings with the files left out would leave them uncounted
    alone = worst_case("rocksdb", v, version="7.8.3")
    assert alone.total_bytes < rec.memory.total_bytes - 200 * MB
    assert any("tmpfs" in a for a in rec.memory.assumptions)


def test_rocksdb_defaults_on_tmpfs_count_four_times_the_memtables_of_wal():
    from pmem_advisor.rules.memory import worst_case

    est = worst_case("rocksdb", {}, version="7.8.3", files_in_memory=True)
    parts = {p.name: p.bytes for p in est.parts}
    assert parts["tmpfs: WAL"] == 4 * 2 * 64 * MB  # options.h: 0 = 4x all memtables
    assert parts["tmpfs: flushed and compacted files"] == 2 * 4 * 64 * MB + 256 * MB


def test_disk_counts_no_files_and_sets_no_tmpfs_bounds():
    rec = _rec("ssd")
    v = _values(rec)
    assert not any(p.name.startswith("tmpfs") for p in rec.memory.parts)
    assert "max_total_wal_size" not in v and "max_bytes_for_level_base" not in v


@pytest.mark.parametrize("medium", ["tmpfs", "ssd"])
def test_index_and_filter_blocks_in_the_cache_keep_it_at_64_mb_or_more(medium):
    rec = _rec(medium)
    v = _values(rec)
    assert v["cache_index_and_filter_blocks"] is True and v["block_cache"] >= 64 * MB
    # the tuner may not move the block cache under it while the blocks are cached there
    assert rec.bounds["block_cache"][0] == 64 * MB
    assert "block_cache" in rec.important


def test_a_budget_too_small_for_64_mb_of_cache_keeps_index_blocks_on_the_heap():
    rec = _rec("tmpfs", memory="256M")
    v = _values(rec)
    assert v["block_cache"] < 64 * MB
    assert v["cache_index_and_filter_blocks"] is False
    why = next(s.reason for s in rec.settings if s.name == "cache_index_and_filter_blocks")
    assert "under 64 MB" in why
    assert "block_cache" not in rec.bounds  # the tuner may search small caches then


def test_other_engines_ignore_files_in_memory():
    from pmem_advisor.rules.memory import worst_case

    a = worst_case("tarantool", {}, version="2.6", files_in_memory=True)
    b = worst_case("tarantool", {}, version="2.6")
    assert a.total_bytes == b.total_bytes


def test_block_cache_is_searched_as_the_main_buffer_not_a_per_operation_one():
    """RocksDB's 8 MB default cache is not a per-sort buffer: the no-rules space lets every
    searcher reach the budget's share (it was capped at budget/64 = 8 MB)."""
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.tuner.limits import Limits
    from pmem_advisor.tuner.space import KnobSpec, build_space

    catalog = load_catalog("rocksdb", "rocksdb", "7.8.3")
    specs = {k.name: KnobSpec.from_knob(k) for k in catalog}
    space = build_space(specs, engine="rocksdb", flavour="rocksdb", version="7.8.3",
                        important=[], use_rules=False,
                        limits=Limits.for_host(memory_bytes=512 * MB))
    cache = next(k for k in space.knobs if k.name == "block_cache")
    assert cache.high == pytest.approx(0.75 * 512 * MB)


def test_tunes_memory_gate_counts_tmpfs_files():
    """tune's gate on a tmpfs data directory refuses the 256 MiB cache the old rules chose
    (with RocksDB's default WAL and L1, as before the fix); on a disk the same config fits."""
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.tuner.session import memory_gate

    catalog = load_catalog("rocksdb", "rocksdb", "7.8.3")
    base = {"write_buffer_size": 16 * MB, "max_write_buffer_number": 2}
    trial = {"block_cache": 256 * MB}
    on_tmpfs = memory_gate("rocksdb", "rocksdb", "7.8.3", catalog, base, 512 * MB, True)
    on_disk = memory_gate("rocksdb", "rocksdb", "7.8.3", catalog, base, 512 * MB, False)
    assert on_tmpfs(trial) is not None and "512" in on_tmpfs(trial)
    assert on_disk(trial) is None
