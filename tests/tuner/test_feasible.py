"""Feasible spaces: what the data demands (an arena that holds it, an allocation unit no larger
than the records), the manual's sane ranges, the defaults baseline's smallest fix, and the
refusal of a scale no config within the budget can hold."""

from __future__ import annotations

import optuna
import pytest

from pmem_advisor.engines.registry import get_engine
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.tuner.evaluator import Measurement
from pmem_advisor.tuner.feasible import DataBound, baseline_fixes, by_knob, check_catalog
from pmem_advisor.tuner.limits import Limits
from pmem_advisor.tuner.session import data_limits
from pmem_advisor.tuner.space import KnobSpec, build_space
from pmem_advisor.tuner.tuner import OVER_BUDGET_ATTR, TuneOptions, Tuner, trial_config

GB, MB = 1 << 30, 1 << 20


class _Binary:
    flavour = "tarantool"
    version = "2.6.0"


def tarantool(scale: int, memory: int, *, rules: bool = False):
    engine = get_engine("tarantool")
    catalog = load_catalog("tarantool", "tarantool", "2.6")
    specs = {k.name: KnobSpec.from_knob(k) for k in catalog}
    workload = engine.workload("ycsb-b")
    rule_bounds = {"memtx_memory": (768 * MB, 1024 * MB)} if rules else {}
    limits = data_limits(engine, workload, scale, catalog, specs, Limits(memory), rule_bounds,
                         binary=_Binary(), budget_bytes=memory)
    space = build_space(specs, engine="tarantool", flavour="tarantool", version="2.6",
                        important=[], use_rules=False, limits=limits)
    return space, limits


def test_tarantool_defaults_get_the_smallest_arena_that_holds_the_data():
    space, _ = tarantool(489, 2 * GB)  # ~513 MiB of tuples: the default 256 MiB cannot hold it
    knobs = {k.name: k for k in space.knobs}
    arena = knobs["memtx_memory"]
    assert arena.source == "data" and arena.low >= 513 * MB * 1.2
    assert space.default_fixes == {"memtx_memory": int(arena.low)}  # nothing else changes
    assert trial_config(space, {}, "default").params == {"memtx_memory": int(arena.low)}
    assert any("smallest change" in n and "memtx_memory" in n for n in space.fix_notes)
    # the default baseline as Optuna stores it is inside the space
    assert arena.low <= space.default_params["memtx_memory"] <= arena.high


def test_tarantool_small_data_keeps_the_plain_defaults():
    space, _ = tarantool(10, 2 * GB)
    assert space.default_fixes == {} and space.fix_notes == []
    assert trial_config(space, {}, "default").params == {}


def test_tarantool_min_tuple_size_never_above_the_records():
    space, _ = tarantool(10, 24 * GB)  # the budget's 1/64 share would allow 384 MiB
    knobs = {k.name: k for k in space.knobs}
    assert knobs["memtx_min_tuple_size"].high <= 1024
    assert knobs["readahead"].high <= 1 * MB  # the manual's sane range, not 2 GB


def test_rocksdb_block_and_memtables_stay_in_the_manuals_range():
    catalog = load_catalog("rocksdb", "rocksdb", "7.8")
    specs = {k.name: KnobSpec.from_knob(k) for k in catalog}
    space = build_space(specs, engine="rocksdb", flavour="rocksdb", version="7.8",
                        important=[], use_rules=False, limits=Limits(2 * GB))
    knobs = {k.name: k for k in space.knobs}
    assert 1024 <= knobs["block_size"].low and knobs["block_size"].high <= 64 * 1024
    assert knobs["max_background_jobs"].high <= 16
    assert knobs["max_write_buffer_number"].high <= 8
    assert knobs["write_buffer_size"].high <= 512 * MB
    assert knobs["level0_file_num_compaction_trigger"].high < 20  # slowdown trigger


