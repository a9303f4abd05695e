"""The final verdict: decided from the repeated, interleaved runs, with honest alpha, by one
worker, stored where every report and Optuna's best trial read it."""

from __future__ import annotations

import math
import statistics
import threading

import pytest
from optuna.trial import TrialState

from pmem_advisor.errors import EnvironmentProblem
from pmem_advisor.report.describe import verdict_line
from pmem_advisor.tuner.evaluator import Measurement
from pmem_advisor.tuner.results import summarize
from pmem_advisor.tuner.samplers import make_sampler
from pmem_advisor.tuner.stats import min_p_value
from pmem_advisor.tuner.study import REMEASURE_ATTR, as_complete, measured
from pmem_advisor.tuner.tuner import TuneOptions, Tuner
from pmem_advisor.tuner.verdict import (
    EQUIVALENCE_MAX_PCT,
    MIN_CHANGE_PCT,
    TURN_S,
    VERDICT_ATTR,
    decide,
    make_plan,
    next_decision,
    settles,
)
from tests.tuner.synthetic import SyntheticEvaluator

TUNED = [1100.0, 1120.0, 1090.0, 1110.0, 1105.0]
RULES = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
DEFAULTS = [800.0, 810.0, 790.0, 805.0, 795.0]


def test_plan_spends_alpha_over_looks_and_pairs():
    plan = make_plan(8, ["tuned", "rules", "default"])
    # two comparisons decide what is emitted (tuned vs rules-only, rules-only vs defaults);
    # tuned vs defaults is reported only and takes no share of alpha
    assert plan.comparisons == 2
    # a tenth of alpha at the early look, the rest at the last: together never above alpha
    first, last = plan.alpha_at(plan.looks[0]), plan.alpha_at(None)
    assert first == pytest.approx(0.05 * 0.1 / 2) and last == pytest.approx(0.05 * 0.9 / 2)
    assert plan.alpha_per_test == last and plan.alpha_at(8) == last
    assert 2 * (first + last) == pytest.approx(0.05)
    # unpaired, the first look is the first round where n vs n runs can reach its level
    assert plan.looks == (6, 8)
    assert min_p_value(6) <= first < min_p_value(5)
    assert make_plan(3, ["tuned", "rules", "default"]).looks == (3,)
    one = make_plan(8, ["rules", "default"])
    assert one.comparisons == 1
    # paired rounds look at the third round; with one look all of alpha goes to it
    paired = make_plan(8, ["tuned", "rules", "default"], paired=True)
    assert paired.looks == (3, 8) and paired.alpha_at(3) == pytest.approx(0.0025)
    assert make_plan(3, ["tuned", "rules"], paired=True).alpha_at(3) == pytest.approx(0.05)


def test_equal_split_would_not_decide_what_the_uneven_split_does():
    """Eight paired rounds whose tuned/rules-only ratio varies by about 6% a round and
    centres on -1%: the last look's interval bounds the gain within 10% (a decision), which
    an equal split of alpha over the two looks and three pairs (99.2%) did not."""
    tuned = [7533.0, 7814.0, 7033.0, 7767.0, 7965.0, 9674.0, 9718.0, 8974.0]
    rules = [7700.0, 6836.0, 7687.0, 8672.0, 8382.0, 9047.0, 9126.0, 9984.0]
    plan = make_plan(8, ["tuned", "rules"], paired=True)
    by_round = {"tuned": dict(enumerate(tuned, 1)), "rules": dict(enumerate(rules, 1))}
    v = decide({"tuned": tuned, "rules": rules}, plan, final=True, by_round=by_round)
    c = v["comparisons"]["tuned_vs_rules"]
    assert v["kind"] == "equivalent" and c["upper_bound_pct"] <= EQUIVALENCE_MAX_PCT
    from pmem_advisor.tuner.stats import compare_paired

    equal = compare_paired(tuned, rules, alpha=0.05 / 6)
    assert equal["ci_high_pct"] > EQUIVALENCE_MAX_PCT  # the old level left it inconclusive
    # at the early look the same runs decide nothing (a tenth of alpha)
    early = decide({r: x[:3] for r, x in (("tuned", tuned), ("rules", rules))}, plan,
                   final=False, by_round={r: {k: d[k] for k in (1, 2, 3)}
                                          for r, d in by_round.items()}, look=3)
    assert early["kind"] == "undecided"


