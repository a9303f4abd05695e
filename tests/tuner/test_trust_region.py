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


def _trial(number, params, value):
    t = optuna.trial.create_trial(params=params, distributions={k: DISTS[k] for k in params},
                                  value=value)
    t.number = number
    return t


def test_a_config_measured_twice_counts_by_its_mean_not_its_lucky_run():
    """Config A ran 130 then 70 (mean 100), config B 110 once: B is the incumbent, A's lucky
    run does not hold the region."""
    a, b = {"x": 10, "y": 10.0, "m": "a"}, {"x": 90, "y": 90.0, "m": "b"}
    done = [_trial(1, a, 130.0), _trial(2, b, 110.0), _trial(3, a, 70.0)]
    _, best = TrustRegionSampler(a, global_every=0)._replay(done, maximize=True)
    assert best.params == b


def test_the_incumbent_is_the_forest_s_best_not_the_single_best_run():
    """One lucky run (x=10: 140, its neighbours 90) against a region measured consistently
    at 120 (x around 70): the noise-aware incumbent is in the consistent region."""
    done = [_trial(0, {"x": 10, "y": 50.0, "m": "a"}, 140.0)]
    done += [_trial(i, {"x": 10 + d, "y": 50.0, "m": "a"}, 90.0)
             for i, d in enumerate((-2, -1, 1, 2), start=1)]
    done += [_trial(i, {"x": 66 + 2 * k, "y": 50.0, "m": "a"}, 120.0 + k % 2)
             for i, k in enumerate(range(5), start=5)]
    s = TrustRegionSampler({"x": 10, "y": 50.0, "m": "a"}, seed=0)
    assert s._replay(done, maximize=True)[1].params["x"] == 10  # the raw best run
    assert 60 <= s.incumbent(done, DISTS, maximize=True).params["x"] <= 80


def plateau(p):
    """The centre sits on a plateau; the way up is the knob ranked last (y under 12)."""
    return 1000.0 * (1.5 if p["y"] < 12 else 1.0) * (1 + 0.01 * (p["x"] / 100))


def test_the_search_leaves_a_plateau_its_important_knobs_cannot_climb():
    """Local moves of the important knob (x) from the centre do not reach the step in y;
    interleaved global points ranked by the forest do, within 30 trials, in most seeds."""
    found = []
    for seed in range(5):
        s = TrustRegionSampler({"x": 50, "y": 60.0, "m": "a"}, importance=["x", "m", "y"],
                               seed=seed)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(direction="maximize", sampler=s)
        for _ in range(30):
            t = study.ask(DISTS)
            study.tell(t, plateau(t.params))
        found.append(study.best_value >= 1400)
    assert sum(found) == 5, found  # one-knob-at-a-time moves alone: 3 of 5 seeds


def test_a_stalled_region_restarts_instead_of_staying_at_the_floor():
    """12 local trials without improvement: 0.2 -> 0.1 -> 0.05 -> 0.025, then under the 0.02
    floor: the region restarts at 0.2 (TuRBO), not stuck at 0.02."""
    done = [_trial(0, {"x": 50, "y": 50.0, "m": "a"}, 100.0)]
    done += [_trial(i, {"x": 50 + i, "y": 50.0, "m": "a"}, 50.0) for i in range(1, 13)]
    s = TrustRegionSampler({"x": 50, "y": 50.0, "m": "a"}, global_every=0)
    assert s._replay(done[:10], maximize=True)[0] == pytest.approx(0.025)
    assert s._replay(done, maximize=True)[0] == pytest.approx(0.2)


def test_a_choice_the_bounds_pin_takes_no_move():
    """A categorical the rules' bound leaves one value of is never picked to move: every local
    move changes a knob that can change."""
    s = TrustRegionSampler({"x": 50, "y": 10.0, "m": "a"}, importance=["m", "x", "y"],
                           bounds={"m": ["a"]}, seed=4, max_moves=1, global_every=0)
    _, trials = run(s, 30)
    assert all(p["m"] == "a" for p in trials)
    assert all(a != b for a, b in zip(trials, trials[1:], strict=False))  # each move moved


def test_a_knob_at_its_bound_s_floor_moves_into_the_bound_not_onto_itself():
    """The rules put the InnoDB pool at its bound's floor (never smaller, only larger): a move
    that stepped below the floor and was clipped back would be a trial that changes nothing,
    half of that knob's moves. The step reflects at the bound instead."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = TrustRegionSampler({"x": 50, "y": 10.0, "m": "a"}, importance=["x"],
                           bounds={"x": [50, 80], "y": [10.0, 10.0], "m": ["a"]},
                           seed=5, global_every=0)
    study = optuna.create_study(direction="maximize", sampler=s)
    xs = []
    for _ in range(21):  # a flat objective: the incumbent stays the centre, at the floor
        t = study.ask(DISTS)
        study.tell(t, 1000.0)
        xs.append(t.params["x"])
    assert xs[0] == 50 and all(50 <= x <= 80 for x in xs)
    assert sum(x == 50 for x in xs[1:]) <= 2  # clipped onto the floor: about half of them
