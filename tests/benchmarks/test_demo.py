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


def test_the_spread_line_prints_the_pair_that_decided():
    """When rules-only loses to the defaults, the verdict compares tuned with the defaults: the
    demo's last line prints that interval, not tuned vs rules-only."""
    from pmem_advisor.tuner.verdict import decide, make_plan

    rules = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0]
    tuned = [1060.0, 1072.0, 1049.0, 1064.0, 1055.0, 1061.0]
    defaults = [1130.0, 1141.0, 1118.0, 1135.0, 1126.0, 1132.0]
    runs = {"tuned": tuned, "rules": rules, "default": defaults}
    v = decide(runs, make_plan(6, list(runs), paired=True), final=True,
               by_round={r: dict(enumerate(x, 1)) for r, x in runs.items()})
    assert v["compared"] == ["tuned", "default"]
    c = v["comparisons"]["tuned_vs_default"]
    line = demo.spread_line({"verdict": v})
    assert line.endswith(f"; tuned vs defaults per round {c['gain_pct']:+.1f}% "
                         f"[{c['ci_low_pct']:+.1f}%, {c['ci_high_pct']:+.1f}%]")
    # a summary written before the field: tuned vs rules-only, as it was compared then
    old = {k: x for k, x in v.items() if k != "compared"}
    assert "; tuned vs rules-only per round " in demo.spread_line({"verdict": old})