def test_interval_and_decision_come_from_the_runs():
    plan = make_plan(5, ["tuned", "rules", "default"])
    v = decide({"tuned": TUNED, "rules": RULES, "default": DEFAULTS}, plan, final=True)
    c = v["comparisons"]["tuned_vs_rules"]
    assert v["kind"] == "better" and v["emit"] == "tuned"
    assert c["gain_pct"] == pytest.approx(100 * (statistics.median(TUNED)
                                                 / statistics.median(RULES) - 1))
    # the interval of the ratio of medians lies between the most extreme ratios of runs
    assert min(TUNED) / max(RULES) - 1 <= c["ci_low_pct"] / 100 <= c["gain_pct"] / 100
    assert c["gain_pct"] / 100 <= c["ci_high_pct"] / 100 <= max(TUNED) / min(RULES) - 1
    assert c["p_value"] == pytest.approx(min_p_value(5))  # perfectly separated, exact test
    assert c["confidence"] == pytest.approx(1 - 0.05 / 2)  # one look, two deciding pairs
    assert v["text"].startswith("tuned is better by 10.5% [")
    # one disturbed run changes the interval: it is computed from these runs
    other = decide({"tuned": [*TUNED[:4], 1500.0], "rules": RULES, "default": DEFAULTS},
                   plan, final=True)["comparisons"]["tuned_vs_rules"]
    assert other["ci_high_pct"] != c["ci_high_pct"]


def _rounds(**ratios):
    """Six paired rounds: each role's runs, its ratio to 1000 tps in every round, the host's
    swing (the same for every config of a round) multiplying them all."""
    swing = [1.00, 0.93, 1.05, 0.97, 1.02, 0.95]
    jitter = [1.004, 0.997, 1.002, 0.996, 1.003, 0.998]
    values = {r: [1000.0 * x * s * (j if r == "tuned" else 1 / j)
                  for s, j in zip(swing, jitter, strict=True)] for r, x in ratios.items()}
    return values, {r: dict(enumerate(v, 1)) for r, v in values.items()}


@pytest.mark.parametrize("gain,kind,emit", [(1.03, "equivalent", "rules"),
                                            (1.08, "better", "tuned")])
def test_a_gain_is_acted_on_only_when_it_is_worth_a_change(gain, kind, emit):
    values, by_round = _rounds(tuned=gain, rules=1.0, default=1.0)
    plan = make_plan(6, list(values), paired=True)
    v = decide(values, plan, final=True, by_round=by_round)
    c = v["comparisons"]["tuned_vs_rules"]
    assert c["decision"] == "better"  # significant either way: the test is not what differs
    assert v["kind"] == kind and v["emit"] == emit and v["decided"]
    assert v["min_change_pct"] == MIN_CHANGE_PCT == 5.0
    if kind == "equivalent":
        assert v.get("small_gain") and v["bound_pct"] <= EQUIVALENCE_MAX_PCT
        assert v["text"].startswith("equivalent: tuned is better by 3.0% [")
        assert "less than the 5% worth a change" in v["text"]
        assert v["text"].endswith("keep rules")


@pytest.mark.parametrize("rules,keep,said", [
    (0.97, "rules", "less than the 5% worth a change: rules-only is kept"),
    (0.92, "default", "the defaults are kept")])
def test_rules_only_gives_way_to_the_defaults_only_when_the_loss_is_worth_a_change(
        rules, keep, said):
    values, by_round = _rounds(tuned=rules, rules=rules, default=1.0)
    v = decide(values, make_plan(6, list(values), paired=True), final=True,
               by_round=by_round)
    assert v["comparisons"]["rules_vs_default"]["decision"] == "worse"
    assert v["emit"] == keep and v["compared"] == ["tuned", keep]
    assert said in v["text_full"]


def test_without_a_tuned_config_rules_only_needs_only_significance_over_the_defaults():
    both, _ = _rounds(tuned=1.03, rules=1.0)  # a jittered +3% ratio, as rules-only's here
    values = {"rules": both["tuned"], "default": both["rules"]}
    by_round = {r: dict(enumerate(v, 1)) for r, v in values.items()}
    v = decide(values, make_plan(6, list(values), paired=True), final=True,
               by_round=by_round)
    assert v["comparisons"]["rules_vs_default"]["decision"] == "better"
    assert v["kind"] == "better" and v["emit"] == "rules"


def test_what_was_emitted_says_the_least_change_it_needed():
    from pmem_advisor.report.describe import emitted_line

    summary = {"best": {"role": "rules", "trial": 1}, "verdict": {"min_change_pct": 5.0}}
    assert emitted_line(summary).endswith("nothing tuned beat it significantly by 5% or more")
    summary["verdict"] = {}  # a study decided before the rule says what it said then
    assert emitted_line(summary).endswith("nothing tuned beat it significantly")


