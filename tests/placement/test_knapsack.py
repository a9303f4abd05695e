"""The solver against brute force: exact where it says exact, >= 1/2 of the optimum greedy."""

from __future__ import annotations

import itertools
import random

from pmem_advisor.rules import placement


def _best(sizes, values, cap):
    best = 0.0
    for r in range(len(sizes) + 1):
        for combo in itertools.combinations(range(len(sizes)), r):
            if sum(sizes[i] for i in combo) <= cap:
                best = max(best, sum(values[i] for i in combo))
    return best


def test_exact_matches_brute_force_on_small_cases():
    rng = random.Random(52)
    for _ in range(300):
        n = rng.randint(1, 9)
        sizes = [rng.randint(1, 60) for _ in range(n)]
        values = [rng.choice([0.0, rng.uniform(0, 10)]) for _ in range(n)]
        cap = rng.randint(1, 150)  # below DP_UNITS: no rounding, so exactly optimal
        chosen, method = placement.solve(sizes, values, cap)
        assert method == "exact"
        assert sum(sizes[i] for i in chosen) <= cap
        assert abs(sum(values[i] for i in chosen) - _best(sizes, values, cap)) < 1e-9


def test_scaled_capacity_never_overflows():
    rng = random.Random(7)
    for _ in range(50):
        sizes = [rng.randint(1, 10**9) for _ in range(8)]
        values = [rng.uniform(0, 5) for _ in range(8)]
        cap = rng.randint(10**8, 4 * 10**9)
        chosen, _ = placement.solve(sizes, values, cap)
        assert sum(sizes[i] for i in chosen) <= cap


def test_greedy_keeps_half_the_optimum_thanks_to_the_single_item_fix(monkeypatch):
    monkeypatch.setattr(placement, "DP_CELLS", 0)  # force the greedy path
    # greedy by density alone takes the tiny dense item and then has no room for the big one
    chosen, method = placement.solve([1, 100], [2.0, 100.0], 100)
    assert method == "greedy" and chosen == [1]
    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(1, 8)
        sizes = [rng.randint(1, 50) for _ in range(n)]
        values = [rng.uniform(0.1, 10) for _ in range(n)]
        cap = rng.randint(1, 120)
        chosen, _ = placement.solve(sizes, values, cap)
        assert sum(sizes[i] for i in chosen) <= cap
        assert sum(values[i] for i in chosen) >= _best(sizes, values, cap) / 2 - 1e-9


def test_parse_fast_sizes():
    assert placement.parse_fast("/mnt/pmem:200G") == ("/mnt/pmem", 200 << 30)
    assert placement.parse_fast("/mnt/pmem") == ("/mnt/pmem", None)
    assert placement.parse_fast("/x:1.5M") == ("/x", int(1.5 * (1 << 20)))
