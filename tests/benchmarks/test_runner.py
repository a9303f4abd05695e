"""Interleaving, budgets, fixed arms, the ceiling's base and loop-owning tuners."""

from __future__ import annotations

import pytest

from benchmarks.harness.arms import (
    CeilingArm,
    DefaultArm,
    LoopArm,
    OptunaArm,
    RulesArm,
)
from benchmarks.harness.runner import best_config, run_interleaved
from pmem_advisor.tuner.evaluator import Measurement, TrialConfig

from .synthetic import SyntheticEvaluator, synthetic_space


class ToyLoop(LoopArm):
    """A tuner owning its loop: walks x upwards, asking for ``wanted`` trials."""

    name = "pmem-advisor"

    def __init__(self, wanted: int, crash_after: int | None = None) -> None:
        super().__init__()
        self.wanted, self.crash_after = wanted, crash_after

    def run_loop(self, evaluator, space, budget, seed):
        for i in range(self.wanted):
            if self.crash_after is not None and i == self.crash_after:
                raise ValueError("the tuner broke")
            evaluator.evaluate(TrialConfig(params={"x": 10 + 10 * i}))


def test_round_robin_interleaves_every_arm_and_rotates_the_order():
    ev = SyntheticEvaluator()
    arms = [DefaultArm(), RulesArm(), OptunaArm("random", "random"), OptunaArm("tpe", "tpe"),
            ToyLoop(wanted=4)]
    records, _ = run_interleaved(ev, synthetic_space(), arms, budget=4, seeds=[0])
    assert len(ev.calls) == len(records) == 2 + 3 * 4
    rounds: dict[int, list[str]] = {}
    for r in records:
        rounds.setdefault(r.round, []).append(r.arm)
    assert sorted(rounds[0]) == sorted(["default", "rules", "random", "tpe", "pmem-advisor"])
    for rnd in (1, 2, 3):
        assert sorted(rounds[rnd]) == ["pmem-advisor", "random", "tpe"]
    assert len({tuple(rounds[r]) for r in (1, 2, 3)}) == 3  # the order rotates
    # no searching arm ever gets two trials before each other active arm had one
    seq = [r.arm for r in records if r.arm in ("random", "tpe", "pmem-advisor")]
    for i in range(0, len(seq), 3):
        assert len(set(seq[i:i + 3])) == 3


def test_budget_and_seeds_fixed_arms_once_per_seed():
    ev = SyntheticEvaluator()
    arms = [DefaultArm(), OptunaArm("tpe", "tpe")]
    records, statuses = run_interleaved(ev, synthetic_space(), arms, budget=5, seeds=[0, 1, 2])
    for seed in (0, 1, 2):
        assert [r.index for r in records if r.seed == seed and r.arm == "tpe"] == [1, 2, 3, 4, 5]
        assert [r.config for r in records if r.seed == seed and r.arm == "default"] == [
            TrialConfig()]
    assert [(s.name, s.budget) for s in statuses] == [("default", 1), ("tpe", 5)]


def test_seeds_change_the_search_and_a_seed_reproduces_it():
    def proposals(seed):
        records, _ = run_interleaved(SyntheticEvaluator(), synthetic_space(),
                                     [OptunaArm("tpe", "tpe")], budget=4, seeds=[seed])
        return [r.config for r in records]

    assert proposals(3) == proposals(3)
    assert proposals(3) != proposals(4)


def test_ceiling_runs_last_on_the_best_safe_config_with_durability_off():
    ev = SyntheticEvaluator(noise=0)
    arms = [DefaultArm(), RulesArm(), CeilingArm("best")]
    records, _ = run_interleaved(ev, synthetic_space(), arms, budget=3, seeds=[0])
    assert [r.arm for r in records][-1] == "ceiling"
    ceiling = records[-1]
    assert ceiling.round == -1
    assert ceiling.config.params == {"x": 60, "y": 25.0, "fsync": False}  # rules beat default
    assert ceiling.measurement.throughput_tps > max(
        r.measurement.throughput_tps for r in records[:-1])


