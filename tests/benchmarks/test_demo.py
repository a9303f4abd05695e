"""`make demo`'s own guard rails: help without a run, one demo per output directory."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys

import pytest

from benchmarks import demo
from pmem_advisor.errors import EXIT_ENVIRONMENT
from tests.conftest import REPO


def test_help_prints_help_and_runs_nothing(tmp_path):
    env = {**os.environ, "DEMO_OUT": str(tmp_path / "out")}
    r = subprocess.run([sys.executable, "-m", "benchmarks.demo", "--help"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "DEMO_TRIALS" in r.stdout
    assert not (tmp_path / "out").exists()


def test_a_second_demo_leaves_the_first_ones_study_alone(tmp_path, monkeypatch, capsys):
    out = tmp_path / "demo-out"
    out.mkdir()
    (out / "study.db").write_text("the running demo's study")
    monkeypatch.setattr(demo, "OUT", out)
    first = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(first, fcntl.LOCK_EX)
        with pytest.raises(SystemExit) as e:
            demo.main([])
    finally:
        os.close(first)
    assert e.value.code == EXIT_ENVIRONMENT
    err = capsys.readouterr().err
    assert "another demo is writing" in err and err.count("\n") == 1
    assert (out / "study.db").read_text() == "the running demo's study"
