"""The gain the reports print is the ratio of the medians they print, with a stable interval."""

from __future__ import annotations

import statistics

from pmem_advisor.tuner.stats import gain_ci, spread_pct


def test_gain_is_the_ratio_of_medians_and_robust_to_one_disturbed_run():
    tuned, base = [14010, 14200, 13500, 14100], [13939, 9000, 14500, 13900]
    g = gain_ci(tuned, base)
    expected = 100 * (statistics.median(tuned) / statistics.median(base) - 1)
    assert abs(g["gain_pct"] - expected) < 1e-9
    assert g["ci_low_pct"] <= g["gain_pct"] <= g["ci_high_pct"]
    assert g == gain_ci(tuned, base)  # seeded: a rebuilt report says the same


def test_clear_difference_excludes_zero_and_latency_gain_is_a_reduction():
    g = gain_ci([100, 101, 99, 100], [90, 91, 89, 90])
    assert g["ci_low_pct"] > 0
    lat = gain_ci([1.0, 1.1, 0.9], [2.0, 2.1, 1.9], higher_is_better=False)
    assert lat["gain_pct"] == 100.0


def test_spread_needs_two_runs():
    assert spread_pct([5.0]) is None
    assert round(spread_pct([9.0, 11.0]), 3) == round(100 * statistics.stdev([9, 11]) / 10, 3)