def test_a_config_compared_with_itself_is_equivalent_within_a_stated_bound():
    same = [1000.0, 1012.0, 991.0, 1004.0, 996.0, 1008.0, 999.0, 1003.0]
    plan = make_plan(8, ["tuned", "rules", "default"])
    v = decide({"tuned": list(same), "rules": list(same), "default": DEFAULTS * 2}, plan,
               final=True)
    c = v["comparisons"]["tuned_vs_rules"]
    assert v["kind"] == "equivalent" and v["emit"] == "rules" and v["decided"]
    # the bound is the one-sided upper bound, rounded up: no gain beyond it is left possible
    up = c["upper_bound_pct"]
    assert c["gain_pct"] < up < c["ci_high_pct"]  # one-sided: inside the two-sided interval
    assert up <= v["bound_pct"] < up + 0.1 + 1e-9
    assert v["bound_pct"] <= EQUIVALENCE_MAX_PCT
    assert v["text"].startswith(f"equivalent: tuned beats rules-only by at most "
                                f"{v['bound_pct']:.1f}% at 95% confidence")
    assert v["text"].endswith("keep rules")
    assert c["decision"] == "none"
    assert "rules-only beats server defaults" in v["text_full"]
    # decided before the last round: equivalence stops the rounds like a significant gain
    assert decide({"tuned": same[:5], "rules": same[:5]}, plan, final=False)["kind"] == \
        "equivalent"


def test_equivalence_on_synthetic_runs_of_known_noise():
    """Two configs drawn from one distribution with 2% noise: 8 interleaved runs each bound
    the difference well within the equivalence limit in most draws; with 20% noise they
    cannot, and the verdict says how many runs would."""
    import numpy as np

    rng = np.random.default_rng(11)
    plan = make_plan(8, ["tuned", "rules"])
    kinds = []
    for _ in range(20):
        a, b = (list(1000 * (1 + 0.02 * rng.standard_normal(8))) for _ in range(2))
        kinds.append(decide({"tuned": a, "rules": b}, plan, final=True)["kind"])
    assert kinds.count("equivalent") >= 16 and "better" not in kinds
    a, b = (list(1000 * (1 + 0.2 * rng.standard_normal(8))) for _ in range(2))
    v = decide({"tuned": a, "rules": b}, plan, final=True)
    assert v["kind"] == "inconclusive" and v["emit"] == "rules"
    assert v["runs_needed"] > 8
    assert f"about {v['runs_needed']} interleaved runs per config would " in v["text"]


def test_the_equivalence_bound_is_one_sided_at_the_tests_alpha():
    """A TOST's upper half: with a true gain of exactly the bound, the verdict may rule that gain
    out ("equivalent") in at most alpha of the draws, the level it states, not alpha / 2 (the
    two-sided interval's upper end) nor more. Six paired rounds, 6% noise per round."""
    import numpy as np
    from scipy import stats as st

    from pmem_advisor.tuner.stats import compare_paired

    plan = make_plan(6, ["tuned", "rules", "default"], paired=True)
    alpha = plan.alpha_per_test
    rng = np.random.default_rng(5)
    true_gain = math.log(1 + EQUIVALENCE_MAX_PCT / 100)
    draws, ruled_out = 4000, 0
    for _ in range(draws):
        d = true_gain + 0.06 * rng.standard_normal(6)
        rules = list(1000 * np.exp(0.03 * rng.standard_normal(6)))
        tuned = list(np.array(rules) * np.exp(d))
        c = compare_paired(tuned, rules, alpha=alpha)
        ruled_out += c["upper_bound_pct"] <= EQUIVALENCE_MAX_PCT
    rate = ruled_out / draws
    assert st.binomtest(ruled_out, draws, alpha).pvalue > 0.001, rate  # at its level ...
    assert alpha / 2 < rate < 1.5 * alpha  # ... neither half of it nor much above
    # the bound equals the upper end of the two-sided interval at twice the alpha
    tuned, rules = [1030.0, 990.0, 1010.0, 1050.0, 970.0, 1000.0], [1000.0] * 6
    one = compare_paired(tuned, rules, alpha=alpha)
    two = compare_paired(tuned, rules, alpha=2 * alpha)
    assert one["upper_bound_pct"] == pytest.approx(two["ci_high_pct"])


def test_a_worse_tuned_config_waits_for_the_rules_vs_defaults_question():
    """At the early look, a tuned config clearly worse than rules-only does not end the rounds
    while rules-only vs defaults is open: which of the two to keep is not known yet. Decided
    verdicts end them; an undecided one does not (the rounds and benchmarks.studies.verdict_power
    stop on the same rule)."""
    plan = make_plan(6, ["tuned", "rules", "default"], paired=True)
    rules = [1000.0, 1080.0, 940.0]
    runs = {"tuned": [r * 0.7 for r in rules], "rules": rules,
            "default": [1010.0, 990.0, 1060.0]}
    v = decide(runs, plan, final=False, look=3,
               by_round={r: dict(enumerate(x)) for r, x in runs.items()})
    assert v["kind"] == "worse" and v["comparisons"]["rules_vs_default"]["decision"] == "none"
    assert not settles(v)
    assert settles({"kind": "equivalent", "decided": True})
    assert not settles({"kind": "undecided", "decided": False})