def test_ceiling_on_rules_runs_in_the_first_round():
    records, _ = run_interleaved(SyntheticEvaluator(), synthetic_space(),
                                 [DefaultArm(), CeilingArm("rules")], budget=3, seeds=[0])
    ceiling = [r for r in records if r.arm == "ceiling"]
    assert [r.round for r in ceiling] == [0]
    assert ceiling[0].config.params == {"x": 60, "y": 25.0, "fsync": False}


def test_best_config_uses_the_median_of_repeats_not_the_lucky_run():
    from benchmarks.harness.runner import TrialRecord

    a, b = TrialConfig(params={"x": 1}), TrialConfig(params={"x": 2})

    def rec(i, cfg, tps):
        return TrialRecord("t", 0, i, i, cfg, Measurement(ok=True, throughput_tps=tps), 1.0)

    records = [rec(1, a, 100), rec(2, a, 400), rec(3, a, 110), rec(4, b, 200)]
    assert best_config(records) == b


def test_loop_arm_is_held_to_its_budget():
    ev = SyntheticEvaluator()
    arm = ToyLoop(wanted=10)
    records, statuses = run_interleaved(ev, synthetic_space(), [DefaultArm(), arm],
                                        budget=3, seeds=[0, 1])
    assert [r.index for r in records if r.arm == "pmem-advisor" and r.seed == 1] == [1, 2, 3]
    assert statuses[1].errors == []
    assert arm.thread is None  # closed and joined


def test_a_crashing_loop_stops_early_and_says_so():
    arm = ToyLoop(wanted=5, crash_after=2)
    records, statuses = run_interleaved(SyntheticEvaluator(), synthetic_space(), [arm],
                                        budget=5, seeds=[0])
    assert len(records) == 2
    assert statuses[0].errors == ["seed 0: ValueError: the tuner broke"]


def test_failed_trials_are_recorded_with_the_reason_and_the_search_goes_on():
    ev = SyntheticEvaluator(fail_above=50)
    records, _ = run_interleaved(ev, synthetic_space(), [OptunaArm("random", "random")],
                                 budget=12, seeds=[0])
    failed = [r for r in records if not r.measurement.ok]
    assert failed and all("too large" in r.measurement.failure for r in failed)
    assert len(records) == 12


def test_unavailable_arms_are_listed_and_not_run():
    records, statuses = run_interleaved(SyntheticEvaluator(), synthetic_space(with_rules=False),
                                        [DefaultArm(), RulesArm()], budget=2, seeds=[0])
    assert {r.arm for r in records} == {"default"}
    assert statuses[1].unavailable == "rules: no profile"


def test_evaluator_environment_problem_stops_the_run_and_closes_the_arms():
    from pmem_advisor.errors import EnvironmentProblem

    class Broken(SyntheticEvaluator):
        def evaluate(self, config):
            raise EnvironmentProblem("no server binary")

    arm = ToyLoop(wanted=3)
    with pytest.raises(EnvironmentProblem):
        run_interleaved(Broken(), synthetic_space(), [arm], budget=3, seeds=[0])
    assert arm.thread is None


def test_an_arm_whose_own_code_breaks_stops_and_the_others_go_on():
    class Broken(OptunaArm):
        def ask(self):
            if self.left < 2:
                raise ValueError("optimiser bug")
            return super().ask()

    records, statuses = run_interleaved(SyntheticEvaluator(), synthetic_space(),
                                        [Broken("random", "random"), OptunaArm("tpe", "tpe")],
                                        budget=4, seeds=[0])
    assert [r.index for r in records if r.arm == "random"] == [1, 2]
    assert [r.index for r in records if r.arm == "tpe"] == [1, 2, 3, 4]
    assert statuses[0].errors == ["seed 0: ValueError: optimiser bug"]
