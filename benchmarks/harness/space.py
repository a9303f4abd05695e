"""The search space every searching arm explores, and its translations for Optuna and SMAC.

One ``SearchSpace`` per scenario is built once (from the tuner's catalog space when it is
there) and handed to every arm, so random, TPE, SMAC and the tuner search the same knobs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from pmem_advisor.errors import UsageError
from pmem_advisor.tuner.evaluator import TrialConfig

KINDS = ("int", "float", "categorical")


@dataclass(frozen=True)
class Param:
    """One knob to search. Values are in the server's base unit (the catalog's convention).

    ``init``: a re-initialisation knob (goes to ``TrialConfig.init_params``).
    """

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple = ()
    init: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UsageError(f"search-space knob {self.name}: unknown kind {self.kind!r}")
        if self.kind == "categorical":
            if not self.choices:
                raise UsageError(f"search-space knob {self.name}: no choices")
        elif self.low is None or self.high is None or self.low > self.high:
            raise UsageError(f"search-space knob {self.name}: bad bounds {self.low}..{self.high}")
        elif self.log and self.low <= 0:
            raise UsageError(f"search-space knob {self.name}: log scale needs a positive low")


@dataclass(frozen=True)
class SearchSpace:
    """The knobs plus the fixed points the fixed arms measure.

    ``rules``: the rules-only config, or None with ``rules_note`` saying why it is missing.
    ``durability_off``: the settings that make the unsafe ceiling (engine specific).
    """

    params: tuple[Param, ...]
    default: TrialConfig = field(default_factory=TrialConfig)
    rules: TrialConfig | None = None
    rules_note: str = ""
    durability_off: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # where the knobs came from, printed in the report

    def config(self, values: dict[str, Any]) -> TrialConfig:
        """Split sampled values into restart/reload params and re-initialisation params. A
        pair the server keeps ordered (io_capacity <= io_capacity_max) is ordered as ``tune``
        orders it (``knobs.pairs.ordered``): the config is what the server would run, for
        every arm."""
        from pmem_advisor.knobs.pairs import ordered

        values = ordered(values)
        init_names = {p.name for p in self.params if p.init}
        params = {k: v for k, v in values.items() if k not in init_names}
        init = {k: v for k, v in values.items() if k in init_names}
        return TrialConfig(params=params, init_params=init)


def config_key(config: TrialConfig) -> str:
    """A stable identity for a config: repeated measurements of it are grouped by this key."""
    return json.dumps(
        {"p": config.params, "i": config.init_params}, sort_keys=True, default=str
    )


def optuna_distributions(space: SearchSpace) -> dict[str, Any]:
    import optuna.distributions as od

    dists: dict[str, Any] = {}
    for p in space.params:
        if p.kind == "int":
            dists[p.name] = od.IntDistribution(int(p.low), int(p.high), log=p.log)
        elif p.kind == "float":
            dists[p.name] = od.FloatDistribution(float(p.low), float(p.high), log=p.log)
        else:
            dists[p.name] = od.CategoricalDistribution(list(p.choices))
    return dists


def configspace(space: SearchSpace, seed: int):
    """A ConfigSpace for SMAC. Categorical choices become their index as a string, because
    ConfigSpace compares items by value and our choices may mix types; ``from_configspace``
    maps them back."""
    from ConfigSpace import Categorical, ConfigurationSpace, Float, Integer

    cs = ConfigurationSpace(seed=seed)
    hps = []
    for p in space.params:
        if p.kind == "int":
            hps.append(Integer(p.name, (int(p.low), int(p.high)), log=p.log))
        elif p.kind == "float":
            hps.append(Float(p.name, (float(p.low), float(p.high)), log=p.log))
        else:
            hps.append(Categorical(p.name, [str(i) for i in range(len(p.choices))]))
    cs.add(hps)
    return cs


def from_configspace(space: SearchSpace, values: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in space.params:
        v = values[p.name]
        if p.kind == "categorical":
            out[p.name] = p.choices[int(v)]
        elif p.kind == "int":
            out[p.name] = int(v)
        else:
            out[p.name] = float(v)
    return out


def clamp(p: Param, value: Any) -> Any:
    """Bring a value (e.g. a rules prior) inside the param's range; None if it cannot be."""
    if p.kind == "categorical":
        return value if value in p.choices else None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(x):
        return None
    x = min(max(x, float(p.low)), float(p.high))
    return int(round(x)) if p.kind == "int" else x
