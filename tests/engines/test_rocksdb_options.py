"""RocksDB OPTIONS files and catalog: emitter <-> parser, bad values, risky values, and the
db_bench workloads' command lines and output parsing (no db_bench needed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pmem_advisor.engines.rocksdb.options import (
    CF,
    DB,
    SECTIONS,
    TABLE,
    emit_options,
    load_rocksdb_catalog,
    parse_options,
)
from pmem_advisor.engines.rocksdb.workload import MIXES, RocksYcsb, failure_reason, parse_output
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.emit import Header, Setting

DB_BENCH = shutil.which("db_bench")
needs_db_bench = pytest.mark.skipif(DB_BENCH is None,
                                    reason="db_bench missing (apt-get install rocksdb-tools)")


@pytest.fixture(scope="module")
def catalog():
    return load_rocksdb_catalog()


# -- catalog ------------------------------------------------------------------------------
def test_catalog_loads_with_sections_and_safety(catalog):
    names = set(catalog.names())
    for must in ("max_background_jobs", "write_buffer_size", "max_write_buffer_number",
                 "block_cache", "block_size", "compression", "bytes_per_sync",
                 "use_direct_reads", "use_direct_io_for_flush_and_compaction",
                 "allow_mmap_reads", "allow_mmap_writes", "level0_file_num_compaction_trigger",
                 "level0_slowdown_writes_trigger", "level0_stop_writes_trigger",
                 "max_bytes_for_level_base", "target_file_size_base", "manual_wal_flush",
                 "disable_wal", "sync"):
        assert must in names
    assert names == set(SECTIONS), "every catalog option needs its OPTIONS-file section"
    risky = {k.name for k in catalog if k.safety == "durability-risk"}
    assert {"disable_wal", "sync", "manual_wal_flush"} <= risky
    assert catalog.get("disable_wal").is_risky(True)
    assert catalog.get("sync").is_risky(False) and not catalog.get("sync").is_risky(True)
    assert catalog.get("manual_wal_flush").is_risky(True)
    assert not catalog.get("disable_wal").config_file  # a write option, not a file option
    # defaults as RocksDB 7.8 writes them in its OPTIONS file
    assert catalog.get("write_buffer_size").default == 64 << 20
    assert catalog.get("max_background_jobs").default == 2
    assert catalog.get("block_size").default == 4096
    assert catalog.get("level0_stop_writes_trigger").default == 36


# -- emitter <-> parser -------------------------------------------------------------------
SETTINGS = [Setting("max_background_jobs", 4, "PM061"),
            Setting("write_buffer_size", "128M", "baseline"),
            Setting("block_cache", 1 << 30, "baseline"),
            Setting("block_size", "16K", "baseline"),
            Setting("compression", "kLZ4Compression", "trial 3"),
            Setting("allow_mmap_reads", True, "PM063"),
            Setting("max_bytes_for_level_multiplier", 8, "trial 3"),
            Setting("filter_policy", "bloomfilter:10:false", "baseline"),
            Setting("sync", True, "safe")]


def test_round_trip(catalog):
    out = emit_options(SETTINGS, Header(fingerprint="abc", notes=("data on /dev/shm (tmpfs)",)),
                       catalog=catalog)
    text = out.text
    for section in ("[Version]", f"[{DB}]", f"[{CF}]", f"[{TABLE}]"):
        assert section in text
    assert "allow_mmap_reads=true" in text and "block_cache=1073741824" in text
    assert "WriteOptions.sync = true" in text  # a comment: not an option RocksDB reads
    assert "note: data on /dev/shm (tmpfs)" in text
    parsed = parse_options(text, "OPTIONS", catalog=catalog)
    assert parsed == {"max_background_jobs": "4", "write_buffer_size": str(128 << 20),
                      "block_cache": str(1 << 30), "block_size": "16384",
                      "compression": "kLZ4Compression", "allow_mmap_reads": "true",
                      "max_bytes_for_level_multiplier": "8",
                      "filter_policy": "bloomfilter:10:false"}
    again = emit_options([Setting(k, catalog.get(k).coerce(v) if catalog.get(k).type != "bool"
                                  else v == "true", "x") for k, v in parsed.items()],
                         catalog=catalog)
    assert parse_options(again.text, "again", catalog=catalog) == parsed


def test_parser_reads_rocksdb_own_file(catalog):
    """An OPTIONS file as RocksDB writes it: unknown options are RocksDB's, ours checked."""
    text = (Path(__file__).parent / "test_rocksdb_data" / "OPTIONS-7.8.3.ini").read_text()
    parsed = parse_options(text, "OPTIONS-000007", catalog=catalog)
    assert parsed["max_background_jobs"] == "2"
    assert parsed["write_buffer_size"] == str(64 << 20)
    assert parsed["block_size"] == "4096"


