"""Interleaving, budgets, fixed arms, failures and broken arms."""

from __future__ import annotations

import pytest

from benchmarks.harness.arms import DefaultArm, OptunaArm, RulesArm
from benchmarks.harness.runner import run_interleaved
from pmem_advisor.tuner.evaluator import TrialConfig
from tests.benchmarks.synthetic import SyntheticEvaluator, synthetic_space


def test_round_robin_interleaves_every_arm_and_rotates_the_order():
    ev = SyntheticEvaluator()
    arms = [DefaultArm(), RulesArm(), OptunaArm("random", "random"), OptunaArm("tpe", "tpe"),
            OptunaArm("pmem-advisor", "random")]
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

    closed = []

    class Tracked(OptunaArm):
        def close(self):
            closed.append(self.name)

    with pytest.raises(EnvironmentProblem):
        run_interleaved(Broken(), synthetic_space(), [Tracked("tpe", "tpe")], budget=3,
                        seeds=[0])
    assert closed == ["tpe"]


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
