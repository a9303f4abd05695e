"""The figures: best by median of repeats, prefixes, ratios, trials to reach SMAC's best."""

from __future__ import annotations

import math

import pytest

from benchmarks.harness.runner import ArmStatus, TrialRecord
from benchmarks.harness.stats import best_curve, compute, trials_to_reach
from pmem_advisor.tuner.evaluator import Measurement, TrialConfig


def rec(arm, seed, i, tps, x=None, ok=True, wall=2.0):
    cfg = TrialConfig(params={"x": i if x is None else x})
    m = Measurement(ok=ok, throughput_tps=tps if ok else None, failure=None if ok else "no")
    return TrialRecord(arm, seed, i, i - 1, cfg, m, wall)


def searching(name, budget):
    return ArmStatus(name, True, budget, "")


def fixed(name):
    return ArmStatus(name, False, 1, "")


def test_best_curve_is_running_max_of_per_config_medians():
    rs = [rec("a", 0, 1, 100, x=1), rec("a", 0, 2, 300, x=1), rec("a", 0, 3, 110, x=1),
          rec("a", 0, 4, 150, x=2)]
    # x=1 measured 100, 300, 110: credited with its median, never its lucky 300
    assert best_curve(rs) == [100, 200, 110, 150]


def test_failures_count_as_zero_in_a_config_median_and_alone_give_nothing():
    rs = [rec("a", 0, 1, None, ok=False), rec("a", 0, 2, 100, x=5), rec("a", 0, 3, None, x=5,
                                                                        ok=False)]
    assert best_curve(rs) == [None, 100, 50]


def test_trials_to_reach():
    assert trials_to_reach([None, 10, 20, 30], 20) == 3
    assert trials_to_reach([None, 10], 20) is None


def test_budgets_are_prefixes_and_medians_over_seeds_with_spread():
    records = []
    for seed, values in enumerate([[10, 50, 20, 90], [30, 20, 60, 70], [40, 45, 46, 47]]):
        records += [rec("tpe", seed, i, v) for i, v in enumerate(values, 1)]
    rows = compute(records, [searching("tpe", 4)], [2, 4], [0, 1, 2])
    by_budget = {r.budget: r for r in rows}
    assert by_budget[2].best_tps_all == [50, 30, 45]
    assert by_budget[2].best_tps_median == 45
    assert (by_budget[2].best_tps_min, by_budget[2].best_tps_max) == (30, 50)
    assert by_budget[4].best_tps_all == [90, 70, 47]
    assert by_budget[4].wall_s_median == 8.0 and by_budget[2].wall_s_median == 4.0
    assert by_budget[4].trials_run == [4, 4, 4]


def test_ratios_to_default_smac_ceiling_and_trials_to_smac_target():
    records = []
    for seed in range(3):
        records.append(rec("default", seed, 1, 100 + seed))  # median 101
        records.append(rec("ceiling", seed, 1, 400))
        records += [rec("smac", seed, i, v) for i, v in enumerate([100, 150, 200, 200], 1)]
        records += [rec("pmem-advisor", seed, i, v) for i, v in enumerate([100, 300, 300, 300],
                                                                         1)]
    statuses = [fixed("default"), searching("smac", 4), searching("pmem-advisor", 4),
                fixed("ceiling")]
    rows = compute(records, statuses, [2, 4], [0, 1, 2])
    get = {(r.name, r.budget): r for r in rows}
    adv2, adv4, smac2 = get["pmem-advisor", 2], get["pmem-advisor", 4], get["smac", 2]
    assert adv2.ratio_default == pytest.approx(300 / 101)
    assert adv2.ratio_smac == pytest.approx(300 / 150)  # SMAC at the same budget
    assert adv4.ratio_smac == pytest.approx(300 / 200)
    assert adv4.ratio_ceiling == pytest.approx(0.75)
    # target = 95% of SMAC's best at its largest budget (200) = 190
    assert adv2.trials_to_95_smac == 2 and adv2.trials_to_95_smac_all == [2, 2, 2]
    assert get["smac", 4].trials_to_95_smac == 3
    assert math.isinf(smac2.trials_to_95_smac)  # not reached within 2 trials
    assert smac2.to_dict()["trials_to_95_smac"] is None
    assert get["default", 1].ratio_smac is None  # fixed arms have no "same budget"
    assert get["default", 1].trials_to_95_smac_all == [None, None, None]


def test_unavailable_arm_gives_a_row_with_its_reason_and_no_numbers():
    st = ArmStatus("smac", True, 4, "", unavailable="SMAC3 is not installed here")
    rows = compute([], [st], [2, 4], [0])
    assert [(r.budget, r.available, r.best_tps_median) for r in rows] == [
        (2, False, None), (4, False, None)]
    assert rows[0].unavailable_reason == "SMAC3 is not installed here"


def test_an_arm_that_stopped_early_reports_what_it_ran():
    records = [rec("pmem-advisor", 0, i, 10 * i) for i in (1, 2)]
    rows = compute(records, [searching("pmem-advisor", 5)], [5], [0])
    assert rows[0].trials_run == [2] and rows[0].best_tps_median == 20