@pytest.mark.parametrize("text,needle", [
    ("[DBOptions]\n  max_background_jobs=abc\n", "max_background_jobs: 'abc' is not a valid"),
    ("[DBOptions]\n  max_background_jobs=0\n", "max_background_jobs"),
    ("[DBOptions]\n  use_direct_reads=yes\n", "use_direct_reads: 'yes' is not a boolean"),
    ('[DBOptions]\n[CFOptions "default"]\n  compression=kFooCompression\n', "compression"),
    ('[DBOptions]\n[CFOptions "default"]\n  write_buffer_size=1024\n', "write_buffer_size"),
    ("[DBOptions]\n  block_size=8192\n", "block_size belongs in [TableOptions/BlockBasedTable"),
    ("[DBOptions]\n  allow_mmap_reads=true\n  use_direct_reads=true\n", "exclude each other"),
    ('[DBOptions]\n[CFOptions "default"]\n  level0_slowdown_writes_trigger=40\n'
     "  level0_stop_writes_trigger=20\n", "level0_stop_writes_trigger=20 is below"),
    ("max_background_jobs=2\n", "outside any section"),
    ('[CFOptions "default"]\n  write_buffer_size=1M\n', "no [DBOptions] section"),
])
def test_bad_values_one_line_naming_the_option(catalog, text, needle):
    with pytest.raises(UsageError) as e:
        parse_options(text, "bad.ini", catalog=catalog)
    assert needle in e.value.message and "\n" not in e.value.message


def test_emit_refuses_bad_values_and_conflicts(catalog):
    with pytest.raises(UsageError, match="max_write_buffer_number"):
        emit_options([Setting("max_write_buffer_number", 1, "x")], catalog=catalog)
    with pytest.raises(UsageError, match="exclude each other"):
        emit_options([Setting("allow_mmap_writes", True, "x"),
                      Setting("use_direct_io_for_flush_and_compaction", True, "y")],
                     catalog=catalog)
    # a reason cannot inject a line: it is flattened into its comment
    text = emit_options([Setting("write_buffer_size", 1 << 20, "why\n[DBOptions]")],
                        catalog=catalog).text
    assert text.count("\n[DBOptions]") == 1 and "# write_buffer_size: why [DBOptions]" in text
    with pytest.raises(UsageError, match="filter_policy"):
        emit_options([Setting("filter_policy", "bloomfilter:10:false\n[DBOptions]", "x")],
                     catalog=catalog)


def test_risky_values_come_from_the_catalog(catalog):
    from pmem_advisor.engines.rocksdb.options import risky

    found = risky(catalog, {"disable_wal": True, "sync": False, "manual_wal_flush": True,
                            "max_background_jobs": 4,
                            "wal_recovery_mode": "kSkipAnyCorruptedRecords"})
    assert {k.name for k, _ in found} == {"disable_wal", "sync", "manual_wal_flush",
                                          "wal_recovery_mode"}
    assert all(k.safety_reason for k, _ in found)


def test_risky_knobs_stay_out_of_the_search_space(catalog):
    from pmem_advisor.tuner.space import KnobSpec, _safely_searchable

    unsafe = {k.name for k in catalog if not _safely_searchable(KnobSpec.from_knob(k))}
    assert {"disable_wal", "sync", "manual_wal_flush"} <= unsafe
    assert "max_background_jobs" not in unsafe


# -- db_bench output ----------------------------------------------------------------------
OUT = """readrandomwriterandom :      44.904 micros/op 43930 ops/sec 1.047 seconds \
45998 operations; ( reads:11500 writes:11499 total:5000 found:10501)
Microseconds per read:
Count: 4 Average: 49.7467  StdDev: 949.36
Percentiles: P50: 2.79 P75: 5.00 P99: 31.31 P99.9: 19565.22 P99.99: 32046.67
------------------------------------------------------
[       0,       1 ]     2   50.000%  50.000% ##
(       1,       2 ]     2   50.000% 100.000% #####

Microseconds per write:
Count: 4 Average: 40.3702  StdDev: 631.37
------------------------------------------------------
(       4,       6 ]        3   75.000%   75.000% ######
(    1300,    1900 ]        1   25.000%  100.000% #
"""


def test_parse_db_bench_output():
    r = parse_output(OUT, "readrandomwriterandom")
    assert r["ops_per_sec"] == 43930 and r["operations"] == 45998
    assert r["latency_ms"] == {"p50": 0.002, "p95": 1.9, "p99": 1.9}
    assert r["latency_ms_by_op"]["read"]["p99"] == 0.002
    assert parse_output(OUT, "readrandom") is None
    bad = "Set seed to 1\nUnable to load options file x --- Invalid argument: Error parsing a\n"
    assert failure_reason(bad).startswith("Unable to load options file")


def test_workloads_are_k23_mixes():
    a, b, c = (RocksYcsb(n) for n in ("ycsb-a", "ycsb-b", "ycsb-c"))
    assert "--readwritepercent=50" in a.run_args("/d", 2, clients=2, duration=2)
    assert "--readwritepercent=95" in b.run_args("/d", 2, clients=2, duration=2)
    assert "--benchmarks=readrandom" in c.run_args("/d", 2, clients=2, duration=2)
    assert "--value_size=1000" in a.load_args("/d", 2)  # K23 §6: 1000-byte rows
    assert a.data_bytes(10) == 10 * 1000 * 1016 and a.scale_for_bytes(1) == 1
    assert set(MIXES) == {"ycsb-a", "ycsb-b", "ycsb-c"}
    with pytest.raises(UsageError, match="no option"):
        RocksYcsb("ycsb-a", bogus=1)
    with pytest.raises(UsageError, match="unknown RocksDB workload"):
        RocksYcsb("tpcc")