def test_a_scale_that_cannot_fit_is_refused_naming_the_scale_that_does():
    with pytest.raises(UsageError) as e:
        tarantool(5000, 2 * GB)  # ~5.1 GiB of tuples in a 2 GiB budget
    msg = str(e.value)
    assert "scale 5000" in msg and "memtx_memory" in msg and "--scale " in msg
    fit = int(msg.split("--scale ")[1].split()[0])
    tarantool(fit, 2 * GB)  # the scale it names does fit
    with pytest.raises(UsageError):
        tarantool(fit + 1, 2 * GB)


def test_the_rules_upper_bound_limits_the_scale_too():
    with pytest.raises(UsageError, match="memtx_memory"):
        tarantool(900, 2 * GB, rules=True)  # needs ~1.2 GiB, the rules allow 1 GiB


def test_a_bound_the_version_cannot_take_names_the_knob():
    specs = {k.name: KnobSpec.from_knob(k)
             for k in load_catalog("tarantool", "tarantool", "2.6")}
    with pytest.raises(UsageError, match="knob memtx_memory: .*more than tarantool 2.6"):
        check_catalog([DataBound("memtx_memory", low=2 << 40, reason="x")], specs, "2.6",
                      "tarantool")
    with pytest.raises(UsageError, match="knob no_such_knob"):
        check_catalog([DataBound("no_such_knob", low=1, reason="x")], specs, "2.6",
                      "tarantool")


def test_bounds_on_one_knob_intersect_and_fixes_move_the_least():
    merged = by_knob([DataBound("a", low=10, reason="r1"), DataBound("a", low=20, high=50,
                                                                       reason="r2")])
    assert (merged["a"].low, merged["a"].high) == (20, 50)
    fixes, notes = baseline_fixes(merged.values(), {"a": 5})
    assert fixes == {"a": 20} and len(notes) == 1
    assert baseline_fixes(merged.values(), {"a": 30}) == ({}, [])


class _Counting:
    """An evaluator that measures every config it is given (none should be over budget)."""

    def __init__(self) -> None:
        self.configs = []

    def evaluate(self, config):
        self.configs.append(config)
        return Measurement(ok=True, throughput_tps=100.0 + len(self.configs))

    def close(self) -> None: ...


def test_sampled_configs_over_the_budget_are_resampled_not_failed():
    space, _ = tarantool(10, 2 * GB)

    def gate(params):  # half the arena range is "over the budget"
        arena = params.get("memtx_memory")
        return "over" if arena is not None and arena > 600 * MB else None

    study = optuna.create_study(direction="maximize",
                                sampler=optuna.samplers.RandomSampler(seed=3))
    from pmem_advisor.tuner.study import ROLE_ATTR

    for role, params in (("default", space.default_params),):
        study.enqueue_trial(params, user_attrs={ROLE_ATTR: role})
    ev = _Counting()
    tuner = Tuner(study, space, ev, TuneOptions(trials=6, repeats=0, memory_gate=gate))
    tuner.run()
    trials = study.get_trials()
    assert len(ev.configs) == 6  # every counted trial ran
    assert all(gate(c.params) is None for c in ev.configs[1:])
    skipped = [t for t in trials if t.user_attrs.get(OVER_BUDGET_ATTR)]
    assert skipped and all(not t.user_attrs.get("failure") for t in skipped)


def test_duckdb_default_memory_limit_is_brought_within_the_budget():
    engine = get_engine("duckdb")
    catalog = load_catalog("duckdb", "duckdb", "2.0")
    specs = {k.name: KnobSpec.from_knob(k) for k in catalog}

    class Binary:
        flavour, version = "duckdb", "2.0.1"

    limits = data_limits(engine, engine.workload("olap-tpch-lite"), 60, catalog, specs,
                         Limits(1 * GB), {}, binary=Binary(), budget_bytes=1 * GB)
    space = build_space(specs, engine="duckdb", flavour="duckdb", version="2.0",
                        important=[], use_rules=False, limits=limits)
    knobs = {k.name: k for k in space.knobs}
    assert knobs["memory_limit"].high <= 0.8 * GB
    assert knobs["memory_limit"].low < knobs["memory_limit"].high
    assert space.default_fixes == {"memory_limit": int(knobs["memory_limit"].high)}
    assert knobs["threads"].high <= 32
