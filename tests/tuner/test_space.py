from __future__ import annotations

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.tuner.space import SearchSpace
from tests.tuner.conftest import make_space


def test_space_from_rules_minus_unsafe(space):
    names = [k.name for k in space.knobs]
    assert "synchronous_commit" not in names  # durability-risk
    assert "data_directory" not in names  # not tunable
    assert names[-1] == "wal_segment_size"  # reinit knobs last (cost order)
    d = space.distributions()
    assert isinstance(d["shared_buffers"], IntDistribution) and d["shared_buffers"].log
    assert (d["shared_buffers"].low, d["shared_buffers"].high) == (16384, 1_000_000)
    assert isinstance(d["checkpoint_completion_target"], FloatDistribution)
    assert isinstance(d["wal_segment_size"], CategoricalDistribution)
    assert list(d["wal_segment_size"].choices) == [16, 64, 256]
    # Rule settings outside the space stay as base settings of every tuned trial.
    assert space.base == {"effective_io_concurrency": 200}
    assert space.rules_params["shared_buffers"] == 262144
    assert space.default_params["shared_buffers"] == 16384


def test_allow_unsafe_and_extra_knobs():
    s = make_space(allow_unsafe=True)
    assert "synchronous_commit" in [k.name for k in s.knobs]
    with pytest.raises(UnknownKnobError):
        make_space(extra_knobs=["shared_bufers"])
    with pytest.raises(UsageError):
        make_space(extra_knobs=["synchronous_commit"])


def test_no_rules_has_no_rules_baseline():
    s = make_space(use_rules=False, important=[])
    assert s.rules_params is None and s.base == {} and s.reasons == {}
    assert "shared_buffers" in [k.name for k in s.knobs]  # from the default knob list


def test_baselines_inside_the_range():
    # A default below the rules' lower bound widens the range instead of being clamped.
    s = make_space(bounds={"shared_buffers": (100_000, 200_000)})
    d = s.distributions()["shared_buffers"]
    assert d.low == 16384 and d.high == 262144


def test_round_trip(space):
    again = SearchSpace.from_dict(space.to_dict())
    assert again == space
