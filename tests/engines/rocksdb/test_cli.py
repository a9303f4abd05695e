"""RocksDB through the CLI: recommend on every captured machine gives an OPTIONS file RocksDB
opens (db_bench), within the memory budget; recommend --out, check --config and config render
refuse bad values with one line."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.probes.machine_builder import build, machine_names

needs_db_bench = pytest.mark.skipif(shutil.which("db_bench") is None,
                                    reason="db_bench missing (apt-get install rocksdb-tools)")


@pytest.fixture
def shm_dir():
    """A data directory on /dev/shm (tmpfs standing in for PMEM), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="rocks-cli-", dir="/dev/shm"))
    yield str(path)
    shutil.rmtree(path, ignore_errors=True)


def _engine():
    from pmem_advisor.engines.registry import get_engine

    return get_engine("rocksdb")


@needs_db_bench
def test_recommended_options_open_on_every_captured_machine(tmp_path):
    from pmem_advisor.engines.rocksdb.options import parse_options
    from pmem_advisor.library.recommend import build_recommendation, emit
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess

    eng = _engine()
    seen = 0
    for name in machine_names():
        root = build(name, tmp_path / name)
        mounts = probe(SysAccess(str(root)))["mounts"]
        pm = next((m["mountpoint"] for m in mounts if m.get("medium") in ("pmem", "cxl")), "/")
        rec = build_recommendation("rocksdb", root=str(root), data_dir=f"{pm.rstrip('/')}/rocks",
                                   memory="1G", cpus=2, clients=20, version="7.8.3")
        assert rec.memory is not None and rec.memory.total_bytes <= 0.9 * (1 << 30), name
        text = emit(rec)
        parsed = parse_options(text, name)
        assert parsed["cache_index_and_filter_blocks"] == "true", name  # bounded memory
        assert "WriteOptions.sync = true" in text, name  # durable writes advised
        if pm != "/":
            assert int(parsed["max_background_jobs"]) <= 6, name  # PM061 on 2 CPUs
        eng.validate_by_starting(text, "/dev/shm")  # RocksDB opens a database with it
        seen += 1
    assert seen >= 10


def test_recommend_out_and_check_round_trip(run_cli, tmp_path, shm_dir):
    out = tmp_path / "OPTIONS.ini"
    code, _, err = run_cli("recommend", "rocksdb", "--data-dir", shm_dir,
                           "--memory", "2G", "--clients", "8",
                           "--version", "7.8.3", "--out", str(out))
    assert code == 0, err
    text = out.read_text()
    assert "allow_mmap_reads=true" in text  # PM063: tmpfs stands in for DAX PMEM
    assert "[CFOptions \"default\"]" in text
    code, out_text, err = run_cli("check", "--db", "rocksdb", "--config", str(out),
                                  "--data-dir", shm_dir, "--version", "7.8.3", "--memory", "2G")
    assert "error:" not in err and "CK003" in out_text + err  # tmpfs is not durable: said
    assert "PM063" not in out_text + err and "PM061" not in out_text + err  # it agrees


def test_bad_values_one_line(run_cli, tmp_path):
    bad = tmp_path / "bad.ini"
    bad.write_text('[DBOptions]\n[CFOptions "default"]\n  max_write_buffer_number=1\n')
    code, _, err = run_cli("check", "--db", "rocksdb", "--config", str(bad), "--version",
                           "7.8.3")
    assert code == 2 and "max_write_buffer_number" in err
    code, _, err = run_cli("config", "render", "rocksdb", "--set", "block_size=big")
    assert code == 2 and "block_size" in err
    code, _, err = run_cli("config", "render", "rocksdb", "--set", "disable_wal=true")
    assert code == 2 and "risks durability" in err


def test_direct_reads_on_dax_are_flagged(run_cli, tmp_path, shm_dir):
    conf = tmp_path / "OPTIONS.ini"
    conf.write_text("[DBOptions]\n  use_direct_reads=true\n  max_background_jobs=16\n")
    code, out, err = run_cli("check", "--db", "rocksdb", "--config", str(conf), "--data-dir",
                             shm_dir, "--version", "7.8.3", "--memory", "2G")
    assert "error:" not in err
    assert "[PM063] use_direct_reads" in out + err and "[PM061] max_background_jobs" in out + err


def test_check_fails_durability_risks(run_cli, tmp_path, shm_dir):
    conf = tmp_path / "OPTIONS.ini"
    conf.write_text("[DBOptions]\n  manual_wal_flush=true\n"
                    "  wal_recovery_mode=kSkipAnyCorruptedRecords\n")
    code, out, err = run_cli("check", "--db", "rocksdb", "--config", str(conf), "--data-dir",
                             shm_dir, "--version", "7.8.3", "--memory", "2G")
    assert code == 1, err
    assert "fail [PM067] manual_wal_flush" in out + err
    assert "fail [PM067] wal_recovery_mode" in out + err


def test_small_budget_is_fitted(run_cli, tmp_path):
    """Block cache first, then the memtables: the worst case fits 90% of a 64 MB budget."""
    import json

    code, out, err = run_cli("recommend", "rocksdb", "--data-dir", str(tmp_path),
                             "--medium", "ssd", "--memory", "64M", "--version", "7.8.3",
                             "--json")
    assert code == 0, err
    doc = json.loads(out)
    data = doc.get("data", doc)
    assert data["memory"]["total_bytes"] <= 0.9 * (64 << 20)
    reasons = " ".join(str(s.get("reason")) for s in data["settings"])
    assert "MEM-FIT" in reasons and "so the worst case fits" in reasons


def test_check_counts_the_files_rocksdb_writes_on_tmpfs(run_cli, tmp_path, shm_dir):
    """The rules config that was OOM-killed in a 512 MiB cgroup on /dev/shm (256 MiB block
    cache, the WAL and compactions unbounded): check now says its worst case exceeds the
    budget there, and passes the same file on a disk, where those files are not memory."""
    conf = tmp_path / "OPTIONS.ini"
    conf.write_text('[DBOptions]\n  max_background_jobs=2\n[CFOptions "default"]\n'
                    '  write_buffer_size=16777216\n  max_write_buffer_number=2\n'
                    '[TableOptions/BlockBasedTable "default"]\n  block_cache=268435456\n')
    args = ("check", "--db", "rocksdb", "--config", str(conf), "--version", "7.8.3",
            "--memory", "512M")
    _, out, err = run_cli(*args, "--data-dir", shm_dir)
    assert "CK004" in out + err and "tmpfs: flushed and compacted files" in out + err
    _, out, err = run_cli(*args, "--data-dir", str(tmp_path))
    assert "CK004" not in out + err
