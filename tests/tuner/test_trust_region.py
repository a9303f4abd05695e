"""The trust-region sampler: the rules' centre first, then the warm starts, then small moves
around the best trial, inside the rules' bounds; important knobs move most."""

from __future__ import annotations

import math

import optuna
import pytest

from pmem_advisor.tuner.samplers import SAMPLERS, TrustRegionSampler, make_sampler

DISTS = {
    "x": optuna.distributions.IntDistribution(1, 100),
    "y": optuna.distributions.FloatDistribution(1.0, 100.0, log=True),
    "m": optuna.distributions.CategoricalDistribution(["a", "b"]),
}


def f(p):
    return (1000 * (1 + 0.5 * math.exp(-(((p["x"] - 70) / 20) ** 2))
                    + 0.3 * math.exp(-(((p["y"] - 30) / 15) ** 2)))
            * (1.1 if p["m"] == "b" else 1.0))


def run(sampler, n):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    trials = []
    for _ in range(n):
        t = study.ask(DISTS)
        study.tell(t, f(t.params))
        trials.append(dict(t.params))
    return study, trials


def test_centre_first_then_warm_starts_then_moves_near_the_best():
    warm = [{"x": 70, "y": 30.0, "m": "b"}]
    s = TrustRegionSampler({"x": 60, "y": 25.0, "m": "a"}, importance=["x", "y", "m"],
                           warm_starts=warm, seed=0)
    study, trials = run(s, 12)
    assert trials[0] == {"x": 60, "y": 25.0, "m": "a"}
    assert trials[1] == warm[0]
    for p in trials[2:]:  # moves around the best (the warm start): at most 3 knobs changed
        assert sum(p[k] != warm[0][k] for k in p) <= 3
    assert study.best_value == pytest.approx(f(warm[0]))


def test_bounds_clip_every_point():
    s = TrustRegionSampler({"x": 60, "y": 25.0, "m": "a"}, bounds={"x": [40, 65], "m": ["a"]},
                           seed=1, radius=0.5)
    _, trials = run(s, 25)
    assert all(40 <= p["x"] <= 65 and p["m"] == "a" for p in trials)


def test_the_most_important_knob_moves_most_often():
    s = TrustRegionSampler({"x": 50, "y": 10.0, "m": "a"}, importance=["y", "x", "m"],
                           seed=2, max_moves=1)
    _, trials = run(s, 40)
    moved = {k: 0 for k in DISTS}
    for a, b in zip(trials, trials[1:], strict=False):
        for k in DISTS:
            moved[k] += a[k] != b[k]
    assert moved["y"] > moved["x"] > 0


def test_beats_random_search_at_small_budgets_from_a_good_centre():
    """From the rules' centre, 10 trials get closer to the optimum than 10 random ones
    (median over seeds): the point of rule-centred search."""
    tr, rnd = [], []
    for seed in range(7):
        s = TrustRegionSampler({"x": 60, "y": 25.0, "m": "b"}, importance=["x", "y", "m"],
                               seed=seed)
        tr.append(run(s, 10)[0].best_value)
        rnd.append(run(optuna.samplers.RandomSampler(seed=seed), 10)[0].best_value)
    assert sorted(tr)[3] > sorted(rnd)[3]


def test_make_sampler_knows_it():
    assert "trust-region" in SAMPLERS
    s = make_sampler("trust-region", seed=0, n_trials=5, centre={"x": 5})
    assert isinstance(s, TrustRegionSampler) and s.centre == {"x": 5}


def test_moves_follow_the_transfer_score_then_the_own_model():
    for seed in range(3):
        s = TrustRegionSampler({"x": 60, "y": 25.0, "m": "a"}, importance=["x", "y", "m"],
                               seed=seed, score=lambda v: -abs(v["x"] - 95))
        _, trials = run(s, 2)
        assert trials[1]["x"] > 60  # of 16 candidate moves, the one the score likes best
    s = TrustRegionSampler({"x": 20, "y": 25.0, "m": "a"}, importance=["x", "y", "m"],
                           seed=0)
    _, trials = run(s, 20)
    assert max(f(p) for p in trials[10:]) > max(f(p) for p in trials[:6])
