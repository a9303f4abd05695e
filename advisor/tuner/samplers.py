"""Optuna samplers by name.

The latency SLO is set on each trial with ``Trial.set_constraint`` (Optuna >= 5); the TPE and
GP samplers read it from there, the others ignore it (the tuner still ranks by feasibility).
"""

from __future__ import annotations

import copy
import importlib.util
import warnings
from typing import Any

import optuna

from pmem_advisor.errors import CapabilityMissing, UsageError

SAMPLERS = ("tpe", "gp", "random", "cmaes", "trust-region")
MODEL_AFTER = 6  # own trials before the trust region trusts a model fitted on them


def startup_trials(n_trials: int) -> int:
    """Random trials before the model takes over: a quarter of the budget, 3 to 10."""
    return max(3, min(10, n_trials // 4))


def make_sampler(name: str, *, seed: int | None, n_trials: int,
                 centre: dict | None = None, importance: list[str] | None = None,
                 warm_starts: list[dict] | None = None, bounds: dict | None = None,
                 score: Any = None) -> optuna.samplers.BaseSampler:
    """``centre``/``importance``/``warm_starts``/``bounds``/``score`` shape the trust-region sampler
    (see ``TrustRegionSampler``); the other samplers ignore them."""
    if name == "trust-region":
        return TrustRegionSampler(centre, importance=importance, warm_starts=warm_starts,
                                  bounds=bounds, seed=seed, score=score)
    startup = startup_trials(n_trials)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if name == "tpe":
            return optuna.samplers.TPESampler(
                seed=seed, n_startup_trials=startup, multivariate=True
            )
        if name == "random":
            return optuna.samplers.RandomSampler(seed=seed)
        if name == "gp":
            if importlib.util.find_spec("torch") is None:
                raise CapabilityMissing(
                    "the gp sampler needs PyTorch", hint="pip install torch, or use --sampler tpe"
                )
            return MeasuredView(optuna.samplers.GPSampler(seed=seed, n_startup_trials=startup))
        if name == "cmaes":
            if importlib.util.find_spec("cmaes") is None:
                raise CapabilityMissing(
                    "the cmaes sampler needs the cmaes package", hint="pip install cmaes"
                )
            # its search space ignores PRUNED trials even with consider_pruned_trials: a view
            return MeasuredView(optuna.samplers.CmaEsSampler(
                seed=seed, n_startup_trials=startup, warn_independent_sampling=False))
    raise UsageError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")


class MeasuredView(optuna.samplers.BaseSampler):
    """A sampler that reads only COMPLETE trials (GP, CMA-ES) sees the search runs, which the tuner
    stores PRUNED with their run at tuner.MEASURED_STEP, as COMPLETE trials of that value.
    Writes (before/after trial) go to the real study."""

    def __init__(self, inner: optuna.samplers.BaseSampler) -> None:
        self._inner = inner

    @staticmethod
    def _view(study: optuna.Study) -> optuna.Study:
        from pmem_advisor.tuner.study import as_complete, measured

        real = study

        def get(deepcopy: bool = True, states: Any = None, use_cache: bool = False
                ) -> list[optuna.trial.FrozenTrial]:
            trials = [as_complete(t) if measured(t) is not None else t
                      for t in real._get_trials(deepcopy=deepcopy, states=None,
                                                use_cache=use_cache)]
            return [t for t in trials if states is None or t.state in states]

        view = copy.copy(study)
        view._get_trials = get  # type: ignore[method-assign]
        view.get_trials = lambda deepcopy=True, states=None: get(deepcopy, states)  # type: ignore[method-assign]
        return view

    def infer_relative_search_space(self, study, trial):
        return self._inner.infer_relative_search_space(self._view(study), trial)

    def sample_relative(self, study, trial, search_space):
        return self._inner.sample_relative(self._view(study), trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._inner.sample_independent(self._view(study), trial, param_name,
                                              param_distribution)

    def before_trial(self, study, trial):
        self._inner.before_trial(study, trial)

    def after_trial(self, study, trial, state, values):
        self._inner.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self._inner.reseed_rng()


# ------------------------------------------------------------------ rule-centred search
class TrustRegionSampler(optuna.samplers.BaseSampler):
    """Search that starts where the rules are and moves few knobs at a time.

    The papers' rules already place a config near a good one; a model-based optimiser that
    starts from random points spends its first trials rediscovering that (GPTuner, VLDB 2024,
    reaches its peers' best ~16x sooner from domain knowledge). This sampler:

    1. trial 0: ``centre`` (the rules' values; knobs it lacks at the space's default);
    2. then ``warm_starts`` in order (configs learnt from similar scenarios, ``transfer``);
    3. then a trust region around the best trial so far: each trial moves 1..``max_moves``
       knobs, picked with weights falling with their rank in ``importance`` (knowledge: the
       rules' important knobs, then transfer importances, cheap scopes before dear ones), by a
       Gaussian step of ``radius`` in the knob's unit range (log ranges in log space); a
       categorical knob switches to another choice. The radius grows by half after a trial
       that improved the best and halves after ``patience`` trials that did not (the
       success/failure rule of trust-region methods, e.g. TuRBO, Eriksson et al. 2019).
    ``bounds`` (the rules' (low, high) or allowed values) clip every move. Each trial draws
    ``candidates`` moves and takes the most promising: by ``score`` (values -> predicted
    speedup, from ``transfer``) until ``MODEL_AFTER`` trials are done, then by a small forest
    fitted on the study's own trials; with neither, one move is drawn.

    Stateless between calls: the radius is replayed from the study's trials, so a resumed or
    shared study continues the same way.
    """

    def __init__(self, centre: dict | None = None, *, importance: list[str] | None = None,
                 warm_starts: list[dict] | None = None, bounds: dict | None = None,
                 seed: int | None = None, radius: float = 0.2, min_radius: float = 0.02,
                 max_radius: float = 0.5, patience: int = 3, max_moves: int = 3,
                 score: Any = None, candidates: int = 16) -> None:
        import random

        self.centre = dict(centre or {})
        self.importance = list(importance or [])
        self.warm = [dict(w) for w in warm_starts or []]
        self.bounds = dict(bounds or {})
        self.radius0, self.min_radius, self.max_radius = radius, min_radius, max_radius
        self.patience, self.max_moves = patience, max_moves
        self.score, self.candidates = score, candidates
        self._rng = random.Random(seed)
        self._fallback = optuna.samplers.RandomSampler(seed=seed)

    # -- Optuna's sampler interface ------------------------------------------------------
    def infer_relative_search_space(self, study, trial):
        # search runs are stored PRUNED (tuner.MEASURED_STEP): they define the space too
        return optuna.search_space.IntersectionSearchSpace(include_pruned=True).calculate(study)

    def sample_relative(self, study, trial, search_space):
        from pmem_advisor.tuner.study import as_complete, measured

        if not search_space:
            return {}  # trial 0: sample_independent gives the centre
        done = [as_complete(t) for t in study.get_trials(deepcopy=False)
                if measured(t) is not None]
        warm = trial.number - 1
        if 0 <= warm < len(self.warm):
            return {n: self._valid(n, d, self.warm[warm].get(n, self.centre.get(n)))
                    for n, d in search_space.items()}
        maximize = study.direction == optuna.study.StudyDirection.MAXIMIZE
        radius, best = self._replay(done, maximize)
        incumbent = dict(best.params) if best is not None else {}
        start = {n: self._valid(n, d, incumbent.get(n, self.centre.get(n)))
                 for n, d in search_space.items()}
        moves = []
        for _ in range(self.candidates if self.score or len(done) >= MODEL_AFTER else 1):
            values = dict(start)
            for name in self._moves(list(search_space)):
                values[name] = self._step(name, search_space[name], values[name], radius)
            moves.append(values)
        if len(moves) == 1:
            return moves[0]
        scores = self._scores(moves, done, search_space, maximize)
        return moves[max(range(len(moves)), key=scores.__getitem__)]

    def _scores(self, moves, done, space, maximize: bool) -> list[float]:
        """How promising each candidate move is: a small forest fitted on this study's own
        trials once there are ``MODEL_AFTER`` of them, else the transfer score."""
        done = [t for t in done if t.value is not None and set(space) <= set(t.params)]
        if len(done) >= MODEL_AFTER:
            from sklearn.ensemble import RandomForestRegressor

            x = [_unit_row(t.params, space) for t in done]
            y = [t.value if maximize else -t.value for t in done]
            model = RandomForestRegressor(n_estimators=50, min_samples_leaf=2,
                                          random_state=self._rng.randrange(2**31), n_jobs=1)
            model.fit(x, y)
            return list(model.predict([_unit_row(m, space) for m in moves]))
        return [float(self.score(m)) for m in moves] if self.score else [0.0] * len(moves)

    def sample_independent(self, study, trial, param_name, param_distribution):
        if param_name in self.centre:
            return self._valid(param_name, param_distribution, self.centre[param_name])
        return self._fallback.sample_independent(study, trial, param_name, param_distribution)

    # -- the search ------------------------------------------------------------------------
    def _replay(self, done, maximize: bool):
        """The radius now and the best trial, from the completed trials in order."""
        radius, best, misses = self.radius0, None, 0
        for t in sorted(done, key=lambda t: t.number):
            if t.value is None:
                continue
            better = best is None or (t.value > best.value if maximize else t.value < best.value)
            if t.number > len(self.warm):  # the trust-region phase
                if better:
                    radius, misses = min(radius * 1.5, self.max_radius), 0
                else:
                    misses += 1
                    if misses >= self.patience:
                        radius, misses = max(radius / 2, self.min_radius), 0
            if better:
                best = t
        return radius, best

    def _moves(self, names: list[str]) -> list[str]:
        ranked = sorted(names, key=lambda n: self.importance.index(n)
                        if n in self.importance else len(self.importance))
        weights = [1.0 / (i + 1) for i in range(len(ranked))]
        k = self._rng.randint(1, max(1, min(self.max_moves, len(ranked))))
        picked: list[str] = []
        while len(picked) < k:
            name = self._rng.choices(ranked, weights)[0]
            if name not in picked:
                picked.append(name)
        return picked

    def _step(self, name, dist, value, radius):
        from optuna.distributions import CategoricalDistribution

        if isinstance(dist, CategoricalDistribution):
            others = [c for c in dist.choices if c != value]
            return self._valid(name, dist, self._rng.choice(others) if others else value)
        lo, hi, log = float(dist.low), float(dist.high), bool(getattr(dist, "log", False))
        u = unit_of(float(value), lo, hi, log) + self._rng.gauss(0.0, radius)
        u = -u if u < 0 else (2 - u if u > 1 else u)  # reflect at the edges
        return self._valid(name, dist, value_at(min(max(u, 0.0), 1.0), lo, hi, log))

    def _valid(self, name, dist, value):
        """``value`` as a legal point of ``dist``, inside the rules' bound for ``name``."""
        from optuna.distributions import CategoricalDistribution, IntDistribution

        bound = self.bounds.get(name)
        if isinstance(dist, CategoricalDistribution):
            allowed = [c for c in dist.choices if not isinstance(bound, list) or c in bound]
            allowed = allowed or list(dist.choices)
            return value if value in allowed else allowed[0]
        try:
            x = float(value)
        except (TypeError, ValueError):
            x = (float(dist.low) + float(dist.high)) / 2
        if isinstance(bound, (list, tuple)) and len(bound) == 2:  # numeric: (low, high)
            if bound[0] is not None:
                x = max(x, float(bound[0]))
            if bound[1] is not None:
                x = min(x, float(bound[1]))
        x = min(max(x, float(dist.low)), float(dist.high))
        step = getattr(dist, "step", None)
        if step:
            x = float(dist.low) + round((x - float(dist.low)) / step) * step
            x = min(x, float(dist.high))
        return int(round(x)) if isinstance(dist, IntDistribution) else x


def _unit_row(params: dict, space: dict) -> list[float]:
    from optuna.distributions import CategoricalDistribution

    row = []
    for name, dist in space.items():
        v = params.get(name)
        if isinstance(dist, CategoricalDistribution):
            i = dist.choices.index(v) if v in dist.choices else 0
            row.append(i / max(1, len(dist.choices) - 1))
        else:
            u = unit_of(float(v), float(dist.low), float(dist.high), bool(dist.log))
            row.append(min(max(u, 0.0), 1.0))
    return row


def unit_of(x: float, lo: float, hi: float, log: bool) -> float:
    """Position of ``x`` in [lo, hi] as a fraction (log ranges in log space), unclipped."""
    import math

    if hi <= lo:
        return 0.0
    if log and lo > 0:
        return (math.log(max(x, lo)) - math.log(lo)) / (math.log(hi) - math.log(lo))
    return (x - lo) / (hi - lo)


def value_at(u: float, lo: float, hi: float, log: bool) -> float:
    """The value at fraction ``u`` of [lo, hi] (log ranges in log space)."""
    import math

    if log and lo > 0:
        return math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
    return lo + u * (hi - lo)
