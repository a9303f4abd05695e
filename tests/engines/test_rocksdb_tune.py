"""`pmem-advisor tune rocksdb --workload ycsb-a` end to end at tiny scale, on /dev/shm (tmpfs
standing in for PMEM) and on the disk: every trial measured by db_bench, the tuned OPTIONS
file written and opened by RocksDB, nothing left behind."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("db_bench") is None,
                                 reason="db_bench missing (apt-get install rocksdb-tools)")]


@pytest.mark.parametrize("where", ["/dev/shm", "/var/tmp"])
def test_tune_cli_tiny(run_cli, tmp_path, where):
    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.engines.rocksdb.options import parse_options

    eng = get_engine("rocksdb")
    base = Path(tempfile.mkdtemp(prefix="rocks-tune-", dir=where))
    base.chmod(0o711)  # the unprivileged server user must reach the data directory
    out = tmp_path / "out"
    try:
        code, stdout, stderr = run_cli(
            "tune", "rocksdb", "--workload", "ycsb-a", "--trials", "3", "--duration", "1",
            "--warmup", "0", "--clients", "2", "--scale", "2", "--memory", "1G",
            "--repeats", "1", "--data-dir", str(base), "--out", str(out))
        assert not [p for p in base.iterdir()], "the evaluator left files behind"
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert code == 0, stderr
    assert "trial   0 [default]" in stderr and "trial   1 [rules]" in stderr
    text = (out / eng.config_name).read_text()
    assert text.startswith("# RocksDB OPTIONS file") and "[DBOptions]" in text
    parse_options(text, "tuned")  # our parser reads what we wrote
    assert "WriteOptions.sync = false" not in text  # no durability risk without --allow-unsafe
    if where == "/dev/shm":
        assert "tmpfs" in stdout + stderr  # every output that used /dev/shm says so
    eng.validate_by_starting(text, where)  # RocksDB opens a database with it
