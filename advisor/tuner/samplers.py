"""Optuna samplers by name.

The latency SLO is set on each trial with ``Trial.set_constraint`` (Optuna >= 5); the TPE and
GP samplers read it from there, the others ignore it (the tuner still ranks by feasibility).
"""

from __future__ import annotations

import importlib.util
import warnings

import optuna

from pmem_advisor.errors import CapabilityMissing, UsageError

SAMPLERS = ("tpe", "gp", "random", "cmaes")

def startup_trials(n_trials: int) -> int:
    """Random trials before the model takes over: a quarter of the budget, 3 to 10."""
    return max(3, min(10, n_trials // 4))


def make_sampler(name: str, *, seed: int | None, n_trials: int) -> optuna.samplers.BaseSampler:
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
            return optuna.samplers.GPSampler(seed=seed, n_startup_trials=startup)
        if name == "cmaes":
            if importlib.util.find_spec("cmaes") is None:
                raise CapabilityMissing(
                    "the cmaes sampler needs the cmaes package", hint="pip install cmaes"
                )
            return optuna.samplers.CmaEsSampler(
                seed=seed, n_startup_trials=startup, warn_independent_sampling=False
            )
    raise UsageError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")