def test_runs_needed_shrinks_with_the_interval():
    def runs_needed(c):
        return next_decision(c)[0]

    wide = {"n_a": 5, "n_b": 5, "gain_pct": 2.0, "ci_low_pct": -14.0, "ci_high_pct": 18.0}
    narrow = {**wide, "ci_low_pct": -6.0, "ci_high_pct": 11.0}
    assert runs_needed(wide) > runs_needed(narrow) > 5
    # a large estimated gain: the runs to separate it from zero
    assert runs_needed({"n_a": 5, "n_b": 5, "gain_pct": 20.0, "ci_low_pct": -5.0,
                        "ci_high_pct": 45.0}) == math.ceil(5 * (25 / 20) ** 2)
    assert next_decision({"n_a": 1, "n_b": 5, "gain_pct": 1.0, "ci_low_pct": None,
                          "ci_high_pct": None}) == (None, None)


def test_the_runs_needed_are_those_of_the_nearer_decision():
    """An estimated gain just under the equivalence bound cannot be bounded within it in any
    number of runs one would wait for, but could be shown in a few more: `make demo` run N said
    "about 500 interleaved runs per config would bound it" of +9.0% [-1.6%, +20.7%] (one-sided
    bound +18.5%) after 6 rounds, where about 9 would show the gain if it holds."""
    near_bound = {"n_a": 6, "n_b": 6, "gain_pct": 9.0, "ci_low_pct": -1.6,
                  "ci_high_pct": 20.7, "upper_bound_pct": 18.5}
    assert next_decision(near_bound) == (math.ceil(6 * (10.6 / 9.0) ** 2), "gain")
    near_zero = {**near_bound, "gain_pct": 1.0, "ci_low_pct": -6.0, "upper_bound_pct": 7.0,
                 "ci_high_pct": 8.5}
    assert next_decision(near_zero) == (7, "bound")  # at least one more round
    # the verdict's sentence says which decision the runs would reach
    base = [1000.0, 1040.0, 960.0, 1010.0, 990.0, 1030.0]
    tuned = [b * f for b, f in zip(base, (1.00, 1.21, 1.02, 1.10, 1.04, 1.17), strict=True)]
    plan = make_plan(6, ["tuned", "rules"], paired=True)
    v = decide({"tuned": tuned, "rules": base}, plan, final=True,
               by_round={"tuned": dict(enumerate(tuned)), "rules": dict(enumerate(base))})
    c = v["comparisons"]["tuned_vs_rules"]
    assert v["kind"] == "inconclusive" and 0 < c["gain_pct"] < EQUIVALENCE_MAX_PCT, c
    need, how = next_decision(c)
    assert how == "gain" and need < 50
    assert f"about {need} interleaved runs per config would show the gain, if it holds" \
        in v["text"]


def test_noisy_runs_are_inconclusive_and_keep_rules():
    plan = make_plan(5, ["tuned", "rules", "default"])
    v = decide({"tuned": [1400.0, 800.0, 1200.0, 900.0, 1300.0],
                "rules": [1000.0, 1300.0, 700.0, 1150.0, 900.0],
                "default": [1000.0, 1200.0, 800.0, 1100.0, 900.0]}, plan, final=True)
    assert v["kind"] == "inconclusive" and v["emit"] == "rules"
    assert v["text"].startswith("inconclusive: after 5 runs per config the difference is not "
                                "bounded within 10%")
    assert f"noise {v['noise_pct']:.1f}%" in v["text"]
    assert "rules-only does not beat server defaults significantly" in v["text_full"]


def test_a_tuned_config_is_measured_against_the_config_otherwise_written():
    """Rules-only loses to the defaults by ~12%, tuned beats rules-only by ~6%: tuned is still
    ~6% below the defaults, and the defaults are written (compared with rules-only alone, the
    tuned config would have been emitted)."""
    rules = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0]
    tuned = [1060.0, 1072.0, 1049.0, 1064.0, 1055.0, 1061.0]
    defaults = [1130.0, 1141.0, 1118.0, 1135.0, 1126.0, 1132.0]
    plan = make_plan(6, ["tuned", "rules", "default"], paired=True)
    runs = {"tuned": tuned, "rules": rules, "default": defaults}
    by_round = {r: dict(enumerate(x, 1)) for r, x in runs.items()}
    v = decide(runs, plan, final=True, by_round=by_round)
    assert v["comparisons"]["tuned_vs_rules"]["decision"] == "better"
    assert v["comparisons"]["rules_vs_default"]["decision"] == "worse"
    assert v["kind"] == "worse" and v["emit"] == "default" and v["decided"]
    assert v["text"].startswith("tuned is worse by ") and "than server defaults" in v["text"]
    assert "tuned vs rules-only +" in v["text_full"]
    # tuned equal to the defaults: equivalent to the config written, the defaults kept
    v = decide({**runs, "tuned": defaults}, plan, final=True,
               by_round={**by_round, "tuned": by_round["default"]})
    assert v["kind"] == "equivalent" and v["emit"] == "default"
    assert "tuned beats server defaults by at most" in v["text"]
    # rules-only not worse than the defaults: tuned is still measured against rules-only
    v = decide({**runs, "default": rules}, plan, final=True,
               by_round={**by_round, "default": by_round["rules"]})
    assert v["kind"] == "better" and v["emit"] == "tuned" and "than rules-only" in v["text"]


