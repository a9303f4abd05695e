"""Finalists measured side by side (ManagedEvaluator.evaluate_in_turns): when it may, and a real
PostgreSQL 18 run of three configs in turns, one of them refused by the server."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from pmem_advisor.tuner import managed
from pmem_advisor.tuner.evaluator import TrialConfig
from pmem_advisor.tuner.managed import ManagedEvaluator


def _evaluator(tmp_path, *, duration=28.0, limit=1 << 20, golden=True):
    binary = SimpleNamespace(engine="postgres", flavour="postgresql", version="18.6")
    ev = ManagedEvaluator(binary, SimpleNamespace(), scale=1, clients=1, duration=duration,
                          data_dir=tmp_path / "data", workdir=tmp_path,
                          cgroup=SimpleNamespace(limit_bytes=limit) if limit else None)
    if golden:
        ev.golden_dir.mkdir(parents=True)
        (ev.golden_dir / "base").write_bytes(b"x" * 4096)
    return ev


TWO = [TrialConfig({"work_mem": 4096}), TrialConfig({"work_mem": 8192})]


def test_side_by_side_is_allowed_with_a_budget_room_and_long_enough_runs(tmp_path):
    assert _evaluator(tmp_path).in_turns_refusal(TWO, 4) is None


@pytest.mark.parametrize("case,why", [
    ("one", "one config"),
    ("short", "runs of 6 s are shorter than two turns of 4 s"),
    ("init", "differ in init-time settings"),
    ("budget", "no memory budget (--memory)"),
    ("memory", "MiB available; 2 servers of"),
    ("golden", "no golden copy yet"),
    ("space", "too little for 1 more copies"),
])
def test_side_by_side_is_refused_with_the_reason(tmp_path, monkeypatch, case, why):
    configs = {"one": TWO[:1], "init": [TWO[0], TrialConfig({}, {"wal_segment_size": 64})]
               }.get(case, TWO)
    ev = _evaluator(tmp_path, duration=6.0 if case == "short" else 28.0,
                    limit={"budget": 0, "memory": 1 << 60}.get(case, 1 << 20),
                    golden=case != "golden")
    if case == "space":
        monkeypatch.setattr(managed, "SPACE_FACTOR", 1e15)
    assert why in ev.in_turns_refusal(configs, 4)


def test_the_base_evaluator_measures_one_server_at_a_time():
    from tests.tuner.synthetic import SyntheticEvaluator

    ev = SyntheticEvaluator()
    assert ev.in_turns_refusal(TWO, 4) == "this evaluator runs one server at a time"
    with pytest.raises(NotImplementedError):
        ev.evaluate_in_turns(TWO, 4)


# ------------------------------------------------------------------------------ a real server
def _postmasters(data: Path) -> list[psutil.Process]:
    """The server on ``data`` (postgres -D DIR, mariadbd --datadir=DIR)."""
    d = str(data)
    return [p for p in psutil.process_iter(["cmdline"])
            if any(a == d or a.endswith("=" + d) for a in p.info["cmdline"] or [])]


# per engine: the workload, three configs (the last one the server refuses, or None) and the
# words of its refusal
ENGINES = {
    "postgres": ("pgbench-tpcb", [{"work_mem": 4096}, {"work_mem": 8192},
                                  # wal_level minimal with the default max_wal_senders
                                  {"wal_level": "minimal"}], ("wal_level", "max_wal_senders")),
    "mysql": ("sysbench-oltp-write-only", [{"sort_buffer_size": 262144},
                                          {"sort_buffer_size": 524288},
                                          {"innodb_buffer_pool_size": 2 << 40}],
              ("innodb", "buffer", "memory", "Out of memory", "mmap")),
}


def _family(data: Path) -> list[psutil.Process]:
    return [q for p in _postmasters(data) for q in [p, *p.children(recursive=True)]]


@pytest.mark.server
@pytest.mark.slow
# Turns are the evaluator's, not the engine's: PostgreSQL proves them in make test; the
# MariaDB variant runs in test-all, as test_managed.py::test_tiny_tune_mariadb does.
@pytest.mark.parametrize("engine_name", [
    pytest.param(e, marks=pytest.mark.long) if e != "postgres" else e for e in sorted(ENGINES)])
def test_three_configs_in_turns_one_refused(shm_dir, engine_name):
    from pmem_advisor.engines.api import EvalRequest
    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.instances.cgroup import CgroupUnavailable, MemoryCgroup

    engine = get_engine(engine_name)
    try:
        binary = engine.find_binary(None, None)
    except Exception as e:  # noqa: BLE001 - no such server here
        pytest.skip(f"no {engine_name} server here: {e}")
    workload_name, params, words = ENGINES[engine_name]
    try:
        group = MemoryCgroup.create(f"test-turns-{os.getpid()}", 1 << 30)
    except CgroupUnavailable as e:
        pytest.skip(f"no memory cgroup can be made here: {e}")
    ev = engine.evaluator(EvalRequest(
        binary, engine.workload(workload_name), scale=1, clients=2, duration=4, warmup=1,
        data_dir=shm_dir, wal_dir=None, workdir=None, catalog=engine.catalog(
            binary.flavour, binary.version), cgroup=group))
    seen: dict[str, set[str]] = {}

    def on_phase(name, expected_s, then):
        if name == "turn 1 of 2: config 2":  # config 1's server is on the user's directory
            procs = _family(shm_dir)
            deadline = time.monotonic() + 5  # SIGSTOP is delivered, not waited for
            while time.monotonic() < deadline:
                seen["config 1"] = {q.status() for q in procs}
                if seen["config 1"] == {psutil.STATUS_STOPPED}:
                    break
                time.sleep(0.05)

    ev.on_phase = on_phase
    try:
        assert ev.evaluate(TrialConfig()).ok  # a trial: the golden copy exists from here on
        configs = [TrialConfig(p) for p in params]
        assert ev.in_turns_refusal(configs, 2) is None
        ms = ev.evaluate_in_turns(configs, 2)  # two turns of 2 s: as the demo's 7 of 4 s
        assert [m.ok for m in ms] == [True, True, False], [m.failure for m in ms]
        assert any(w.lower() in ms[2].failure.lower() for w in words), ms[2].failure
        for m in ms[:2]:
            # each turn measured: a load generator's last 1 s report can be lost at its exit
            # on a loaded machine, so a 2 s turn may count one second
            assert m.throughput_tps > 0 and m.duration_s >= m.raw["turns"]
            assert m.raw["turns"] == 2 and m.raw["turn_s"] == 2 and m.raw["side_by_side"] == 3
            assert len(m.raw["turn_tps"]) == 2
        assert seen["config 1"] == {psutil.STATUS_STOPPED}  # paused while config 2 ran
        # nothing of the side-by-side block is left: servers, directories, memory cgroups
        assert not _postmasters(shm_dir)
        assert not [p for p in shm_dir.parent.iterdir() if p.name.startswith(".pmem-advisor")]
        assert not list(group.path.parent.glob(f"pmem-advisor-turn*-{os.getpid()}"))
        assert ev.evaluate(TrialConfig(params[0])).ok  # the evaluator goes on
    finally:
        ev.close()
        group.remove()
    assert not _postmasters(shm_dir)


@pytest.mark.server
@pytest.mark.slow
def test_pgbench_turns_are_one_second_each_measured(shm_dir):
    """The verdict's turns are pgbench's own length (1 s): each turn is a run of its own
    with a throughput, none lost to the load generator's start."""
    from pmem_advisor.engines.api import EvalRequest
    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.instances.cgroup import CgroupUnavailable, MemoryCgroup
    from pmem_advisor.tuner.verdict import turn_seconds

    engine = get_engine("postgres")
    try:
        binary = engine.find_binary(None, None)
    except Exception as e:  # noqa: BLE001 - no such server here
        pytest.skip(f"no postgres server here: {e}")
    try:
        group = MemoryCgroup.create(f"test-turns1-{os.getpid()}", 1 << 30)
    except CgroupUnavailable as e:
        pytest.skip(f"no memory cgroup can be made here: {e}")
    ev = engine.evaluator(EvalRequest(
        binary, engine.workload("pgbench-tpcb"), scale=1, clients=2, duration=3, warmup=1,
        data_dir=shm_dir, wal_dir=None, workdir=None, catalog=engine.catalog(
            binary.flavour, binary.version), cgroup=group))
    try:
        assert turn_seconds(ev) == 1
        assert ev.evaluate(TrialConfig()).ok  # the golden copy
        configs = [TrialConfig({"work_mem": 4096}), TrialConfig({"work_mem": 8192})]
        assert ev.in_turns_refusal(configs, 1) is None
        ms = ev.evaluate_in_turns(configs, turn_seconds(ev))
        for m in ms:
            assert m.ok, m.failure
            assert m.raw["turns"] == 3 and m.raw["turn_s"] == 1
            assert len(m.raw["turn_tps"]) == 3 and min(m.raw["turn_tps"]) > 0
    finally:
        ev.close()
        group.remove()
    assert not _postmasters(shm_dir)
