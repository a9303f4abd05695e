"""DuckDB on the Engine interface: emit/parse, validate by opening, memory, evaluator, CLI."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from pmem_advisor.engines.api import EvalRequest
from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.knobs.emit import Header, Setting
from pmem_advisor.rules.model import Bytes

duckdb = pytest.importorskip("duckdb", reason="PyPI duckdb is not installed (extra: duckdb)")

MB = 1 << 20


@pytest.fixture(scope="module")
def duck():
    from pmem_advisor.engines.registry import get_engine

    return get_engine("duckdb")


def _emit(duck, settings):
    return duck.emit([Setting(n, v, why) for n, v, why in settings],
                     Header(flavour="duckdb", version=duckdb.__version__))


GOOD = [("threads", 2, "D21 insight #1"), ("memory_limit", Bytes(512 * MB), "fit"),
        ("temp_directory", "/var/tmp/it's spill", "PM052"),
        ("preserve_insertion_order", False, "tuned"), ("checkpoint_threshold", "64MB", "t")]


def test_engine_data(duck):
    assert duck.kind == "embedded" and duck.config_format == "duckdb-sql"
    assert duck.workloads == ("olap-tpch-lite", "tpch-refresh")
    b = duck.find_binary()
    assert b.version == duckdb.__version__ and b.source == "pypi"


def test_emit_round_trip(duck):
    emitted = _emit(duck, GOOD)
    text = emitted.text
    assert text.startswith("-- DuckDB settings")
    assert "duckdb.connect(" in text and "duckdb -init" in text  # the usage snippet
    assert "SET temp_directory = '/var/tmp/it''s spill';" in text
    parsed = duck.parse_config(text, "duck.sql")
    catalog = duck.catalog()
    for knob, value, _ in emitted.settings:
        assert knob.same(catalog.get(knob.name).parse(parsed[knob.name]), value), knob.name
    # PRAGMA forms and aliases read too
    assert duck.parse_config("PRAGMA threads=4; PRAGMA memory_limit('1GB');\n"
                             "SET GLOBAL worker_threads TO 3;", "x") == {
        "threads": "3", "memory_limit": "1GB"}


@pytest.mark.parametrize("text,match", [
    ("SET threads = 0;", r"bad.sql:1: threads: 0 is outside"),
    ("SET threads = 2;\nSET memory_limit = 'lots';", r"bad.sql:2: memory_limit: 'lots'"),
    ("SET preserve_insertion_order = 'maybe';", r"preserve_insertion_order: 'maybe'"),
    ("SELECT 1;", r"bad.sql:1: not a DuckDB setting statement"),
    ("SET default_block_size = 100000;", r"default_block_size: 100000 is not a power of two"),
    ("SET threads = 2 3;", r"threads: '2 3' is not one value"),
])
def test_bad_values_are_one_line_errors(duck, text, match):
    with pytest.raises(UsageError, match=match) as e:
        duck.parse_config(text, "bad.sql")
    assert "\n" not in str(e.value)


def test_unknown_setting_names_close_ones(duck):
    with pytest.raises(UnknownKnobError) as e:
        duck.parse_config("SET memory_limt = '1GB';", "bad.sql")
    assert "memory_limit" in (e.value.hint or "")


def test_validate_by_starting_good_and_bad(duck, tmp_path):
    duck.validate_by_starting(_emit(duck, GOOD).text, tmp_path)
    with pytest.raises(UsageError, match="memory_limit"):
        duck.validate_by_starting("SET memory_limit = '10KB';", tmp_path)
    # a value our catalog cannot judge but DuckDB refuses: DuckDB's own reason comes back
    from pmem_advisor.engines.duckdb.runner import validate_statements

    with pytest.raises(UsageError, match="DuckDB refused the config at `SET pin_threads"):
        validate_statements(["SET pin_threads = 'sometimes'"], ["pin_threads"], tmp_path)
    assert list(tmp_path.iterdir()) == []  # the scratch database is gone


def test_memory_counts_what_memory_limit_does_not(duck):
    est = duck.memory({"threads": 4, "memory_limit": Bytes(1 << 30)})
    names = [p.name for p in est.parts]
    assert names[:2] == ["memory_limit", "threads"]
    assert est.total_bytes > (1 << 30) + 4 * 8 * MB
    assert any("not counted" in a for a in est.assumptions)


def test_baseline_threads_and_memory_fit(duck):
    from pmem_advisor.rules.facts import build_facts
    from tests.rules.machines import make_profile

    facts = build_facts(make_profile("pmem"), engine="duckdb", workload="olap",
                        data_dir="/mnt/pmem1/duck", memory_bytes=8 << 30)
    (rule,) = duck.baseline_rules()
    from pmem_advisor.rules.model import Bound, Set

    effects = rule.evaluate(facts)
    sets = {e.name: e.value for e in effects if isinstance(e, Set)}
    bounds = {e.name: (e.lo, e.hi) for e in effects if isinstance(e, Bound)}
    assert sets["threads"] == 12  # physical cores of node 1, not the 48 logical CPUs
    assert bounds["threads"] == (1, 48) and bounds["memory_limit"][1] == sets["memory_limit"]
    est = duck.memory({"threads": 12, "memory_limit": sets["memory_limit"]})
    assert est.total_bytes <= 0.9 * (8 << 30)


def test_evaluator_tiny(duck):
    from pmem_advisor.tuner.evaluator import TrialConfig

    shm = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    ev = duck.evaluator(EvalRequest(
                        duck.find_binary(), duck.workload("olap-tpch-lite"), scale=1, clients=1,
                        duration=0.5, warmup=0.0, data_dir=shm, wal_dir=None,
                        workdir=tempfile.gettempdir(), catalog=duck.catalog()))
    scratch = ev.scratch
    with ev:
        m = ev.evaluate(TrialConfig(params={"threads": 1, "memory_limit": 256 * MB}))
        assert m.ok and m.throughput_tps > 0, m.failure
        assert m.raw["unit"] == "queries/s" and m.raw["queries"] > 0
        bad = ev.evaluate(TrialConfig(params={"threads": 0}))
        assert not bad.ok and "threads" in bad.failure
        oom = ev.evaluate(TrialConfig(params={"memory_limit": 2 * MB}))
        assert not oom.ok and "memory" in oom.failure.lower()
        assert ev.initialisations == 1  # one golden copy for every trial
    assert not Path(scratch).exists()


def test_refresh_evaluator_commits_and_keeps_the_orders(duck, tmp_path):
    """tpch-refresh: every commit inserts one order with its lines and deletes the oldest
    one, so the table keeps its size; the rate is transactions/s, fsync_mode NONE runs too."""
    from pmem_advisor.engines.duckdb import workload as duck_workloads
    from pmem_advisor.tuner.evaluator import TrialConfig

    ev = duck.evaluator(EvalRequest(
        duck.find_binary(), duck.workload("tpch-refresh"), scale=1, clients=2, duration=1.0,
        warmup=0.2, data_dir=tmp_path / "data", wal_dir=None, workdir=tmp_path,
        catalog=duck.catalog()))
    with ev:
        m = ev.evaluate(TrialConfig(params={"checkpoint_threshold": 1 * MB}))
        assert m.ok and m.throughput_tps > 0, m.failure
        assert m.raw["unit"] == "transactions/s" and m.raw["transactions"] > 0
        unsafe = ev.evaluate(TrialConfig(params={"fsync_mode": "NONE"}))
        assert unsafe.ok and unsafe.raw["transactions"] > 0, unsafe.failure
    con = duck_workloads.open_db(str(tmp_path / "r.duckdb"))
    try:
        duck_workloads.load(con, 1)
        before = con.execute("SELECT count(*), max(o_orderkey) FROM orders").fetchone()
        out = duck_workloads.run_refresh(con, clients=2, duration=0.5, warmup=0.0)
        assert out["ok"] and out["transactions"] > 0, out
        count, top = con.execute("SELECT count(*), max(o_orderkey) FROM orders").fetchone()
        assert count == before[0] and top > before[1]  # as many in as out, new keys
        orphans = con.execute("SELECT count(*) FROM lineitem WHERE l_orderkey NOT IN "
                              "(SELECT o_orderkey FROM orders)").fetchone()[0]
        assert orphans == 0  # each order's lines came and went with it
    finally:
        con.close()


def test_child_over_its_memory_cap_is_killed(tmp_path):
    from pmem_advisor.engines.duckdb.runner import run_child

    ans = run_child({"op": "validate", "db": str(tmp_path / "x.duckdb"), "statements": [],
                     "names": []}, timeout=30, memory_cap=1 * MB)
    assert not ans["ok"] and "memory budget" in ans["failure"]


def test_workload_names(duck):
    with pytest.raises(UsageError, match="does not run on DuckDB"):
        duck.workload("pgbench-tpcb")
    assert duck.workload("tpch-refresh").unit == "transactions"


def test_missing_duckdb_is_exit_3_naming_the_package(duck, monkeypatch):
    import importlib.util

    from pmem_advisor.errors import EnvironmentProblem

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "duckdb" else real(name, *a))
    with pytest.raises(EnvironmentProblem) as e:
        duck.find_binary()
    assert e.value.exit_code == 3 and "duckdb" in str(e.value)