def test_rules_worse_than_defaults_keeps_defaults():
    plan = make_plan(5, ["tuned", "rules", "default"])
    v = decide({"tuned": RULES, "rules": RULES, "default": TUNED}, plan, final=True)
    assert v["emit"] == "default" and "keep defaults" in v["text"]
    assert v["text"].startswith("tuned is worse by ") and "than server defaults" in v["text"]


def test_a_significant_difference_is_never_called_not_significant():
    """make demo run J printed "tuned vs server defaults -7.2% [-11.3%, -2.8%] (not
    significant)"."""
    defaults = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0]
    rules = [d * f for d, f in zip(defaults, [1.02, 0.90, 1.01, 0.91, 1.00, 0.92], strict=True)]
    tuned = [d * f for d, f in zip(defaults, [0.85, 0.86, 0.84, 0.85, 0.86, 0.85], strict=True)]
    plan = make_plan(6, ["tuned", "rules", "default"], paired=True)
    runs = {"tuned": tuned, "rules": rules, "default": defaults}
    v = decide(runs, plan, final=True, by_round={r: dict(enumerate(x, 1))
                                                 for r, x in runs.items()})
    assert v["comparisons"]["rules_vs_default"]["decision"] == "none"
    assert v["comparisons"]["tuned_vs_default"]["decision"] == "worse"
    note = next(n for n in v["notes"] if n.startswith("tuned vs server defaults"))
    assert note.endswith("(significantly worse)")


def _tune(study_factory, space, ev, trials=8, repeats=8, seed=4):
    study, space = study_factory(space, sampler=make_sampler("tpe", seed=seed, n_trials=trials))
    Tuner(study, space, ev, TuneOptions(trials=trials, repeats=repeats)).run()
    return study


def test_interleaved_rounds_stop_early_and_best_trial_is_the_verdict(study_factory, space):
    # quiet runs (0.2% noise): the early look, with a tenth of alpha, decides
    ev = SyntheticEvaluator(seed=2, noise=0.002)
    study = _tune(study_factory, space, ev, trials=10, seed=2)
    v = study.user_attrs[VERDICT_ATTR]
    final = ev.calls[10:]  # after the 10 search trials
    # paired rounds: decided at the first look, the third round
    assert v["rounds"] == 3 and v["stopped_early"] and len(final) == 9
    assert v["plan"]["paired"] and v["comparisons"]["tuned_vs_rules"]["paired"]
    # round robin: tuned, rules, defaults, tuned, rules, defaults ...
    keys = [tuple(sorted(c.params.items())) for c in final]
    assert keys[0:3] == keys[3:6] == keys[6:9] and len(set(keys[0:3])) == 3
    rem = study.user_attrs[REMEASURE_ATTR]
    assert sorted(v["trials"].values()) == sorted(int(k) for k in rem)
    s = summarize(study)
    best = s["best"]
    assert best["role"] == v["emit"] and best["runs"] == 3 and best["repeated"]
    # Optuna's own best trial is the verdict trial: its value is the repeated median
    bt = study.best_trial
    assert bt.user_attrs["role"] == "verdict" and bt.user_attrs["verdict"] == v["text"]
    assert bt.value == pytest.approx(best["objective_median"])
    assert bt.params == study.trials[best["trial"]].params
    assert s["optuna_best"] == {"trial": bt.number, "value": bt.value, "role": "verdict",
                                "agrees": True}
    assert s["trials_completed"] == sum(measured(t) is not None for t in study.trials) - 1
    # search runs are PRUNED with their run at step 0: only the verdict trial is COMPLETE
    assert [t.number for t in study.trials if t.state == TrialState.COMPLETE] == [bt.number]


class CrashOnRemeasure(SyntheticEvaluator):
    """The server dies on the 2nd re-measurement of the rules config."""

    def __init__(self, search_calls: int, **kw):
        super().__init__(**kw)
        self.search_calls = search_calls

    def evaluate(self, config):
        if len(self.calls) == self.search_calls + 4:  # round 2, second config
            self.calls.append(config)
            return Measurement(ok=False, failure="server process exited with code -9 "
                               "(killed) during measure")
        return super().evaluate(config)


def test_a_crash_during_remeasurement_is_a_failure(study_factory, space):
    ev = CrashOnRemeasure(8, seed=4)
    study = _tune(study_factory, space, ev)
    s = summarize(study)
    crash = [f for f in s["failures"] if f["phase"] == "re-measure"]
    assert len(crash) == 1 and crash[0]["round"] == 2 and "killed" in crash[0]["reason"]
    assert s["runs_failed"] == len(s["failures"]) >= 1


