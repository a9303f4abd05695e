from __future__ import annotations

import pytest
from optuna.trial import TrialState

from pmem_advisor.errors import UsageError
from pmem_advisor.tuner.evaluator import Measurement, TrialConfig
from pmem_advisor.tuner.results import summarize
from pmem_advisor.tuner.samplers import make_sampler
from pmem_advisor.tuner.study import REMEASURE_ATTR, SLO_CONSTRAINT, counted, measured
from pmem_advisor.tuner.tuner import Observer, TuneOptions, Tuner
from pmem_advisor.tuner.verdict import is_verdict
from tests.tuner.conftest import META
from tests.tuner.synthetic import FAIL_ABOVE, SyntheticEvaluator


def run(study, space, ev, **kw):
    opts = TuneOptions(**{"trials": 14, "repeats": 2, **kw})
    Tuner(study, space, ev, opts).run()
    return opts


def test_baselines_first_then_search(study_factory, space):
    sampler = make_sampler("tpe", seed=3, n_trials=14)
    study, space = study_factory(space, sampler=sampler)
    ev = SyntheticEvaluator(seed=3)
    run(study, space, ev)
    trials = study.get_trials()
    assert trials[0].user_attrs["role"] == "default" and ev.calls[0] == TrialConfig()
    assert trials[1].user_attrs["role"] == "rules"
    assert ev.calls[1].params["shared_buffers"] == 262144
    assert ev.calls[1].params["effective_io_concurrency"] == 200  # base rule setting
    assert ev.calls[1].init_params == {"wal_segment_size": 64}
    assert {t.user_attrs["role"] for t in trials[2:]} - {"verdict"} == {"search"}
    assert len([t for t in trials if measured(t) is not None and not is_verdict(t)]) >= 10
    # Cost grouping: at most 3 golden copies, and search trials run in blocks per copy.
    inits = [c.init_key() for c in ev.calls[:14]]  # the search (re-measurement interleaves)
    assert len(set(inits)) <= 3
    switches = sum(1 for a, b in zip(inits, inits[1:], strict=False) if a != b)
    assert switches <= 6


def test_failures_recorded_and_search_continues(study_factory, space):
    study, space = study_factory(space, sampler=make_sampler("random", seed=0, n_trials=20))
    ev = SyntheticEvaluator(seed=0)
    run(study, space, ev, trials=20, repeats=0)
    failed = [t for t in study.get_trials() if t.state == TrialState.FAIL]
    assert failed, "the random sampler should hit the failing region"
    for t in failed:
        assert t.params["shared_buffers"] > FAIL_ABOVE
        assert "could not map anonymous shared memory" in t.user_attrs["failure"]
    s = summarize(study)
    assert s["trials_failed"] == len(failed)
    assert s["trials_completed"] + s["trials_failed"] == 20


def test_remeasure_and_summary(study_factory, space):
    study, space = study_factory(space, sampler=make_sampler("tpe", seed=5, n_trials=14))
    ev = SyntheticEvaluator(seed=5)
    run(study, space, ev, repeats=8)
    rem = study.user_attrs[REMEASURE_ATTR]
    s = summarize(study)
    v = s["verdict"]
    # tuned, rules-only and defaults, each re-measured in every round until decided
    assert {"0", "1"} <= set(rem) and len(rem) == 3
    assert all(len(runs) == v["rounds"] for runs in rem.values())
    best, rules, default = s["best"], s["baselines"]["rules"], s["baselines"]["default"]
    assert best["role"] == v["emit"] and best["runs"] == v["rounds"]
    # The synthetic optimum is far above the default; the rules already help.
    assert rules["throughput_tps"] > default["throughput_tps"]
    g = s["rules_gain_vs_default"]
    assert g["decision"] == "better" and 0 < g["ci_low_pct"] <= g["gain_pct"] <= g["ci_high_pct"]
    assert s["spread_pct"] is not None and s["spread_pct"] < 10
    assert set(s["importance"]) <= {k.name for k in space.knobs} and s["importance"]


def test_latency_slo_makes_configs_infeasible(study_factory, space):
    meta = {**META, "latency_slo_ms": 1e-3}
    sampler = make_sampler("tpe", seed=1, n_trials=6)
    study, space = study_factory(space, meta=meta, sampler=sampler)
    run(study, space, SyntheticEvaluator(), trials=6, repeats=0, latency_slo_ms=1e-3)
    t = study.get_trials()[2]
    assert t.constraints[SLO_CONSTRAINT] > 0
    s = summarize(study)
    assert s["best"] is None and s["trials_infeasible"] == 6


@pytest.mark.parametrize("name", ["random", "cmaes", "tpe"])
def test_samplers_run(study_factory, space, name):
    study, space = study_factory(space, sampler=make_sampler(name, seed=0, n_trials=6))
    run(study, space, SyntheticEvaluator(), trials=6, repeats=0)
    assert len(study.get_trials()) == 6


def test_unknown_sampler():
    with pytest.raises(UsageError):
        make_sampler("bogus", seed=0, n_trials=3)


class _Interrupting(SyntheticEvaluator):
    def __init__(self, after: int) -> None:
        super().__init__()
        self.after = after

    def evaluate(self, config: TrialConfig) -> Measurement:
        if len(self.calls) == self.after:
            self.calls.append(config)
            raise KeyboardInterrupt
        return super().evaluate(config)


def test_interrupt_then_resume_loses_nothing(study_factory, space):
    study, space = study_factory(space)
    with pytest.raises(KeyboardInterrupt):
        run(study, space, _Interrupting(after=1), trials=5, repeats=0)
    # The rules-only trial was interrupted: it is failed, marked, and queued again.
    t1 = study.get_trials()[1]
    assert t1.state == TrialState.FAIL and "KeyboardInterrupt" in t1.user_attrs["interrupted"]
    done_before = [t.number for t in study.get_trials() if measured(t) is not None]
    study2, space2 = study_factory(None, resume=True)
    assert space2 == space
    ev = SyntheticEvaluator()
    run(study2, space2, ev, trials=5, repeats=0)
    assert ev.calls[0].params["shared_buffers"] == 262144  # the rules trial ran again first
    trials = study2.get_trials()
    assert [t.number for t in trials if measured(t) is not None][:1] == done_before
    # The synthetic server refuses some sampled configs: those count against the budget too.
    assert sum(counted(t) for t in trials) == 5
    assert summarize(study2)["baselines"]["rules"] is not None


def test_study_checks(study_factory, space):
    study_factory(space)
    with pytest.raises(UsageError, match="already exists"):
        study_factory(space)
    with pytest.raises(UsageError, match="workload"):
        study_factory(space, resume=True, meta={**META, "workload": "sysbench-oltp"})
    with pytest.raises(UsageError, match="flavour"):
        study_factory(space, resume=True, meta={**META, "flavour": "mariadb"})
    with pytest.raises(UsageError, match="no study"):
        study_factory(None, resume=True, name="other")


def test_observer_sees_every_trial(study_factory, space):
    seen = []

    class Rec(Observer):
        def trial_finished(self, trial, best):
            seen.append((trial.number, best.number if best else None))

    study, space = study_factory(space)
    Tuner(study, space, SyntheticEvaluator(), TuneOptions(trials=4, repeats=0), Rec()).run()
    assert [n for n, _ in seen] == [0, 1, 2, 3] and all(b is not None for _, b in seen)
