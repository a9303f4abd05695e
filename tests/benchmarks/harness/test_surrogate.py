"""The surrogate: fitted and checked on held-out folds, refused when poor, noise from the
measured repeats, measured fixed points answered from their own runs, arms credited with the
noise-free value of the config they picked."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.harness import stats, surrogate
from benchmarks.harness.runner import TrialRecord
from pmem_advisor.tuner.evaluator import Measurement, TrialConfig
from tests.benchmarks.synthetic import SyntheticEvaluator, make_dataset


def test_a_learnable_dataset_fits_well(tmp_path):
    make_dataset(tmp_path, rows=60)
    data = surrogate.load_scenario("syn-pg", tmp_path)
    x, y = data.training()
    ceilings = [r for r in data.rows if r["kind"] in ("ceiling", "repeat-ceiling")]
    assert len(ceilings) == 4 and x.shape == (60 - 4, 3)  # durability off: not training data
    fit = surrogate.fit(x, y)
    assert fit.refused is None, fit.refused
    assert set(fit.cv) == {"random-forest", "gradient-boosting"}
    assert fit.kind == max(fit.cv, key=fit.cv.get)
    ev = surrogate.SurrogateEvaluator(data, fit)
    truth = SyntheticEvaluator(noise=0)
    good, bad = {"x": 70, "y": 30.0, "mode": "b"}, {"x": 5, "y": 90.0, "mode": "a"}
    assert ev.expected(TrialConfig(params=good)) > ev.expected(TrialConfig(params=bad))
    assert truth.true_tps(TrialConfig(params=good)) > truth.true_tps(TrialConfig(params=bad))


def test_pure_noise_is_refused():
    rng = np.random.default_rng(0)
    x, y = rng.random((40, 3)), rng.random(40) * 1000
    fit = surrogate.fit(x, y)
    assert fit.refused and "too poor" in fit.refused


def test_crashes_do_not_pass_a_model_that_learnt_only_where_the_server_crashed():
    # The completed runs are noise; a third of the configs crash (0 tps) where x0 is high.
    # Over all rows the model looks good (it predicts the crashes); over the completed runs
    # it predicts nothing, and the scenario is refused.
    rng = np.random.default_rng(1)
    x = rng.random((45, 3))
    y = np.where(x[:, 0] > 0.66, 0.0, 1500 + rng.random(45) * 300)
    fit = surrogate.fit(x, y)
    assert fit.r2 >= surrogate.MIN_R2 and fit.spearman >= surrogate.MIN_SPEARMAN
    assert fit.failed == int((y == 0).sum()) and fit.completed is not None
    assert fit.refused and "completed runs" in fit.refused
    assert "completed runs" in fit.completed_text()


def test_with_failures_the_kind_is_chosen_by_the_completed_runs_too():
    from sklearn.metrics import r2_score
    from sklearn.model_selection import KFold, cross_val_predict

    rng = np.random.default_rng(3)
    x = rng.random((40, 3))
    y = np.where(x[:, 1] > 0.85, 0.0, 1000 + 600 * x[:, 0] + rng.random(40) * 150)
    fit = surrogate.fit(x, y, seed=0)
    ok = y > 0
    folds = KFold(n_splits=surrogate.FOLDS, shuffle=True, random_state=0)
    score = {}
    for kind, model in surrogate.candidates(0).items():
        pred = cross_val_predict(model, x, y, cv=folds)
        score[kind] = min(r2_score(y, pred), r2_score(y[ok], pred[ok]))
    assert fit.kind == max(score, key=score.get)
    assert fit.completed is not None and fit.completed[0] == pytest.approx(score[fit.kind])


def test_no_failures_no_completed_figures():
    rng = np.random.default_rng(2)
    x = rng.random((40, 2))
    fit = surrogate.fit(x, 1000 + 500 * x[:, 0])
    assert fit.completed is None and fit.failed == 0 and fit.completed_text() == ""


def test_noise_comes_from_the_repeats(tmp_path):
    make_dataset(tmp_path, rows=30, noise=0.05)
    data = surrogate.load_scenario("syn-pg", tmp_path)
    ratios = surrogate.noise_ratios(data.rows)
    assert len(ratios) >= 9  # defaults, rules, ceiling three times each at least
    assert 0.01 < float(np.std(ratios)) < 0.15


def test_measured_points_answer_with_their_own_runs(tmp_path):
    make_dataset(tmp_path, rows=30)
    data = surrogate.load_scenario("syn-pg", tmp_path)
    fit = surrogate.fit(*data.training())
    ev = surrogate.SurrogateEvaluator(data, fit, seed=3)
    defaults = data.fixed("default")
    for _ in range(5):
        m = ev.evaluate(TrialConfig())
        assert m.throughput_tps in defaults
        assert m.raw["expected"] == sum(defaults) / len(defaults)
    ceiling = ev.evaluate(data.fixed_config("ceiling"))
    assert ceiling.throughput_tps in data.fixed("ceiling")


def test_arms_are_credited_with_the_value_of_the_config_they_picked():
    a, b = TrialConfig(params={"x": 1}), TrialConfig(params={"x": 2})

    def rec(i, cfg, seen, worth):
        m = Measurement(ok=True, throughput_tps=seen, raw={"expected": worth})
        return TrialRecord("t", 0, i, i, cfg, m, 0.0)

    # b looked best (a lucky draw) and is credited with what it is worth, not what was seen
    curve = stats.best_curve([rec(1, a, 100, 100), rec(2, b, 150, 90)])
    assert curve == [100, 90]


def test_the_fast_forest_prediction_is_the_forests_own():
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    rng = np.random.default_rng(1)
    x, y = rng.random((30, 4)), rng.random(30)
    for model in (RandomForestRegressor(n_estimators=20, random_state=0).fit(x, y),
                  GradientBoostingRegressor(n_estimators=20, random_state=0).fit(x, y)):
        row = list(rng.random(4))
        assert surrogate.predict(model, row) == pytest.approx(model.predict([row])[0],
                                                              rel=1e-6)


def test_a_measured_value_beyond_the_range_is_not_taken_for_the_edges():
    """The rules' 64 MB log buffer lies beyond a 2-16 MB searched range; clipped, every rules
    row would tell the model how fast 16 MB is (the real server ran 64 MB 13.6% slower)."""
    knobs = [surrogate.Knob("innodb_log_buffer_size", 2 << 20, 16 << 20, log=True)]
    edge = surrogate.features(knobs, {"innodb_log_buffer_size": 16 << 20})
    beyond = surrogate.features(knobs, {"innodb_log_buffer_size": 64 << 20})
    assert edge == pytest.approx([1.0])
    assert beyond == pytest.approx([5 / 3])  # log2(64/2) / log2(16/2)
    below = surrogate.features(knobs, {"innodb_log_buffer_size": 1 << 20})
    assert below == pytest.approx([-1 / 3])  # below the low end too, not at it
    x = np.array([[0.0], [0.5], [1.0], [1.0], beyond, beyond])
    y = np.array([100.0, 100.0, 100.0, 100.0, 50.0, 50.0])
    from sklearn.tree import DecisionTreeRegressor

    model = DecisionTreeRegressor(random_state=0).fit(x, y)
    assert model.predict(np.array([edge]))[0] == pytest.approx(100.0)


def test_an_arm_measures_the_same_alone_as_beside_other_arms(tmp_path):
    """Each arm draws its noise from its own stream: SMAC3's result must not change because
    another arm was added to the run or the interleaving order rotated differently."""
    from benchmarks.harness.arms import OptunaArm, RulesArm
    from benchmarks.harness.runner import run_interleaved
    from tests.benchmarks.synthetic import synthetic_space

    make_dataset(tmp_path, rows=40)
    data = surrogate.load_scenario("syn-pg", tmp_path)
    fit = surrogate.fit(*data.training())

    def tpe_runs(arms):
        ev = surrogate.SurrogateEvaluator(data, fit, seed=5)
        records, _ = run_interleaved(ev, synthetic_space(), arms, budget=6, seeds=[5])
        return [(r.config, r.measurement.throughput_tps) for r in records if r.arm == "tpe"]

    alone = tpe_runs([OptunaArm("tpe", "tpe")])
    beside = tpe_runs([RulesArm(), OptunaArm("random", "random"), OptunaArm("tpe", "tpe")])
    assert len(alone) == 6 and alone == beside
