"""One question to the real server (here the synthetic one plays it): the base config and the
base with a change, interleaved round by round, and the tuner's paired test decides."""

from __future__ import annotations

import pytest

from benchmarks import ab
from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.tuner.evaluator import TrialConfig

from .synthetic import SyntheticEvaluator


def test_a_change_toward_the_peak_is_faster_and_the_runs_alternate():
    ev = SyntheticEvaluator(noise=0.02)
    out = ab.ab(ev, TrialConfig(params={"x": 10, "y": 30.0}), {"x": 70}, rounds=4)
    assert [c.params["x"] for c in ev.calls] == [10, 70, 70, 10, 10, 70, 70, 10]
    assert out["verdict"]["decision"] == "better" and out["verdict"]["gain_pct"] > 30
    assert "faster" in ab.summary(out) and "x=70" in ab.summary(out)


def test_a_change_that_does_nothing_is_no_significant_difference():
    ev = SyntheticEvaluator(noise=0.05, seed=3)
    out = ab.ab(ev, TrialConfig(params={"x": 70}), {"unused_knob": 1}, rounds=4)
    assert out["verdict"]["decision"] == "none"
    assert "no significant difference" in ab.summary(out)


def test_a_failed_run_drops_its_round():
    ev = SyntheticEvaluator(noise=0, fail_above=60)
    out = ab.ab(ev, TrialConfig(params={"x": 10}), {"x": 70}, rounds=3)
    assert out["runs"]["changed"] == [None, None, None] and out["failures"]["changed"]
    assert "too few paired rounds" in ab.summary(out)


@pytest.mark.parametrize("engine, text, expected", [
    ("mariadb", "innodb_io_capacity=2000,innodb_io_capacity_max=4000",
     {"innodb_io_capacity": 2000, "innodb_io_capacity_max": 4000}),
    ("mariadb", "innodb_log_buffer_size=2M", {"innodb_log_buffer_size": 2 << 20}),
    ("mariadb", "innodb_flush_method=O_DSYNC, innodb_adaptive_hash_index=false",
     {"innodb_flush_method": "O_DSYNC", "innodb_adaptive_hash_index": False}),
    # in the unit the evaluator writes: 8 kB pages, not bytes
    ("postgresql", "shared_buffers=512MB,synchronous_commit=on",
     {"shared_buffers": 65536, "synchronous_commit": "on"}),
])
def test_settings_are_read_as_the_server_reads_them(engine, text, expected):
    catalog = (load_catalog("mysql", "mariadb", "10.11") if engine == "mariadb"
               else load_catalog("postgres", "postgresql", "18"))
    assert ab.parse_settings(text, catalog) == expected


SHIPPED = "mariadb1011-oltp-write-only-disk"


@pytest.mark.parametrize("argv", [
    [SHIPPED, "--set", "innodb_io_capacity"],         # no value
    [SHIPPED, "--set", "innodb_io_capacityy=2000"],   # no such knob
    [SHIPPED, "--set", "innodb_io_capacity=1"],       # below the server's minimum
    [SHIPPED, "--set", "innodb_io_capacity=2000", "--base-set", "innodb_flush_method=x"],
    [SHIPPED, "--set", "innodb_io_capacity=2000", "--rounds", "2"],  # too few to test
    ["no-such-scenario", "--set", "x=1"],             # no dataset
])
def test_bad_input_is_one_line_and_an_exit_code_before_any_server(argv, monkeypatch, capsys):
    from benchmarks import collect

    def no_server(*a, **k):
        raise AssertionError("a server was started for bad input")

    monkeypatch.setattr(collect, "open_real", no_server)
    code = ab.main(argv)
    assert code in (UsageError.exit_code, UnknownKnobError.exit_code)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "Traceback" not in err[0]
