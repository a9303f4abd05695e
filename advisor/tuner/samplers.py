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


def trust_region_knowledge(space: Any, important: list[str] | None = None,
                           bounds: dict | None = None) -> dict[str, Any]:
    """What ``tune --sampler trust-region`` gives the sampler from the rules: the centre (the
    rules' value of every searched knob, the server's default where the rules set none), the
    move order (the rules' important knobs, then the cheap scopes before the dear ones) and
    the rules' bounds. Warm starts learnt from other scenarios need their datasets, which
    ``tune`` does not have: none here (``make bench`` gives its arm those too)."""
    from pmem_advisor.tuner.space import COST_ORDER

    ruled = space.rules_params is not None  # None with --no-rules: the defaults, no ranks
    # rules_params holds every searched knob (the default where the rules set none)
    base = space.rules_params if ruled else space.default_params
    centre = {n: v for n, v in base.items() if v is not None}
    names = [k.name for k in space.knobs]
    first = [n for n in important or [] if n in names] if ruled else []
    rest = sorted((k for k in space.knobs if k.name not in first),
                  key=lambda k: COST_ORDER.get(k.scope, 2))
    return {"centre": centre, "importance": [*first, *(k.name for k in rest)],
            "bounds": dict(bounds or {}) if ruled else {}}


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
    """Search that starts where the rules are, moves few knobs at a time, and looks further.

    The papers' rules already place a config near a good one; a model-based optimiser that
    starts from random points spends its first trials rediscovering that (GPTuner, VLDB 2024,
    reaches its peers' best ~16x sooner from domain knowledge). This sampler:

    1. trial 0: ``centre`` (the rules' values; knobs it lacks at the space's default);
    2. then ``warm_starts`` in order (configs learnt from similar scenarios, ``transfer``);
    3. then, alternately (every ``global_every``-th trial global, the rest local):
       - a local move around the incumbent: 1..``max_moves`` knobs, picked with weights
         falling with their rank in ``importance`` (knowledge: the rules' important knobs,
         then transfer importances, cheap scopes before dear ones), each by a Gaussian step
         of ``radius`` in the knob's unit range (log ranges in log space); a categorical knob
         switches to another choice; the best of ``candidates`` such moves;
       - a global point: the best of ``global_candidates`` points drawn uniformly over the
         whole space inside the rules' bounds. The rules' centre can be on a plateau whose
         way up is a knob the rules rank low; local moves of few, important knobs do not
         leave it, a random search does. SMAC interleaves random configurations the same
         way (every second one, Hutter et al., LION 2011); here they are ranked by the model
         like the local moves (BADS's alternating search and poll steps, Acerbi and Ma 2017).
    "Best" is by ``score`` (values -> predicted speedup, from ``transfer``) until
    ``MODEL_AFTER`` trials are measured, then by the expected improvement over the incumbent
    under a small forest fitted on the study's own runs (its trees' mean and spread, SMAC's
    acquisition: a point unlike the measured ones is worth a try, a near-copy of the
    incumbent is not); with neither, one point is drawn. ``bounds`` (the rules' (low, high)
    or allowed values) hold every point.

    The radius grows by half after a trial that improved on the incumbent and halves after
    ``patience`` local trials that did not (the success/failure rule of trust-region
    methods: TuRBO, Eriksson et al., NeurIPS 2019); when it would halve below ``min_radius``
    the region has stalled and restarts at ``radius`` (TuRBO's restart).

    Noise: one run is not the truth (a 25 s run's repeat spread is 5-15% on a quiet machine,
    more under load), and a search that takes its luckiest run as the incumbent stays there:
    nothing it tries beats the luck, so its radius collapses around a config that is not the
    best. Here a config measured more than once counts by the mean of its runs, and once the
    forest is fitted the incumbent is the measured config the forest predicts best (a run
    weighed with the runs near it), not the best single run.

    Stateless between calls: the radius and the incumbent are replayed from the study's
    trials and the local/global turn follows the trial number, so a resumed or shared study
    continues the same way.
    """

    def __init__(self, centre: dict | None = None, *, importance: list[str] | None = None,
                 warm_starts: list[dict] | None = None, bounds: dict | None = None,
                 seed: int | None = None, radius: float = 0.2, min_radius: float = 0.02,
                 max_radius: float = 0.5, patience: int = 3, max_moves: int = 3,
                 score: Any = None, candidates: int = 16, global_every: int = 2,
                 global_candidates: int = 64) -> None:
        import random

        self.centre = dict(centre or {})
        self.importance = list(importance or [])
        self.warm = [dict(w) for w in warm_starts or []]
        self.bounds = dict(bounds or {})
        self.radius0, self.min_radius, self.max_radius = radius, min_radius, max_radius
        self.patience, self.max_moves = patience, max_moves
        self.score, self.candidates = score, candidates
        self.global_every, self.global_candidates = global_every, global_candidates
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
        model = self._forest(done, search_space, maximize)
        if model is not None:
            best = self.incumbent(done, search_space, maximize, model) or best
        incumbent = dict(best.params) if best is not None else {}
        start = {n: self._valid(n, d, incumbent.get(n, self.centre.get(n)))
                 for n, d in search_space.items()}
        ranked = self.score is not None or model is not None
        if self.is_global(trial.number):
            points = [self._global(search_space)
                      for _ in range(self.global_candidates if ranked else 1)]
        else:
            points = []
            for _ in range(self.candidates if ranked else 1):
                values = dict(start)
                for name in self._moves([n for n in search_space
                                         if not self._pinned(n, search_space[n])]):
                    values[name] = self._step(name, search_space[name], values[name], radius)
                points.append(values)
        if len(points) == 1:
            return points[0]
        if model is not None:
            scores = self._improvement(model, points, start, search_space)
        else:
            scores = [float(self.score(p)) for p in points]
        return points[max(range(len(points)), key=scores.__getitem__)]

    def sample_independent(self, study, trial, param_name, param_distribution):
        if param_name in self.centre:
            return self._valid(param_name, param_distribution, self.centre[param_name])
        return self._fallback.sample_independent(study, trial, param_name, param_distribution)

    def is_global(self, number: int) -> bool:
        """Whether trial ``number`` (after the warm starts) draws over the whole space."""
        return (self.global_every > 0 and number > len(self.warm)
                and (number - len(self.warm)) % self.global_every == 0)

    # -- the model -------------------------------------------------------------------------
    def _forest(self, done, space, maximize: bool):
        """A small forest on this study's own runs (higher = better), once there are
        ``MODEL_AFTER`` of them; None before."""
        done = [t for t in done if t.value is not None and set(space) <= set(t.params)]
        if len(done) < MODEL_AFTER:
            return None
        from sklearn.ensemble import RandomForestRegressor

        x = [_unit_row(t.params, space) for t in done]
        y = [t.value if maximize else -t.value for t in done]
        model = RandomForestRegressor(n_estimators=50, min_samples_leaf=2,
                                      random_state=self._rng.randrange(2**31), n_jobs=1)
        return model.fit(x, y)

    def incumbent(self, done, space, maximize: bool, model=None):
        """The measured trial the forest (``model``, else one fitted here) predicts best: a
        noise-aware incumbent, a lucky run weighed with the runs near it. None before
        ``MODEL_AFTER`` measured trials."""
        done = [t for t in done if t.value is not None and set(space) <= set(t.params)]
        model = model if model is not None else self._forest(done, space, maximize)
        if model is None or not done:
            return None
        pred = model.predict([_unit_row(t.params, space) for t in done])
        return done[max(range(len(done)), key=lambda i: (pred[i], -done[i].number))]

    @staticmethod
    def _improvement(model, points, start, space) -> list[float]:
        """Expected improvement of each point over the incumbent's predicted value, the
        prediction's spread taken across the forest's trees (as SMAC does)."""
        import numpy as np
        from scipy.stats import norm

        rows = np.asarray([_unit_row(p, space) for p in points])
        per_tree = np.stack([t.predict(rows) for t in model.estimators_])
        mean, sd = per_tree.mean(axis=0), per_tree.std(axis=0)
        best = float(model.predict(np.asarray([_unit_row(start, space)]))[0])
        sd = np.maximum(sd, 1e-9 * max(abs(best), 1.0))
        z = (mean - best) / sd
        return list((mean - best) * norm.cdf(z) + sd * norm.pdf(z))

    # -- the search ------------------------------------------------------------------------
    def _replay(self, done, maximize: bool):
        """The radius now and the incumbent trial, from the measured trials in order. A
        config measured more than once counts by the mean of its runs: a trial improves when
        its config's mean becomes the best mean so far. Global trials are no try of the
        region: they grow it when they improve, and never shrink it."""
        sign = 1.0 if maximize else -1.0
        runs: dict[str, list[float]] = {}
        first: dict[str, Any] = {}
        radius, best, best_mean, misses = self.radius0, None, None, 0
        for t in sorted(done, key=lambda t: t.number):
            if t.value is None:
                continue
            key = _key(t.params)
            runs.setdefault(key, []).append(sign * t.value)
            first.setdefault(key, t)
            top = max(runs, key=lambda k: sum(runs[k]) / len(runs[k]))
            top_mean = sum(runs[top]) / len(runs[top])
            better = best_mean is None or (top == key and top_mean > best_mean)
            if t.number > len(self.warm):  # the search phase
                if better:
                    radius, misses = min(radius * 1.5, self.max_radius), 0
                elif not self.is_global(t.number):
                    misses += 1
                    if misses >= self.patience:
                        misses = 0
                        # under the floor the region has stalled: restart it (TuRBO)
                        radius = radius / 2 if radius / 2 >= self.min_radius else self.radius0
            best, best_mean = first[top], top_mean
        return radius, best

    def _global(self, space) -> dict:
        """A point drawn uniformly over the space inside the rules' bounds (log ranges in log
        space)."""
        from optuna.distributions import CategoricalDistribution

        out = {}
        for name, dist in space.items():
            if isinstance(dist, CategoricalDistribution):
                out[name] = self._valid(name, dist, self._rng.choice(self._allowed(name, dist)))
                continue
            lo, hi, log = float(dist.low), float(dist.high), bool(getattr(dist, "log", False))
            ulo, uhi = self._unit_bound(name, dist)
            u = self._rng.uniform(ulo, uhi)
            out[name] = self._valid(name, dist, value_at(u, lo, hi, log))
        return out

    def _unit_bound(self, name, dist) -> tuple[float, float]:
        """The rules' (low, high) bound for numeric ``dist`` in its unit range (log ranges in
        log space); (0, 1) when the rules bound nothing."""
        lo, hi, log = float(dist.low), float(dist.high), bool(getattr(dist, "log", False))
        bound = self.bounds.get(name)
        ulo, uhi = 0.0, 1.0
        if isinstance(bound, (list, tuple)) and len(bound) == 2:
            if bound[0] is not None:
                ulo = min(max(unit_of(float(bound[0]), lo, hi, log), 0.0), 1.0)
            if bound[1] is not None:
                uhi = min(max(unit_of(float(bound[1]), lo, hi, log), 0.0), 1.0)
        return ulo, max(ulo, uhi)

    def _allowed(self, name, dist) -> list:
        """The choices of a categorical ``dist`` inside the rules' bound for ``name`` (all of
        them when the bound allows none)."""
        bound = self.bounds.get(name)
        allowed = [c for c in dist.choices if not isinstance(bound, list) or c in bound]
        return allowed or list(dist.choices)

    def _pinned(self, name, dist) -> bool:
        """A knob the rules' bound leaves one value of: a move there changes nothing."""
        from optuna.distributions import CategoricalDistribution

        if isinstance(dist, CategoricalDistribution):
            return len(self._allowed(name, dist)) == 1
        ulo, uhi = self._unit_bound(name, dist)
        return ulo == uhi

    def _moves(self, names: list[str]) -> list[str]:
        ranked = sorted(names, key=lambda n: self.importance.index(n)
                        if n in self.importance else len(self.importance))
        if not ranked:
            return []
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
        # reflect at the edges of the rules' bound, not only of the range: a knob the rules
        # set at their bound's floor (the pool) would otherwise be clipped back onto its own
        # value by every move downwards, half its moves a trial that changes nothing
        ulo, uhi = self._unit_bound(name, dist)
        u = unit_of(float(value), lo, hi, log) + self._rng.gauss(0.0, radius)
        u = 2 * ulo - u if u < ulo else (2 * uhi - u if u > uhi else u)
        return self._valid(name, dist, value_at(min(max(u, ulo), uhi), lo, hi, log))

    def _valid(self, name, dist, value):
        """``value`` as a legal point of ``dist``, inside the rules' bound for ``name``."""
        from optuna.distributions import CategoricalDistribution, IntDistribution

        bound = self.bounds.get(name)
        if isinstance(dist, CategoricalDistribution):
            allowed = self._allowed(name, dist)
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


def _key(params: dict) -> str:
    """One config's identity, for grouping its repeated runs."""
    return repr(sorted(params.items()))


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
    """Position of ``x`` in [lo, hi] as a fraction (log ranges in log space), unclipped on
    both sides; a non-positive ``x`` has no log position and sits at the low end."""
    import math

    if hi <= lo:
        return 0.0
    if log and lo > 0:
        if x <= 0:
            return 0.0
        return (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))
    return (x - lo) / (hi - lo)


def value_at(u: float, lo: float, hi: float, log: bool) -> float:
    """The value at fraction ``u`` of [lo, hi] (log ranges in log space)."""
    import math

    if log and lo > 0:
        return math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
    return lo + u * (hi - lo)
