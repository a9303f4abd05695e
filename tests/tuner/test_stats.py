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
    # the one-sided bound (the verdict's equivalence bound) lies inside the two-sided interval
    assert g["gain_pct"] <= g["upper_bound_pct"] <= g["ci_high_pct"]
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


def test_paired_rounds_cancel_the_machines_drift():
    """Two configs 10% apart measured in interleaved rounds while the machine slows to half:
    independent samples overlap (nothing decided), the per-round ratios do not."""
    from pmem_advisor.tuner.stats import compare, compare_paired

    drift = [1.0, 0.85, 0.7, 0.6, 0.5]
    jitter = [1.01, 0.99, 1.0, 1.02, 0.98]
    a = [1100 * d * j for d, j in zip(drift, jitter, strict=True)]
    b = [1000 * d * j2 for d, j2 in zip(drift, reversed(jitter), strict=True)]
    assert compare(a, b, alpha=0.01)["decision"] == "none"
    p = compare_paired(a, b, alpha=0.01)
    assert p["decision"] == "better" and p["paired"] and p["n_a"] == 5
    assert p["ci_low_pct"] > 0 and abs(p["gain_pct"] - 10.0) < 1.0
    # equal configs under the same drift: the interval bounds the difference tightly
    same = compare_paired([1000 * d * j for d, j in zip(drift, jitter, strict=True)],
                          [1000 * d * j for d, j in zip(drift, reversed(jitter), strict=True)],
                          alpha=0.01)
    assert same["decision"] == "none" and same["ci_high_pct"] < 8


def test_paired_comparison_drops_rounds_with_a_failed_run():
    from pmem_advisor.tuner.stats import compare_paired

    p = compare_paired([110.0, None, 111.0, 109.0], [100.0, 101.0, None, 99.0], alpha=0.05)
    assert p["n_a"] == 2
    assert compare_paired([110.0], [100.0], alpha=0.05)["decision"] == "none"
    lat = compare_paired([1.0, 1.1, 0.9], [2.0, 2.2, 1.8], alpha=0.05, higher_is_better=False)
    assert lat["gain_pct"] == 100.0 and lat["decision"] == "better"