def test_every_remeasure_run_is_a_line_where_stderr_is_not_a_terminal(study_factory, space):
    """The re-measurement can outlast the search: a log (CI, nohup) gets one line per run,
    with the crash's reason, not only a status line that a non-terminal never shows."""
    import io

    from rich.console import Console

    from pmem_advisor.report.progress import LiveProgress

    out = io.StringIO()
    study, space = study_factory(space, sampler=make_sampler("tpe", seed=4, n_trials=8))
    ev = CrashOnRemeasure(8, seed=4)
    progress = LiveProgress(Console(file=out, force_terminal=False, width=200), space, 8,
                            "throughput")
    try:
        Tuner(study, space, ev, TuneOptions(trials=8, repeats=8), observer=progress).run()
    finally:
        progress.close()
    lines = [ln for ln in out.getvalue().splitlines() if ln.startswith("re-measure round")]
    runs = sum(len(r) for r in study.user_attrs[REMEASURE_ATTR].values())
    assert len(lines) == runs >= 6
    assert lines[0].startswith("re-measure round 1/8 ") and " tps" in lines[0]
    assert [ln for ln in lines if "round 2/8" in ln and "failed" in ln and "killed" in ln]


def test_two_workers_remeasure_once_and_agree(study_factory, space, tmp_path):
    study, space = study_factory(space, sampler=make_sampler("random", seed=1, n_trials=6))
    Tuner(study, space, SyntheticEvaluator(seed=1), TuneOptions(trials=6, repeats=0)).run()
    evs = [SyntheticEvaluator(seed=s, delay=0.01) for s in (2, 3)]
    results: list = [None, None]

    def worker(i: int) -> None:
        st, sp = study_factory(None, resume=True)
        results[i] = Tuner(st, sp, evs[i], TuneOptions(trials=6, repeats=5)).remeasure()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert results[0] == results[1] and results[0]["text"]
    # one worker measured every round, until the verdict was decided
    assert sorted(len(e.calls) for e in evs) == [0, 3 * results[0]["rounds"]]
    verdicts = [t for t in study.get_trials() if t.user_attrs.get("role") == "verdict"]
    assert [t.state for t in verdicts].count(TrialState.COMPLETE) == 1
    assert all(t.state == TrialState.PRUNED for t in verdicts if t.state != TrialState.COMPLETE)


class LuckyOnce(SyntheticEvaluator):
    """One search run (the 4th call) measures 10x: the winner's curse in one trial."""

    def evaluate(self, config):
        m = super().evaluate(config)
        if len(self.calls) == 4 and m.ok:
            m.throughput_tps *= 10
        return m


def test_a_lucky_single_run_is_neither_the_verdict_nor_optunas_best_trial(study_factory, space):
    study = _tune(study_factory, space, LuckyOnce(seed=2), trials=10, seed=2)
    s = summarize(study)
    lucky = study.trials[3]
    assert s["tuned"]["trial"] == lucky.number  # picked by its single run ...
    # ... but judged on fresh runs only: the lucky value is not among them
    assert s["tuned"]["search_value"] > 5 * max(s["tuned"]["values"])
    assert s["verdict"]["kind"] != "better"
    # What optuna-dashboard shows as the best trial is the verdict's, whose value is the
    # emitted config's repeated median, although one stored run is 10x larger (issue 12).
    assert lucky.state == TrialState.PRUNED and measured(lucky) > 5 * study.best_trial.value
    bt = study.best_trial
    assert bt.user_attrs["role"] == "verdict" and bt.number == s["verdict"]["claim_trial"]
    assert bt.value == pytest.approx(s["best"]["objective_median"])
    assert s["optuna_best"]["agrees"] and "note" not in s["optuna_best"]


def test_a_study_from_before_keeps_saying_when_optuna_disagrees(study_factory, space):
    """Search runs stored as COMPLETE values (studies begun before runs were stored PRUNED):
    a lucky one is still Optuna's best, and the report says so rather than hide it."""
    import optuna

    study, space = study_factory(space, sampler=make_sampler("tpe", seed=2, n_trials=10))
    Tuner(study, space, LuckyOnce(seed=2), TuneOptions(trials=10, repeats=8)).run()
    old = optuna.create_study(direction="maximize")
    old.add_trials([as_complete(t) for t in study.get_trials()])
    for k, v in study.user_attrs.items():
        old.set_user_attr(k, v)
    ob = summarize(old)["optuna_best"]
    assert not ob["agrees"] and "best trial is trial 3" in ob["note"]


