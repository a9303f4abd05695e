"""The samplers learn from search runs stored PRUNED (tuner.MEASURED_STEP), so that only the
verdict trial is COMPLETE and Optuna's best trial is the report's (issue 12)."""

from __future__ import annotations

import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState

from pmem_advisor.tuner.samplers import MeasuredView, make_sampler
from pmem_advisor.tuner.study import MEASURED_STEP, as_complete, measured

DIST = {"x": FloatDistribution(0, 100)}


def _run(study: optuna.Study, x: float) -> None:
    t = study.ask(DIST)
    t.report(-abs(x - 70), MEASURED_STEP)
    study.tell(t, state=TrialState.PRUNED)


class _Seeing(optuna.samplers.RandomSampler):
    """Records the COMPLETE trials a GP-like sampler would read."""

    seen: list[list[float]] = []

    def sample_relative(self, study, trial, search_space):
        done = study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        self.seen.append([t.value for t in done])
        return super().sample_relative(study, trial, search_space)


def test_measured_reads_pruned_runs_and_complete_values():
    study = optuna.create_study(direction="maximize")
    _run(study, 60.0)
    t = study.trials[0]
    assert t.state == TrialState.PRUNED and measured(t) == -10.0
    c = as_complete(t)
    assert c.state == TrialState.COMPLETE and c.value == -10.0 and t.state == TrialState.PRUNED
    study.add_trial(optuna.trial.create_trial(params={"x": 1.0}, distributions=DIST, value=5.0))
    assert measured(study.trials[1]) == 5.0
    t = study.ask(DIST)
    study.tell(t, state=TrialState.FAIL)
    assert measured(study.trials[2]) is None and as_complete(study.trials[2]).state == \
        TrialState.FAIL


def test_a_complete_only_sampler_sees_the_runs_through_the_view():
    _Seeing.seen = []
    study = optuna.create_study(direction="maximize", sampler=MeasuredView(_Seeing(seed=0)))
    for x in (10.0, 50.0, 90.0):
        _run(study, x)
    study.ask(DIST)
    assert _Seeing.seen[-1] == [-60.0, -20.0, -20.0]
    assert all(t.state != TrialState.COMPLETE for t in study.trials)  # the store is unchanged


def _miss(t) -> float:
    return abs(t.params["x"] - 70) + abs(t.params["y"] - 30)


def test_tpe_and_cmaes_learn_from_pruned_runs_as_from_complete_ones():
    """Same seed, same objective: the runs stored PRUNED steer the sampler exactly as COMPLETE
    values would (CMA-ES alone ignores PRUNED trials in its search space: hence the view)."""
    dist = {"x": FloatDistribution(0, 100), "y": FloatDistribution(0, 100)}
    for name in ("tpe", "cmaes"):
        picked = {}
        for pruned in (False, True):
            study = optuna.create_study(direction="maximize",
                                        sampler=make_sampler(name, seed=1, n_trials=40))
            for _ in range(40):
                t = study.ask(dist)
                v = -_miss(t)
                if pruned:
                    t.report(v, MEASURED_STEP)
                    study.tell(t, state=TrialState.PRUNED)
                else:
                    study.tell(t, v)
            picked[pruned] = [t.params for t in study.trials]
            late = sum(_miss(t) for t in study.trials[-10:]) / 10
            assert late < sum(_miss(t) for t in study.trials[:5]) / 5 / 2, (name, pruned)
        assert picked[True] == picked[False], name


def test_tune_s_trust_region_gets_the_rules_centre_order_and_bounds():
    from pmem_advisor.tuner.samplers import TrustRegionSampler, trust_region_knowledge
    from pmem_advisor.tuner.space import COST_ORDER
    from tests.tuner.conftest import make_space
    from tests.tuner.synthetic import BOUNDS, IMPORTANT

    space = make_space()
    k = trust_region_knowledge(space, IMPORTANT, BOUNDS)
    assert k["centre"] == space.rules_params  # every searched knob, the rules' value
    assert k["centre"]["shared_buffers"] == 262144
    names = [x.name for x in space.knobs]
    first = [n for n in IMPORTANT if n in names]
    assert k["importance"][: len(first)] == first and sorted(k["importance"]) == sorted(names)
    scopes = {x.name: x.scope for x in space.knobs}
    rest = [COST_ORDER[scopes[n]] for n in k["importance"][len(first):]]
    assert rest == sorted(rest)  # then the cheap scopes before the dear ones
    assert k["bounds"] == BOUNDS
    sampler = make_sampler("trust-region", seed=1, n_trials=10, **k)
    assert isinstance(sampler, TrustRegionSampler) and sampler.centre == k["centre"]
    # --no-rules: the server's defaults are the centre, no rule ranks or bounds anything
    bare = make_space(use_rules=False)
    k = trust_region_knowledge(bare, IMPORTANT, BOUNDS)
    assert k["centre"] == {n: v for n, v in bare.default_params.items() if v is not None}
    assert k["bounds"] == {}
    order = [COST_ORDER[{x.name: x.scope for x in bare.knobs}[n]] for n in k["importance"]]
    assert order == sorted(order)  # by cost alone
