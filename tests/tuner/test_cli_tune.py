"""`pmem-advisor tune` and `report`: bad input is one line and exit 2, before any server runs."""

from __future__ import annotations

import pytest

from pmem_advisor.tuner.storage import open_storage
from pmem_advisor.tuner.study import open_study
from tests.tuner.conftest import META, make_space

# Tiny everything: a test meant to stop early must not be able to fall through to a real run
# with the memory-sized default scale (later options override these).
BASE = ["tune", "postgres", "--workload", "pgbench-tpcb", "--duration", "1", "--scale", "1",
        "--trials", "1", "--warmup", "0", "--repeats", "0"]


def _one_line_error(code, err, expected=2):
    assert code == expected, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pmem-advisor: error:"), err
    return lines[0]


@pytest.mark.parametrize("extra, words", [
    (["--trials", "0"], "--trials"),
    (["--sampler", "bogus"], "--sampler"),
    (["--objective", "p50"], "--objective"),
    (["--time-budget", "soon"], "--time-budget"),
    # issue 17 item 10: non-finite and out-of-range numbers (exit 70 or a RUNNING trial before)
    (["--duration", "nan"], "--duration"),
    (["--duration", "inf"], "--duration"),
    (["--warmup", "nan"], "--warmup"),
    (["--latency-slo", "nan"], "--latency-slo"),
    (["--time-budget", "0.000000001s"], "shorter than one trial"),
    (["--time-budget", "0.000000001"], "no unit"),
    # issue 12: a budget without a unit below a minute means minutes, almost always
    (["--time-budget", "5"], "did you mean 5m"),
    # issue 17 item 11: every trial failed and exit 0 before
    (["--clients", "100000"], "--clients"),
    # issue 12 Bad input: production connections below the benchmark's clients
    (["--clients", "8", "--connections", "4"], "--connections 8"),
    (["--memory", "99999T"], "more than this machine"),
])
def test_bad_options(run_cli, tmp_path, extra, words):
    line = _one_line_error(*run_cli(*BASE, "--out", str(tmp_path), *extra)[::2])
    assert words in line


def test_unknown_workload(run_cli, tmp_path):
    code, _, err = run_cli("tune", "postgres", "--workload", "nope", "--out", str(tmp_path))
    assert "nope" in _one_line_error(code, err)


def test_unknown_knob(run_cli, tmp_path):
    code, _, err = run_cli(*BASE, "--knob", "shared_bufers", "--out", str(tmp_path))
    assert "shared_bufers" in _one_line_error(code, err)


def test_non_empty_data_dir(run_cli, tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    (d / "precious").write_text("user data")
    code, _, err = run_cli(*BASE, "--data-dir", str(d), "--out", str(tmp_path / "o"))
    assert "not empty" in _one_line_error(code, err)
    assert (d / "precious").read_text() == "user data"


def test_unreachable_storage_hides_password(run_cli, tmp_path):
    url = "postgresql://tuner:s3cr3tpw@127.0.0.1:1/studies"
    code, out, err = run_cli(*BASE, "--storage", url, "--out", str(tmp_path))
    line = _one_line_error(code, err, 3)  # an unreachable server: the environment
    assert "127.0.0.1" in line and "s3cr3tpw" not in err + out


def test_study_of_another_workload(run_cli, tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path / 'study.db'}")
    open_study(storage, "mine", {**META, "workload": "sysbench-oltp-read-write"}, make_space(),
               resume=False)
    code, _, err = run_cli(*BASE, "--study", "mine", "--resume", "--out", str(tmp_path))
    assert "workload" in _one_line_error(code, err)
