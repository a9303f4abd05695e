"""The arms: every contender behind one small interface (start / propose / observe / close).

A searching arm gets a budget of trials and a seed; a fixed arm (default, rules, ceiling)
measures one config once per seed. The runner interleaves them, so an arm never evaluates
anything itself: it proposes a config and is told the measurement.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from abc import ABC, abstractmethod
from typing import Any

from pmem_advisor.tuner.evaluator import Measurement, TrialConfig

from .space import SearchSpace, configspace, from_configspace, optuna_distributions

ARM_NAMES = ("default", "rules", "random", "tpe", "smac", "pmem-advisor", "ceiling")


def objective(m: Measurement) -> float:
    """What every searching arm maximises: throughput; a failed trial counts as 0 tps."""
    return float(m.throughput_tps or 0.0) if m.ok else 0.0


class Arm(ABC):
    name: str = ""
    searching = True  # False: a fixed config, measured once per seed
    note = ""  # one line for the report (what the arm is, how it was set up)

    def __init__(self) -> None:
        self.unavailable: str | None = None  # why this arm cannot run here, shown in the report

    def prepare(self, space: SearchSpace) -> None:  # noqa: B027 - optional hook
        """Called once per scenario; sets ``unavailable`` when the arm cannot run on it."""

    @abstractmethod
    def start(self, space: SearchSpace, budget: int, seed: int) -> None: ...

    @abstractmethod
    def propose(self) -> TrialConfig | None:
        """The next config to measure, or None when the arm is done."""

    def observe(self, config: TrialConfig, measurement: Measurement) -> None:  # noqa: B027
        """Told the measurement of the config it proposed last."""

    def exhausted(self) -> bool:
        """True when the arm is known to have nothing more to propose (keeps rounds tight)."""
        return False

    def close(self) -> None:  # noqa: B027 - optional, idempotent
        """Release what ``start`` set up."""


class FixedArm(Arm):
    """One config, measured once per seed."""

    searching = False

    def __init__(self, name: str, note: str = "") -> None:
        super().__init__()
        self.name, self.note = name, note
        self._config: TrialConfig | None = None

    def config_for(self, space: SearchSpace) -> TrialConfig | None:
        return space.default

    def prepare(self, space: SearchSpace) -> None:
        self.unavailable = None
        if self.config_for(space) is None:
            self.unavailable = space.rules_note or "no config"

    def start(self, space: SearchSpace, budget: int, seed: int) -> None:
        self._config = self.config_for(space)

    def propose(self) -> TrialConfig | None:
        config, self._config = self._config, None
        return config

    def exhausted(self) -> bool:
        return self._config is None


class DefaultArm(FixedArm):
    def __init__(self) -> None:
        super().__init__("default", "server defaults (empty config)")


class RulesArm(FixedArm):
    def __init__(self) -> None:
        super().__init__("rules", "rules-only config (pmem_advisor.rules.recommend settings)")

    def config_for(self, space: SearchSpace) -> TrialConfig | None:
        return space.rules


class SearchArm(Arm):
    """Shared bookkeeping of the searching arms: the budget and an empty-space guard."""

    def prepare(self, space: SearchSpace) -> None:
        self.unavailable = None if space.params else "empty search space"

    def start(self, space: SearchSpace, budget: int, seed: int) -> None:
        self.space, self.left, self.seed = space, budget, seed

    def propose(self) -> TrialConfig | None:
        if self.left <= 0:
            return None
        self.left -= 1
        return self.ask()

    def exhausted(self) -> bool:
        return self.left <= 0

    @abstractmethod
    def ask(self) -> TrialConfig: ...


class OptunaArm(SearchArm):
    """Optuna with no rules: plain random search or plain TPE over the same space."""

    def __init__(self, name: str, sampler: str) -> None:
        super().__init__()
        self.name, self.sampler = name, sampler
        self.note = {
            "random": "Optuna RandomSampler, no rules",
            "tpe": "Optuna TPESampler (default settings, 10 random startup trials), no rules",
        }[sampler]

    def start(self, space: SearchSpace, budget: int, seed: int) -> None:
        import optuna

        super().start(space, budget, seed)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        if self.sampler == "tpe":
            sampler = optuna.samplers.TPESampler(seed=seed)
        else:
            sampler = optuna.samplers.RandomSampler(seed=seed)
        self.study = optuna.create_study(direction="maximize", sampler=sampler)
        self.dists = optuna_distributions(space)

    def ask(self) -> TrialConfig:
        self.trial = self.study.ask(self.dists)
        return self.space.config(dict(self.trial.params))

    def observe(self, config: TrialConfig, measurement: Measurement) -> None:
        self.study.tell(self.trial, objective(measurement))


class SmacArm(SearchArm):
    """SMAC3's hyperparameter-optimisation facade (random forest + EI), no rules.

    ``deterministic=True``: every trial is a new config (the facade would otherwise spend
    trials re-running its incumbent); SMAC's own output goes to a temporary directory.
    """

    name = "smac"
    note = ("SMAC3 HyperparameterOptimizationFacade (its random forest and EI), deterministic, "
            "no rules")

    def prepare(self, space: SearchSpace) -> None:
        super().prepare(space)
        if importlib.util.find_spec("smac") is None:
            self.unavailable = "SMAC3 is not installed here (pip install smac): arm not run"

    def start(self, space: SearchSpace, budget: int, seed: int) -> None:
        from smac import HyperparameterOptimizationFacade, Scenario

        super().start(space, budget, seed)
        self._tmp = tempfile.mkdtemp(prefix="bench-smac-")
        scenario = Scenario(
            configspace(space, seed),
            deterministic=True,
            n_trials=max(budget, 1),
            seed=seed,
            output_directory=f"{self._tmp}/smac",
        )
        # SMAC's own random forest with the facade's settings, two costs removed that change
        # nothing it learns: n_jobs=-1 waits on joblib workers, and its leaf cap of 2**20 (which
        # a few hundred points can never reach) makes sklearn pick its best-first builder,
        # ~70x slower per tree than the depth-first one that grows the same kind of tree.
        model = HyperparameterOptimizationFacade.get_model(scenario)
        model._rf_opts.update(n_jobs=1, max_leaf_nodes=None)
        self.facade = HyperparameterOptimizationFacade(
            scenario, _not_called, model=model, overwrite=True, logging_level=40
        )

    def ask(self) -> TrialConfig:
        self.info = self.facade.ask()
        return self.space.config(from_configspace(self.space, dict(self.info.config)))

    def observe(self, config: TrialConfig, measurement: Measurement) -> None:
        from smac.runhistory.dataclasses import TrialValue

        self.facade.tell(self.info, TrialValue(cost=-objective(measurement)))

    def close(self) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
            self._tmp = None


def _not_called(config: Any, seed: int = 0) -> float:  # SMAC wants a target; we ask/tell
    raise RuntimeError("the harness measures trials itself")
