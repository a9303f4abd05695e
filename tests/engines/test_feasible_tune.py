"""`tune rocksdb|duckdb|tarantool` with 4 trials on /dev/shm and on disk: every baseline and
every search trial completes (tiny data, short runs). Tarantool's data is larger than its
default 256 MiB arena, so its defaults baseline runs with the smallest arena that holds it,
and says so; DuckDB's default memory_limit (80% of the host) is brought within the budget."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from pmem_advisor.engines.registry import get_engine
from pmem_advisor.errors import EnvironmentProblem

pytestmark = [pytest.mark.server, pytest.mark.slow]

CASES = {  # case: (engine, workload, scale, the baseline fix the defaults need, or None)
    "rocksdb": ("rocksdb", "ycsb-b", 2, None),
    "duckdb": ("duckdb", "olap-tpch-lite", 1, "memory_limit"),
    # ~176 MB of tuples: 256 MiB cannot hold it
    "tarantool": ("tarantool", "ycsb-b", 160, "memtx_memory"),
    # data in vinyl: memtx holds none of it, vinyl's quotas are searched
    "tarantool-vinyl": ("tarantool", "ycsb-b-vinyl", 20, None),
}


def _runs_here(engine: str) -> str | None:
    try:
        get_engine(engine).find_binary()
    except EnvironmentProblem as e:
        return str(e)
    return None


# On disk the same trials run more slowly and prove nothing the tmpfs runs do not about
# completing; tests/engines/*/test_tune.py keep a disk run per engine in make test.
@pytest.mark.parametrize("where", ["/dev/shm", pytest.param("/var/tmp", marks=pytest.mark.long)])
# tarantool-vinyl on /dev/shm is long: make test keeps vinyl's every-trial-completes check in
# tests/engines/tarantool/test_tune.py's vinyl run (on disk, summary failures and count)
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.long)
                                  if c == "tarantool-vinyl" else c for c in sorted(CASES)])
def test_every_trial_completes(run_cli, tmp_path, case, where):
    engine, workload, scale, fix = CASES[case]
    missing = _runs_here(engine)
    if missing:
        pytest.skip(missing)
    base = Path(tempfile.mkdtemp(prefix=f"feasible-{engine}-", dir=where))
    base.chmod(0o711)  # the unprivileged server user must reach the data directory
    out = tmp_path / "out"
    try:
        code, _, stderr = run_cli(
            "tune", engine, "--workload", workload, "--trials", "4", "--duration", "1",
            "--warmup", "0.2", "--clients", "2", "--scale", str(scale), "--memory", "1G",
            "--repeats", "0", "--seed", "1", "--data-dir", str(base / "data"),
            "--out", str(out))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert code == 0, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failures"] == [], summary["failures"]
    assert summary["trials_completed"] == 4, stderr
    if fix:
        assert f"defaults baseline: {fix}" in stderr  # said where the user reads it
        assert any(f"defaults baseline: {fix}" in n for n in summary["meta"]["data_notes"])
    else:
        assert "defaults baseline:" not in stderr


def test_a_scale_beyond_the_budget_is_refused_before_loading(run_cli, tmp_path):
    missing = _runs_here("tarantool")
    if missing:
        pytest.skip(missing)
    code, _, stderr = run_cli(
        "tune", "tarantool", "--workload", "ycsb-b", "--trials", "4", "--scale", "5000",
        "--memory", "1G", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "o"))
    assert code == 2
    line = [ln for ln in stderr.splitlines() if ln.strip()]
    assert any("scale 5000" in ln and "memtx_memory" in ln and "--scale " in ln
               for ln in line), stderr
    assert "Traceback" not in stderr
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())
