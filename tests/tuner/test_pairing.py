"""Search trials measured side by side with rules-only (tuner/pairing.py)."""

from __future__ import annotations

import pytest
from optuna.trial import TrialState

from pmem_advisor.report.describe import timing_line
from pmem_advisor.tuner.pairing import PAIRED_ATTR
from pmem_advisor.tuner.results import summarize
from pmem_advisor.tuner.samplers import make_sampler
from pmem_advisor.tuner.study import counted, measured
from pmem_advisor.tuner.tuner import TuneOptions, Tuner
from pmem_advisor.tuner.verdict import finalists, trial_config
from tests.tuner.synthetic import SwingingHost


def _tune(study_factory, space, ev, trials=12, repeats=0, name="s", **kw):
    study, space = study_factory(space, name=name,
                                 sampler=make_sampler("random", seed=5, n_trials=trials))
    Tuner(study, space, ev, TuneOptions(trials=trials, repeats=repeats, **kw)).run()
    return study, space


def _counted(study):
    """Search trials that used the budget: measured, or failed with the server's reason."""
    return [t for t in study.get_trials() if t.user_attrs.get("role") == "search"
            and counted(t)]


def _search(study):
    return [t for t in study.get_trials() if t.user_attrs.get("role") == "search"
            and measured(t) is not None]


def test_a_search_trial_runs_beside_rules_only_and_is_ranked_by_the_ratio(study_factory,
                                                                         space):
    ev = SwingingHost(seed=3)
    study, _ = _tune(study_factory, space, ev)
    rules = next(t for t in study.get_trials() if t.user_attrs.get("role") == "rules")
    paired = [t for t in _search(study) if "ratio" in t.user_attrs[PAIRED_ATTR]]
    assert len(paired) >= 3
    beside = [t for t in _counted(study) if "against_trial" in t.user_attrs[PAIRED_ATTR]]
    assert len(ev.blocks) == len(beside) > len(paired)  # failures beside it too
    for configs, turn_s, seconds in ev.blocks:
        assert seconds == 13 and turn_s == 4  # (28 s - 2 s warm-up) / 2; the workload's turn
        assert configs[0].params == rules.user_attrs["config"]["params"]
    assert ev.duration == 28  # given back after each trial
    for t in paired:
        rec = t.user_attrs[PAIRED_ATTR]
        assert rec["against_trial"] == rules.number
        assert measured(t) == pytest.approx(rec["ratio"] * measured(rules), rel=1e-4)
        assert rec["ratio"] == pytest.approx(rec["tps"] / rec["rules_tps"], rel=1e-3)
        # the trial's own attributes stay what it measured
        assert t.user_attrs["throughput_tps"] == pytest.approx(rec["tps"], abs=0.1)


def test_paired_values_rank_the_configs_as_they_are_and_single_runs_do_not(study_factory,
                                                                          space):
    def ranking_error(paired_search: bool) -> tuple[int, int]:
        ev = SwingingHost(seed=3)
        study, _ = _tune(study_factory, space, ev, trials=16, name=f"p{paired_search}",
                         paired_search=paired_search)
        trials = _search(study)
        truth = {t.number: ev.score(trial_config(t)) for t in trials}
        best_true = max(truth, key=truth.get)
        picked = max(trials, key=measured).number
        inversions = sum(1 for a in trials for b in trials
                         if truth[a.number] > truth[b.number] and measured(a) < measured(b))
        return inversions, int(picked != best_true)

    paired_inv, paired_miss = ranking_error(True)
    alone_inv, _ = ranking_error(False)
    assert paired_inv == 0 and paired_miss == 0
    assert alone_inv > 0  # the same host, one config after another: swings outrank configs


def test_a_trial_on_another_golden_copy_runs_alone_and_every_output_says_how_many(
        study_factory, space):
    ev = SwingingHost(seed=3, one_copy=True)
    study, _ = _tune(study_factory, space, ev, trials=16)
    records = [t.user_attrs[PAIRED_ATTR] for t in _counted(study)]
    alone = [r for r in records if "alone" in r]
    assert alone and all("init-time settings" in r["alone"] for r in alone)
    timing = study.user_attrs["pmem_advisor.timing"]
    assert timing["side_by_side"] == len(records) - len(alone)
    assert timing["alone"] == len(alone) and timing["search_trials"] == len(records)
    line = timing_line(summarize(study))
    assert (f"{len(records) - len(alone)} of {len(records)} search trials measured side by "
            "side with rules-only") in line
    assert f"{len(alone)} of {len(records)} search trials measured alone (the configs differ" \
        in line


