"""RocksDB engine with db_bench: validation by opening a database with the emitted OPTIONS
file, the missing-binary error, and the db_bench evaluator at tiny scale on /dev/shm and disk."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from pmem_advisor.engines.api import EvalRequest
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.emit import Setting

DB_BENCH = shutil.which("db_bench")
needs_db_bench = pytest.mark.skipif(DB_BENCH is None,
                                    reason="db_bench missing (apt-get install rocksdb-tools)")
SETTINGS = [Setting("max_background_jobs", 4, "PM061"),
            Setting("write_buffer_size", "128M", "baseline"),
            Setting("block_cache", 1 << 30, "baseline"),
            Setting("block_size", "16K", "baseline"),
            Setting("compression", "kLZ4Compression", "trial 3"),
            Setting("allow_mmap_reads", True, "PM063"),
            Setting("filter_policy", "bloomfilter:10:false", "baseline"),
            Setting("sync", True, "safe")]


# -- with db_bench ------------------------------------------------------------------------
def _engine():
    from pmem_advisor.engines.registry import get_engine

    return get_engine("rocksdb")


@needs_db_bench
@pytest.mark.parametrize("where", ["/dev/shm", "/var/tmp"])
def test_validate_by_starting(where):
    eng = _engine()
    good = eng.emit(SETTINGS).text
    eng.validate_by_starting(good, where)  # returns: RocksDB opened a database with it
    # RocksDB refuses what our parser cannot know: an option misspelt in its own section
    bad = good.replace("max_background_jobs=4", "max_background_jobz=4")
    with pytest.raises(UsageError, match="RocksDB refused the options: .*max_background_jobz"):
        eng.validate_by_starting(bad, where)
    with pytest.raises(UsageError, match="max_background_jobs"):
        eng.validate_by_starting(good.replace("max_background_jobs=4",
                                              "max_background_jobs=x"), where)
    assert not list(Path(where).glob("pmem-advisor-rocksdb-validate-*"))


def test_find_binary_missing_names_the_package(monkeypatch):
    from pmem_advisor.errors import EnvironmentProblem

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EnvironmentProblem) as e:
        _engine().find_binary()
    assert "apt-get install rocksdb-tools" in str(e.value)


@needs_db_bench
@pytest.mark.parametrize("where", ["/dev/shm", "/var/tmp"])
def test_evaluator_tiny(where):
    from pmem_advisor.tuner.evaluator import TrialConfig

    eng = _engine()
    base = Path(tempfile.mkdtemp(prefix="rocks-eval-", dir=where))
    base.chmod(0o711)  # the server user must reach the data directory
    try:
        ev = eng.evaluator(EvalRequest(eng.find_binary(), eng.workload("ycsb-a"), scale=3,
                                       clients=2, duration=2, warmup=0, data_dir=base,
                                       catalog=eng.catalog()))
        with ev:
            ok = ev.evaluate(TrialConfig({"max_background_jobs": 3, "block_cache": 32 << 20}))
            assert ok.ok, ok.failure
            assert ok.throughput_tps > 0 and ok.latency_ms["p99"] is not None
            assert ok.raw["sync"] is True  # durable writes unless --allow-unsafe says so
            # the trial's copy left the page cache before db_bench read it (outside the
            # budget's cgroup, its pages would serve reads no block cache size changes)
            assert ok.raw["page_cache_evicted_bytes"] > 1 << 20
            again = ev.evaluate(TrialConfig({}))
            assert again.ok and ev.initialisations == 1  # one golden copy for every trial
            refused = ev.evaluate(TrialConfig({"allow_mmap_writes": True,
                                               "use_direct_io_for_flush_and_compaction": True}))
            assert not refused.ok and "exclude each other" in refused.failure
            bad = ev.evaluate(TrialConfig({"max_write_buffer_number": 1}))
            assert not bad.ok and "max_write_buffer_number" in bad.failure
        assert not ev.scratch.exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@needs_db_bench
def test_evaluator_reports_db_bench_reason(monkeypatch):
    """A file RocksDB itself refuses: evaluate() returns RocksDB's reason, never raises."""
    from pmem_advisor.engines.rocksdb import options as rocksdb_options
    from pmem_advisor.tuner.evaluator import TrialConfig

    eng = _engine()
    real = rocksdb_options.render
    monkeypatch.setattr(rocksdb_options, "render",
                        lambda k, v: "notanumber" if k.name == "max_subcompactions" else real(k, v))
    ev = eng.evaluator(EvalRequest(eng.find_binary(), eng.workload("ycsb-c"), scale=1, clients=1,
                       duration=1, warmup=0, data_dir="/dev/shm", wal_dir=None, workdir=None,
                       catalog=eng.catalog()))
    with ev:
        m = ev.evaluate(TrialConfig({"max_subcompactions": 2}))
    assert not m.ok and "max_subcompactions" in m.failure and "Unable to load" in m.failure


def test_a_killed_db_bench_says_so_not_its_last_progress_line():
    from pmem_advisor.engines.rocksdb.bench import _why

    out = "... finished 400000 ops\n... finished 500000 ops\n"
    assert "killed by signal 9" in _why(-9, out) and "500000" not in _why(-9, out)
    assert "did not finish within 70 s" in _why(-9, out + "db_bench did not finish within "
                                                       "70 s (killed)")