class InterruptAt(SyntheticEvaluator):
    def __init__(self, at: int, **kw):
        super().__init__(**kw)
        self.at = at

    def evaluate(self, config):
        if len(self.calls) == self.at:
            self.calls.append(config)
            raise KeyboardInterrupt
        return super().evaluate(config)


def test_interrupted_final_phase_is_said_and_resumed(study_factory, space):
    study, space = study_factory(space, sampler=make_sampler("tpe", seed=2, n_trials=10))
    with pytest.raises(KeyboardInterrupt):
        Tuner(study, space, InterruptAt(10 + 4, seed=2),
              TuneOptions(trials=10, repeats=8)).run()
    s = summarize(study)
    assert not s["verdict"]["complete"] and "did not complete" in s["verdict"]["text"]
    assert s["best"]["role"] in ("rules", "default")  # never an unconfirmed tuned config
    stopped = [f for f in s["failures"] if f["role"] == "verdict"]
    assert stopped and "KeyboardInterrupt" in stopped[0]["reason"]
    # a resumed run claims again and reuses the 4 runs already measured
    ev = SyntheticEvaluator(seed=3)
    st, sp = study_factory(None, resume=True)
    v = Tuner(st, sp, ev, TuneOptions(trials=10, repeats=8)).remeasure()
    assert v["rounds"] in (3, 8) and len(ev.calls) == 3 * v["rounds"] - 4
    assert summarize(st)["verdict"]["complete"]


def test_time_budget_ends_the_rounds_and_says_so(study_factory, space):
    study, space = study_factory(space, sampler=make_sampler("tpe", seed=2, n_trials=6))
    tuner = Tuner(study, space, SyntheticEvaluator(seed=2), TuneOptions(trials=6, repeats=0))
    tuner.run()
    tuner.options.repeats = 8
    tuner.deadline = 0.0  # long past
    v = tuner.remeasure()
    assert v["stopped_by"] == "time budget" and v["rounds"] == 0
    assert v["kind"] == "inconclusive" and v["emit"] == "rules"
    assert "the time budget ended the re-measurement after 0 rounds" in v["text"]
    assert not [f for f in summarize(study)["failures"] if f["phase"] != "search"]


def _steal_sequence(monkeypatch, values):
    """Every run's steal share from ``values`` in turn (the last one repeats)."""
    from pmem_advisor.tuner import cpu_steal

    seq = list(values)
    monkeypatch.setattr(cpu_steal, "steal_pct",
                        lambda before, after: seq.pop(0) if len(seq) > 1 else seq[0])


def _tune_on_host(study_factory, space, monkeypatch, steal):
    """6 search trials and up to 3 rounds, each run's steal share from ``steal`` in turn."""
    _steal_sequence(monkeypatch, steal)
    ev = SyntheticEvaluator(seed=2, noise=0.002)
    study = _tune(study_factory, space, ev, trials=6, repeats=3, seed=2)
    return ev, study, study.user_attrs[VERDICT_ATTR], study.user_attrs[REMEASURE_ATTR]


def test_a_quiet_host_is_measured_once_per_run_and_not_mentioned(study_factory, space,
                                                                 monkeypatch):
    ev, study, v, rem = _tune_on_host(study_factory, space, monkeypatch, [0.4])
    assert len(ev.calls) == 6 + 3 * v["rounds"]  # no run measured again
    assert all(r["cpu_steal_pct"] == 0.4 and "disturbed_runs" not in r
               for runs in rem.values() for r in runs)
    assert v["disturbed_reruns"] == 0 and "hypervisor" not in verdict_line(summarize(study))


def test_a_run_the_hypervisor_disturbed_is_measured_again_in_its_round(study_factory, space,
                                                                       monkeypatch):
    # the 6 search runs are quiet; the first re-measurement is disturbed (31%), its repeat not
    ev, study, v, rem = _tune_on_host(study_factory, space, monkeypatch,
                                      [1.0] * 6 + [31.0, 2.0, 1.0])
    first = rem[str(v["trials"]["tuned"])][0]
    assert first["round"] == 1 and first["cpu_steal_pct"] == 2.0
    assert [d["cpu_steal_pct"] for d in first["disturbed_runs"]] == [31.0]
    assert len(ev.calls) == 6 + 3 * v["rounds"] + 1  # one run more, in the same round
    assert v["disturbed_reruns"] == 1
    line = verdict_line(summarize(study))  # what every output prints
    assert "1 run(s) measured again because the hypervisor took more than 5%" in line
    assert "of the CPU during the runs kept" not in line  # the kept runs were quiet
    assert "hypervisor" not in v["text"]  # the short sentence stays the decision alone


def test_a_host_that_never_calms_down_still_gets_a_verdict_that_says_so(study_factory, space,
                                                                         monkeypatch):
    ev, _, v, _ = _tune_on_host(study_factory, space, monkeypatch, [23.0])
    runs = 3 * v["rounds"]
    assert len(ev.calls) == 6 + 3 * runs  # every run measured twice more, then kept
    assert v["disturbed_reruns"] == 2 * runs and v["cpu_steal_pct_max"] == 23.0
    assert v["decided"]
    assert "took 23-23% of the CPU during the runs kept" in v["text_full"]


