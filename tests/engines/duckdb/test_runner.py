"""DuckDB's evaluator: where the golden copy is loaded and what the trials run in."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("duckdb", reason="PyPI duckdb is not installed (extra: duckdb)")

from pmem_advisor.engines.api import EvalRequest  # noqa: E402
from pmem_advisor.engines.duckdb import runner  # noqa: E402
from pmem_advisor.engines.registry import get_engine  # noqa: E402
from pmem_advisor.tuner.evaluator import TrialConfig  # noqa: E402

MB = 1 << 20


class FakeGroup:
    """Stands in for a MemoryCgroup: records the pids put in it."""

    def __init__(self, limit: int) -> None:
        self._limit, self.added = limit, []

    def limit(self) -> int:
        return self._limit

    def add(self, pid: int) -> None:
        self.added.append(pid)


def test_golden_loads_outside_the_cgroup_trials_inside(tmp_path, monkeypatch):
    """On tmpfs a file stays charged to the cgroup of the process that wrote it, so a golden
    loaded in the budget's group would hold its size of the budget in every trial (and a
    spilling scale would get the loader killed): the load runs outside, with the
    memory_limit DuckDB takes inside a group of the budget's size (80%); trials run inside."""
    duck = get_engine("duckdb")
    calls = []
    real = runner.run_child

    def spy(request, *, timeout, memory_cap=None, cgroup=None):
        calls.append((request["op"], request["statements"], memory_cap, cgroup))
        return real(request, timeout=timeout, memory_cap=memory_cap, cgroup=None)

    monkeypatch.setattr(runner, "run_child", spy)
    group = FakeGroup(1 << 30)
    ev = duck.evaluator(EvalRequest(
        duck.find_binary(), duck.workload("olap-tpch-lite"), scale=1, clients=1,
        duration=0.3, warmup=0.0, data_dir=tmp_path / "data", wal_dir=None, workdir=tmp_path,
        catalog=duck.catalog(), cgroup=group))
    with ev:
        m = ev.evaluate(TrialConfig(params={"threads": 1}))
        assert m.ok, m.failure
    (load_op, load_stmts, load_cap, load_group), (run_op, _, run_cap, run_group) = calls
    assert (load_op, run_op) == ("load", "run")
    assert load_group is None and run_group is group
    assert load_stmts[0] == "SET memory_limit = '819MiB'"  # 80% of the 1 GiB group
    assert load_cap == run_cap == 1 << 30
    assert not Path(ev.scratch).exists()
