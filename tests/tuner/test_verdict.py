"""The final verdict: decided from the repeated, interleaved runs, with honest alpha, by one
worker, stored where every report and Optuna's best trial read it."""

from __future__ import annotations

import statistics
import threading

import pytest
from optuna.trial import TrialState

from pmem_advisor.tuner.evaluator import Measurement
from pmem_advisor.tuner.results import summarize
from pmem_advisor.tuner.samplers import make_sampler
from pmem_advisor.tuner.stats import min_p_value
from pmem_advisor.tuner.study import REMEASURE_ATTR, as_complete, measured
from pmem_advisor.tuner.tuner import TuneOptions, Tuner
from pmem_advisor.tuner.verdict import VERDICT_ATTR, decide, make_plan
from tests.tuner.synthetic import SyntheticEvaluator

TUNED = [1100.0, 1120.0, 1090.0, 1110.0, 1105.0]
RULES = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
DEFAULTS = [800.0, 810.0, 790.0, 805.0, 795.0]


def test_plan_spends_alpha_over_looks_and_pairs():
    plan = make_plan(8, ["tuned", "rules", "default"])
    assert plan.looks == (5, 8) and plan.comparisons == 3
    assert plan.alpha_per_test == pytest.approx(0.05 / 6)
    # the first look is the first round where n vs n runs can reach that level at all
    assert min_p_value(5) <= plan.alpha_per_test < min_p_value(4)
    assert make_plan(3, ["tuned", "rules", "default"]).looks == (3,)
    assert make_plan(8, ["rules", "default"]).comparisons == 1


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
    assert c["confidence"] == pytest.approx(1 - 0.05 / 3)
    assert v["text"].startswith("tuned is better by 10.5% [")
    # one disturbed run changes the interval: it is computed from these runs
    other = decide({"tuned": [*TUNED[:4], 1500.0], "rules": RULES, "default": DEFAULTS},
                   plan, final=True)["comparisons"]["tuned_vs_rules"]
    assert other["ci_high_pct"] != c["ci_high_pct"]


def test_a_config_compared_with_itself_is_no_difference():
    same = [1000.0, 1012.0, 991.0, 1004.0, 996.0, 1008.0, 999.0, 1003.0]
    plan = make_plan(8, ["tuned", "rules", "default"])
    v = decide({"tuned": list(same), "rules": list(same), "default": DEFAULTS * 2}, plan,
               final=True)
    assert v["kind"] == "no-difference" and v["emit"] == "rules"
    assert v["text"].startswith("no significant difference: keep rules")
    assert v["comparisons"]["tuned_vs_rules"]["decision"] == "none"
    assert "rules-only beats server defaults" in v["text_full"]
    # not final yet: keep measuring instead of concluding
    assert decide({"tuned": same, "rules": same}, plan, final=False)["kind"] == "undecided"


def test_noisy_runs_are_inconclusive_and_keep_rules():
    plan = make_plan(5, ["tuned", "rules", "default"])
    v = decide({"tuned": [1400.0, 800.0, 1200.0, 900.0, 1300.0],
                "rules": [1000.0, 1300.0, 700.0, 1150.0, 900.0],
                "default": [1000.0, 1200.0, 800.0, 1100.0, 900.0]}, plan, final=True)
    assert v["kind"] == "inconclusive" and v["emit"] == "rules"
    assert v["text"].startswith(f"inconclusive: noise {v['noise_pct']:.1f}%, run longer")
    assert "rules-only does not beat server defaults significantly" in v["text_full"]


def test_rules_worse_than_defaults_keeps_defaults():
    plan = make_plan(5, ["tuned", "rules", "default"])
    v = decide({"tuned": RULES, "rules": RULES, "default": TUNED}, plan, final=True)
    assert v["emit"] == "default" and "keep defaults" in v["text"]


def _tune(study_factory, space, ev, trials=8, repeats=8, seed=4):
    study, space = study_factory(space, sampler=make_sampler("tpe", seed=seed, n_trials=trials))
    Tuner(study, space, ev, TuneOptions(trials=trials, repeats=repeats)).run()
    return study


def test_interleaved_rounds_stop_early_and_best_trial_is_the_verdict(study_factory, space):
    ev = SyntheticEvaluator(seed=2)
    study = _tune(study_factory, space, ev, trials=10, seed=2)
    v = study.user_attrs[VERDICT_ATTR]
    final = ev.calls[10:]  # after the 10 search trials
    assert v["rounds"] == 5 and v["stopped_early"] and len(final) == 15
    # round robin: tuned, rules, defaults, tuned, rules, defaults ...
    keys = [tuple(sorted(c.params.items())) for c in final]
    assert keys[0:3] == keys[3:6] == keys[12:15] and len(set(keys[0:3])) == 3
    rem = study.user_attrs[REMEASURE_ATTR]
    assert sorted(v["trials"].values()) == sorted(int(k) for k in rem)
    s = summarize(study)
    best = s["best"]
    assert best["role"] == v["emit"] and best["runs"] == 5 and best["repeated"]
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
    assert sorted(len(e.calls) for e in evs) == [0, 15]  # one worker measured every round
    assert results[0] == results[1] and results[0]["text"]
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
    assert v["rounds"] in (5, 8) and len(ev.calls) == 3 * v["rounds"] - 4
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