class InTurnsSynthetic(SyntheticEvaluator):
    """Measures a round's configs side by side, as the managed evaluator does where it can
    (``fail_first``: the first attempt finds no room for the extra copies)."""

    def __init__(self, fail_first: bool = False, **kw):
        super().__init__(**kw)
        self.blocks: list[tuple[list, int]] = []
        self.fail_first = fail_first

    def in_turns_refusal(self, configs, turn_s):
        return None

    def evaluate_in_turns(self, configs, turn_s):
        if self.fail_first:
            self.fail_first = False
            raise EnvironmentProblem("copying the golden data failed: No space left on device")
        self.blocks.append((list(configs), turn_s))
        return [self.evaluate(c) for c in configs]


def test_a_round_is_measured_side_by_side_where_the_evaluator_can(study_factory, space):
    ev = InTurnsSynthetic(seed=2, noise=0.002)
    study = _tune(study_factory, space, ev, trials=10, seed=2)
    v = study.user_attrs[VERDICT_ATTR]
    assert len(ev.blocks) == v["rounds"] >= 3  # one side-by-side block per round
    keys = [tuple(tuple(sorted(c.params.items())) for c in configs) for configs, _ in ev.blocks]
    assert all(t == TURN_S for _, t in ev.blocks) and len(set(keys)) == 1 and len(keys[0]) == 3
    assert len(ev.calls) == 10 + 3 * v["rounds"]  # nothing measured one by one besides
    assert v["measured"] == {"in_turns": True, "turn_s": TURN_S, "why_not": None}
    line = verdict_line(summarize(study))  # what every output prints
    assert f"side by side: every config's server up at once, the workload taking {TURN_S} s " \
        "turns while the others were paused" in line


def test_the_turns_are_as_long_as_the_workload_says(study_factory, space):
    from types import SimpleNamespace

    from pmem_advisor.engines.postgres.pgbench import PgbenchTpcb
    from pmem_advisor.workloads.sysbench import SysbenchWorkload

    ev = InTurnsSynthetic(seed=2, noise=0.002)
    ev.workload = SimpleNamespace(turn_s=1)  # pgbench's own: it starts in milliseconds
    study = _tune(study_factory, space, ev, trials=10, seed=2)
    v = study.user_attrs[VERDICT_ATTR]
    assert ev.blocks and all(t == 1 for _, t in ev.blocks)
    assert v["measured"]["turn_s"] == 1
    assert "the workload taking 1 s turns" in verdict_line(summarize(study))
    assert PgbenchTpcb.turn_s == 1 and SysbenchWorkload.turn_s == TURN_S == 4


def test_an_evaluator_of_one_server_at_a_time_measures_one_after_another_and_says_why(
        study_factory, space):
    ev = SyntheticEvaluator(seed=2, noise=0.002)
    study = _tune(study_factory, space, ev, trials=10, seed=2)
    v = study.user_attrs[VERDICT_ATTR]
    assert v["measured"]["in_turns"] is False
    assert ("each round measured one config after another (this evaluator runs one server "
            "at a time)") in verdict_line(summarize(study))


def test_side_by_side_that_fails_to_set_up_falls_back_to_one_after_another(study_factory,
                                                                           space):
    ev = InTurnsSynthetic(fail_first=True, seed=2, noise=0.002)
    study = _tune(study_factory, space, ev, trials=10, seed=2)
    v = study.user_attrs[VERDICT_ATTR]
    assert ev.blocks == [] and len(ev.calls) == 10 + 3 * v["rounds"]
    assert v["measured"]["in_turns"] is False
    assert "side by side failed: copying the golden data failed: No space left" in \
        v["measured"]["why_not"]
    assert "No space left on device" in verdict_line(summarize(study))


def test_a_disturbed_side_by_side_round_is_measured_again_all_together(study_factory, space,
                                                                      monkeypatch):
    _steal_sequence(monkeypatch, [1.0] * 6 + [31.0, 2.0, 1.0])
    ev = InTurnsSynthetic(seed=2, noise=0.002)
    study = _tune(study_factory, space, ev, trials=6, repeats=3, seed=2)
    v, rem = study.user_attrs[VERDICT_ATTR], study.user_attrs[REMEASURE_ATTR]
    assert len(ev.blocks) == v["rounds"] + 1  # the first block twice
    for trial in v["trials"].values():
        first = rem[str(trial)][0]
        assert first["round"] == 1 and first["cpu_steal_pct"] == 2.0
        assert [d["cpu_steal_pct"] for d in first["disturbed_runs"]] == [31.0]
    assert v["disturbed_reruns"] == 3
