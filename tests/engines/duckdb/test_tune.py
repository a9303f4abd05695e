"""`tune duckdb --workload olap-tpch-lite` through the CLI, tiny, on /dev/shm and on the disk:
the tuned SET file is opened by DuckDB, and nothing is left in the data directory."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

duckdb = pytest.importorskip("duckdb", reason="PyPI duckdb is not installed (extra: duckdb)")


@pytest.mark.parametrize("medium", ["shm", "disk"])
def test_tune_tiny(run_cli, tmp_path, medium):
    from pmem_advisor.engines.registry import get_engine

    if medium == "shm" and not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm on this machine")
    duck = get_engine("duckdb")
    base = "/dev/shm" if medium == "shm" else "/var/tmp"
    data = Path(tempfile.mkdtemp(prefix="duck-tune-", dir=base))
    out = tmp_path / "out"
    try:
        code, stdout, err = run_cli(
            "tune", "duckdb", "--workload", "olap-tpch-lite", "--trials", "3", "--scale", "1",
            "--duration", "0.5", "--warmup", "0", "--clients", "1", "--repeats", "1",
            "--memory", "2G", "--data-dir", str(data), "--out", str(out))
        assert code == 0, err
        text = (out / duck.config_name).read_text()
        assert text.startswith("-- DuckDB settings") and "SET " in text
        if medium == "shm":
            assert "tmpfs" in text  # the emulation is said in the file the DBA keeps
        duck.validate_by_starting(text, tmp_path)  # DuckDB opens a database with it
        # whatever the verdict kept, the file's worst case fits the production budget
        # (an absent memory_limit would be DuckDB's 80% of this host's RAM)
        settings = duck.parse_config(text, "tuned")
        assert duck.memory(settings).total_bytes <= 0.9 * (2 << 30), settings
        assert not any(data.iterdir())  # golden and trial copies are gone
    finally:
        shutil.rmtree(data, ignore_errors=True)
