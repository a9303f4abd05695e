"""Transfer from shipped measurements: only similar scenarios (engine, workload class), never
the excluded one; a shared frame (unit positions, speedups); importances and warm starts."""

from __future__ import annotations

import pytest

from pmem_advisor.tuner import transfer
from pmem_advisor.tuner.space import SpaceKnob
from tests.benchmarks.synthetic import make_dataset


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    d = tmp_path_factory.mktemp("shipped")
    make_dataset(d, "pg-a", rows=40, seed=0)
    make_dataset(d, "pg-b", rows=40, seed=1)
    make_dataset(d, "my-a", rows=20, seed=2, engine="mysql", flavour="mariadb",
                 version="10.11", workload="sysbench-oltp-write-only")
    make_dataset(d, "pg-olap", rows=20, seed=3, workload_class="olap")
    return d


KNOBS = [SpaceKnob("x", "int", "restart", 10, low=1, high=100),
         SpaceKnob("y", "real", "restart", 10.0, low=1.0, high=100.0, log=True),
         SpaceKnob("mode", "enum", "restart", "a", choices=["a", "b"])]


def test_only_similar_scenarios_and_never_the_excluded_one(shipped):
    found = transfer.similar_sources(shipped, engine="postgres", workload_class="oltp-write",
                                     exclude={"pg-a"})
    assert [s.name for s in found] == ["pg-b"]
    assert all(s.engine == "postgres" for s in found)


def test_the_class_a_scenario_defines_today_decides_over_the_recorded_one(shipped):
    """A dataset records the class it was collected under; a later finding that moves its
    scenario to another class must stop the transfer without re-collecting it."""
    now = {"pg-b": "oltp-mixed"}.get
    assert transfer.similar_sources(shipped, engine="postgres", workload_class="oltp-write",
                                    exclude={"pg-a"}, class_of=now) == []
    found = transfer.similar_sources(shipped, engine="postgres", workload_class="oltp-mixed",
                                     class_of=now)
    assert [s.name for s in found] == ["pg-b"]


def test_shared_frame_units_and_speedups(shipped):
    src = transfer.read_source(shipped / "pg-b.jsonl")
    defaults = [sp for p, sp in zip(src.points, src.speedups, strict=True)
                if p == {"x": transfer.to_unit(KNOBS[0], 10),
                         "y": transfer.to_unit(KNOBS[1], 10.0), "mode": 0.0}]
    assert defaults and 0.8 < sorted(defaults)[len(defaults) // 2] < 1.2
    assert all(0.0 <= u <= 1.0 for p in src.points for u in p.values())


def test_importance_and_warm_starts_point_at_the_good_region(shipped):
    sources = transfer.similar_sources(shipped, engine="postgres",
                                       workload_class="oltp-write", exclude={"pg-a"})
    learnt = transfer.Transfer.fit(KNOBS, sources)
    assert max(learnt.importance, key=learnt.importance.get) == "x"
    warm = learnt.warm_starts(2)
    assert len(warm) == 2 and all(45 <= w["x"] <= 95 for w in warm)
    clipped = learnt.warm_starts(2, bounds={"x": [1, 30]})
    assert all(w["x"] <= 30 for w in clipped)


def test_no_sources_no_knowledge():
    learnt = transfer.Transfer.fit(KNOBS, [])
    assert learnt.model is None and learnt.importance == {} and learnt.warm_starts(3) == []


@pytest.mark.parametrize("knob, value", [(KNOBS[0], 37), (KNOBS[1], 12.5),
                                         (KNOBS[2], "b"), (KNOBS[2], "a")])
def test_unit_positions_round_trip(knob, value):
    back = transfer.from_unit(knob, transfer.to_unit(knob, value))
    assert back == pytest.approx(value, rel=0.02) if not isinstance(value, str) else back == value


def test_warm_starts_are_ranked_as_the_clipped_points_they_become():
    """The model's favourite lies outside the bounds (x high, y low); clipped into them it is
    a poor point. The warm start is the best point inside the bounds (y high), not that one."""
    import numpy as np

    class Model:
        def predict(self, rows):
            rows = np.asarray(rows)
            x, y = rows[:, 0], rows[:, 1]
            return np.where((x > 0.8) & (y < 0.1), 1.0, 0.5 + 0.4 * y)

    learnt = transfer.Transfer(KNOBS, ["fake"], {}, Model())
    warm = learnt.warm_starts(1, bounds={"x": [1, 30]})
    assert warm[0]["x"] <= 30
    assert warm[0]["y"] > 70  # before: a clipped x = 30 with y < 2, predicted 0.52


def test_a_source_row_beyond_the_range_keeps_its_own_position(shipped, tmp_path):
    """Candidates are clipped into the space; measured rows are not (a rules value beyond the
    searched range would otherwise stand for the edge's)."""
    import json
    import shutil

    for suffix in (".jsonl", ".provenance.json"):
        shutil.copy(shipped / f"pg-b{suffix}", tmp_path / f"pg-b{suffix}")
    rows = tmp_path / "pg-b.jsonl"
    high = json.loads(rows.read_text().splitlines()[-1])
    high.update(kind="rules", params={**high.get("params", {}), "y": 400.0})
    rows.write_text(rows.read_text() + json.dumps(high) + "\n")
    src = transfer.read_source(rows)
    assert transfer.to_unit(KNOBS[1], 400.0) == 1.0  # a candidate is held in the space
    assert src.points[-1]["y"] == pytest.approx(transfer.to_unit(KNOBS[1], 400.0, clip=False))
    assert src.points[-1]["y"] > 1.0