def test_an_evaluator_that_refuses_measures_alone_with_its_reason(study_factory, space):
    ev = SwingingHost(seed=3, refuse="no memory budget (--memory) to hold each server to")
    study, _ = _tune(study_factory, space, ev, trials=6)
    assert ev.blocks == []
    assert all(t.user_attrs[PAIRED_ATTR] == {"alone": ev.refuse} for t in _search(study))
    assert f"measured alone ({ev.refuse})" in timing_line(summarize(study))


def test_no_pairing_for_latency_or_when_turned_off(study_factory, space):
    from tests.tuner.conftest import META

    ev = SwingingHost(seed=3)
    study, space_ = study_factory(space, meta={**META, "objective": "p95"},
                                  sampler=make_sampler("random", seed=5, n_trials=6))
    Tuner(study, space_, ev, TuneOptions(trials=6, repeats=0, objective="p95")).run()
    assert not ev.blocks
    assert {t.user_attrs[PAIRED_ATTR]["alone"] for t in _search(study)} == {
        "the objective is a latency percentile, which turns cannot pool"}

    ev = SwingingHost(seed=3)
    study, _ = _tune(study_factory, space, ev, trials=6, name="off", paired_search=False)
    assert not ev.blocks and all(PAIRED_ATTR not in t.user_attrs for t in _search(study))


def test_a_candidate_that_fails_beside_rules_only_is_its_own_failure(study_factory, space):
    from tests.tuner.synthetic import FAIL_ABOVE

    ev = SwingingHost(seed=0)
    study, _ = _tune(study_factory, space, ev, trials=20)
    failed = [t for t in study.get_trials() if t.state == TrialState.FAIL
              and t.user_attrs.get("role") == "search" and t.user_attrs.get("failure")]
    beside = [t for t in failed if t.user_attrs.get(PAIRED_ATTR, {}).get("failed")]
    assert beside, "the random sampler should hit the failing region on the rules' copy"
    for t in beside:
        assert t.params["shared_buffers"] > FAIL_ABOVE
        assert "could not map anonymous shared memory" in t.user_attrs["failure"]


def test_rules_only_failing_beside_a_candidate_has_the_candidate_measured_alone(
        study_factory, space):
    ev = SwingingHost(seed=3, fail_beside="server crashed: out of memory")
    study, _ = _tune(study_factory, space, ev, trials=6)
    assert _search(study)
    for t in _search(study):
        assert t.user_attrs[PAIRED_ATTR]["alone"] == (
            "rules-only failed beside it (server crashed: out of memory)")
        assert measured(t) == pytest.approx(t.user_attrs["throughput_tps"])


def test_a_side_by_side_that_cannot_be_set_up_measures_alone_and_the_run_goes_on(
        study_factory, space):
    ev = SwingingHost(seed=3, fail_setup="copying the golden data failed: No space left on "
                                         "device")
    study, _ = _tune(study_factory, space, ev, trials=6)
    assert len(_counted(study)) == 4 and _search(study)  # every trial asked was run
    for t in _counted(study):
        assert t.user_attrs[PAIRED_ATTR]["alone"] == (
            "side by side failed (copying the golden data failed: No space left on device)")
    for t in _search(study):
        assert measured(t) == pytest.approx(t.user_attrs["throughput_tps"])


def test_the_finalist_is_the_best_ratio(study_factory, space):
    ev = SwingingHost(seed=3)
    study, _ = _tune(study_factory, space, ev, trials=12)
    paired = _search(study)
    assert len(paired) >= 3 and all("ratio" in t.user_attrs[PAIRED_ATTR] for t in paired)
    best = max(paired, key=lambda t: t.user_attrs[PAIRED_ATTR]["ratio"])
    assert finalists(study, None)["tuned"].number == best.number
