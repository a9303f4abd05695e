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


def test_compare_is_exact_seeded_and_needs_enough_runs():
    from pmem_advisor.tuner.stats import compare, min_p_value

    a, b = [101.0, 103.0, 102.0, 104.0, 100.0], [90.0, 92.0, 91.0, 89.0, 93.0]
    c = compare(a, b, alpha=0.01)
    assert c["p_value"] == min_p_value(5) == 2 / 252  # every split enumerated
    assert c["decision"] == "better" and c == compare(a, b, alpha=0.01)
    # three runs each can never reach p <= 0.05, however far apart
    few = compare([200.0, 201.0, 202.0], [100.0, 101.0, 102.0], alpha=0.05)
    assert few["p_value"] == min_p_value(3) == 0.1 and few["decision"] == "none"
    assert compare(b, a, alpha=0.01)["decision"] == "worse"
