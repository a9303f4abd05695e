"""The search space: which knobs the tuner moves, in which ranges, and the two baselines.

Built once from the knob catalog and the rules' recommendation, then stored in the study
(``to_dict``/``from_dict``) so that a resumed run or a second worker searches the same space
even if the rules or the machine differ.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from pmem_advisor.engines import api
from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.knobs.pairs import ordered
from pmem_advisor.tuner.limits import LOW_SPAN, UNIT_BYTES, Limits

NUMERIC_TYPES = {"int", "size", "duration", "real"}
TUNABLE_TYPES = NUMERIC_TYPES | {"bool", "enum"}
# Scopes in the order of their cost: a reinit knob needs a fresh data directory.
COST_ORDER = {"session": 0, "reload": 1, "restart": 2, "reinit": 3}
DEFAULT_KNOBS_FILE = Path(__file__).with_name("default_knobs.yaml")
# Log scale when a numeric range spans more than an order of magnitude (sizes, I/O capacities).
LOG_RATIO = 16


@dataclass
class KnobSpec:
    """What the tuner needs to know of one catalog knob (a duck-typed copy of ``Knob``)."""

    name: str
    type: str
    scope: str
    default: Any = None
    min: float | None = None
    max: float | None = None
    values: list[Any] | None = None
    safety: str = "safe"
    unit: str | None = None
    category: str = ""
    # Enum values that risk durability (nosync, O_DIRECT_NO_FSYNC) or need a server build
    # option (lz4, zstd, io_uring): left out of the space unless allowed / known built.
    risky_values: list[Any] = field(default_factory=list)
    build_values: list[Any] = field(default_factory=list)
    auto_values: list[Any] = field(default_factory=list)  # -1 = "derive it": not a point
    tune_range: tuple | None = None  # the manual's sane range (catalog ``tune_range``)

    @classmethod
    def from_knob(cls, knob: Any) -> KnobSpec:
        values = getattr(knob, "values", None)
        return cls(
            name=knob.name,
            type=str(knob.type),
            scope=str(knob.scope),
            default=getattr(knob, "default", None),
            min=getattr(knob, "min", None),
            max=getattr(knob, "max", None),
            values=list(values) if values else None,
            safety=str(getattr(knob, "safety", "safe") or "safe"),
            unit=getattr(knob, "unit", None),
            category=str(getattr(knob, "category", "") or ""),
            risky_values=list(getattr(knob, "risky_values", ()) or ()),
            build_values=list(getattr(knob, "build_values", ()) or ()),
            auto_values=list(getattr(knob, "auto_values", ()) or ()),
            tune_range=tuple(getattr(knob, "tune_range", ()) or ()) or None,
        )


@dataclass
class SpaceKnob:
    """One dimension: a knob, its distribution, and where its range came from."""

    name: str
    type: str
    scope: str
    default: Any
    low: float | None = None
    high: float | None = None
    choices: list[Any] | None = None
    log: bool = False
    step: float | None = None
    source: str = "catalog"  # catalog | hardware | manual | rules | data
    unit_bytes: int | None = None  # size knobs: bytes per unit, for readable values

    def snap(self, value: Any) -> Any:
        """A sampled value made readable: stepped floats on their step, sizes on 5 significant
        bits (2320M, not 2397834243), always inside the range."""
        if self.step:
            return self.coerce(value)
        if self.type != "size" or not self.unit_bytes or isinstance(value, bool):
            return value
        if not isinstance(value, (int, float)) or value <= 0:
            return value
        grain = max(1, 2 ** max(0, math.floor(math.log2(value * self.unit_bytes)) - 4)
                    // self.unit_bytes)
        snapped = int(round(value / grain) * grain)
        return int(min(max(snapped, math.ceil(self.low)), math.floor(self.high)))

    def distribution(self) -> BaseDistribution:
        if self.choices is not None:
            return CategoricalDistribution(list(self.choices))
        if self.type == "real":
            return FloatDistribution(float(self.low), float(self.high), log=self.log,
                                     step=self.step)
        return IntDistribution(int(self.low), int(self.high), log=self.log)

    def coerce(self, value: Any) -> Any:
        """A value of this knob's type, clamped into its range (for enqueued baselines)."""
        if self.choices is not None:
            return value if value in self.choices else self.choices[0]
        number = float(value)
        number = min(max(number, float(self.low)), float(self.high))
        if self.step:
            number = self.low + round((number - self.low) / self.step) * self.step
            return round(number, 10)
        return number if self.type == "real" else int(round(number))


@dataclass
class SearchSpace:
    """Knobs grouped by cost, base settings every tuned trial keeps, and the two baselines."""

    engine: str
    flavour: str
    version: str
    knobs: list[SpaceKnob]
    base: dict[str, Any] = field(default_factory=dict)  # rule settings outside the space
    base_init: dict[str, Any] = field(default_factory=dict)  # ... of reinit knobs
    default_params: dict[str, Any] = field(default_factory=dict)
    rules_params: dict[str, Any] | None = None  # None with --no-rules
    reasons: dict[str, str] = field(default_factory=dict)  # knob -> the rule's reason
    # The defaults baseline's smallest change that makes it hold the data (tuner/feasible.py):
    # empty when the server's defaults can run the workload as they are.
    default_fixes: dict[str, Any] = field(default_factory=dict)
    fix_notes: list[str] = field(default_factory=list)

    @property
    def reinit_knobs(self) -> list[SpaceKnob]:
        return [k for k in self.knobs if k.scope == "reinit"]

    def distributions(self) -> dict[str, BaseDistribution]:
        return {k.name: k.distribution() for k in self.knobs}

    def split(self, params: dict[str, Any], *, snap: bool = True
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(runtime params, init params) of a trial's parameters; sampled values are snapped
        to readable ones, enqueued baselines (``snap=False``) are kept exactly."""
        knobs = {k.name: k for k in self.knobs}
        if snap:
            params = {n: knobs[n].snap(v) if n in knobs else v for n, v in params.items()}
            params = ordered(params, self.base)
        reinit = {k.name for k in self.reinit_knobs}
        runtime = {n: v for n, v in params.items() if n not in reinit}
        return runtime, {n: v for n, v in params.items() if n in reinit}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchSpace:
        data = dict(data)
        data["knobs"] = [SpaceKnob(**k) for k in data["knobs"]]
        return cls(**data)


def default_knob_names(engine: str) -> list[str]:
    """The performance knobs searched when the rules name none (data file, per engine; an
    engine not in it names them in its own YAML: ``tuning.default_knobs``)."""
    with open(DEFAULT_KNOBS_FILE, encoding="utf-8") as f:
        names = yaml.safe_load(f).get(engine)
    if names is None:
        return api.get_engine(engine).default_tune_knobs()
    return list(names)


def _over_cap(spec: KnobSpec, limits: Limits) -> bool:
    cap = limits.cap(spec)
    d = spec.default
    return (cap is not None and isinstance(d, (int, float)) and not isinstance(d, bool)
            and d > cap)


def _numeric_range(spec: KnobSpec, bound: Any, anchors: list[Any],
                   limits: Limits | None = None) -> tuple[float, float, str]:
    lo, hi, source = spec.min, spec.max, "catalog"
    cap = limits.cap(spec) if limits is not None else None
    if cap is not None and hi is not None and cap < hi:  # the hardware's ceiling, not the
        hi, source = cap, "hardware"                     # server's legal maximum
    floor = limits.floor(spec) if limits is not None else None
    if floor is not None and lo is not None and floor > lo:
        lo = floor
    if spec.tune_range:  # the manual's sane range: a legal 4 GB block is no config to run
        if lo is None or spec.tune_range[0] > lo:
            lo = spec.tune_range[0]
        if hi is None or spec.tune_range[1] < hi:
            hi, source = spec.tune_range[1], "manual"
    if isinstance(bound, tuple) and len(bound) == 2:  # a rule bound; None = keep the above
        lo = bound[0] if bound[0] is not None else lo
        hi = bound[1] if bound[1] is not None else hi
        source = "rules"
    if lo is None or hi is None:
        raise UsageError(f"knob {spec.name} has no range to search (give the rules a bound)")
    # The default and the rules' value must be inside so that both baselines are valid points.
    for a in anchors:
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            lo, hi = min(lo, a), max(hi, a)
    if spec.min is not None:
        lo = max(lo, spec.min)
        if lo in spec.auto_values:  # wal_buffers' -1 means "derive it", not a size
            lo += 1
    if spec.max is not None:
        hi = min(hi, spec.max)
    data = limits.data_bounds.get(spec.name) if limits is not None else None
    if data is not None:  # the data's demands win over anchors: a default that cannot hold
        if data.low is not None and data.low > lo:  # the data is fixed, not searched
            lo, source = data.low, "data"
        if data.high is not None and data.high < hi:
            hi, source = data.high, "data"
            if lo > hi:  # a floor from a host-derived default (80% of RAM / 16): not the
                lo = max(spec.min or 0, data.low or 0, hi / LOW_SPAN)  # data's demand
        if lo > hi:
            raise UsageError(f"knob {spec.name}: no value fits both the data ({data.reason}) "
                             f"and the budget (at most {hi:,.0f})")
    return float(lo), float(hi), source


def _space_knob(spec: KnobSpec, bound: Any, prior: Any, limits: Limits | None = None,
                allow_unsafe: bool = False, clip_default: bool = False) -> SpaceKnob | None:
    anchors = [a for a in (spec.default, prior) if a is not None and a not in spec.auto_values]
    if clip_default and limits is not None and _over_cap(spec, limits):
        # A host-derived default (DuckDB's memory_limit: 80% of the host's RAM) above the
        # budget's cap: the default trial runs without params, so the range need not hold it.
        anchors = [prior] if prior is not None and prior not in spec.auto_values else []
    if spec.scope == "reinit":
        # A small outer set: default, the rules' value, and the values the rules allow.
        choices: list[Any] = []
        extra = list(bound) if isinstance(bound, list) else []
        for v in [*anchors, *extra]:
            if v not in choices:
                choices.append(v)
        if len(choices) < 2 and spec.type == "bool":
            choices = [False, True]
        if len(choices) < 2:
            return None  # nothing to choose between: leave it at the default
        return SpaceKnob(spec.name, spec.type, spec.scope, spec.default, choices=choices[:3],
                         source="rules" if extra or prior is not None else "catalog")
    if spec.type == "bool":
        # the rules can pin a switch to one value (a bound of one value): then not searched
        choices = [v for v in (False, True) if not isinstance(bound, list) or v in bound]
        if len(choices) < 2:
            return None
        return SpaceKnob(spec.name, spec.type, spec.scope, spec.default, choices=choices,
                         source="rules" if isinstance(bound, list) else "catalog")
    if spec.type == "enum":
        allowed = list(bound) if isinstance(bound, list) else list(spec.values or [])
        excluded = list(spec.build_values) + ([] if allow_unsafe else list(spec.risky_values))
        allowed = [v for v in allowed if v not in excluded]
        for a in anchors:
            if a not in allowed:
                allowed.append(a)
        if len(allowed) < 2:
            return None
        return SpaceKnob(spec.name, spec.type, spec.scope, spec.default, choices=allowed,
                         source="rules" if isinstance(bound, list) else "catalog")
    if spec.type not in NUMERIC_TYPES:
        return None
    lo, hi, source = _numeric_range(spec, bound, anchors, limits)
    if spec.type != "real":
        lo, hi = math.ceil(lo), math.floor(hi)
    if hi <= lo:
        return None
    log = lo > 0 and hi / lo >= LOG_RATIO
    step = None
    if spec.type == "real" and not log:  # 3 significant digits: configs people can read
        step = 10.0 ** (math.floor(math.log10(hi - lo)) - 2)
        lo = math.floor(round(lo / step, 6)) * step
        hi = lo + math.floor(round((hi - lo) / step, 6)) * step
    return SpaceKnob(spec.name, spec.type, spec.scope, spec.default, low=lo, high=hi, log=log,
                     step=step, source=source,
                     unit_bytes=UNIT_BYTES.get(spec.unit) if spec.type == "size" else None)


def build_space(
    specs: dict[str, KnobSpec],
    *,
    engine: str,
    flavour: str,
    version: str,
    important: list[str],
    bounds: dict[str, Any] | None = None,
    priors: dict[str, Any] | None = None,
    rule_settings: dict[str, Any] | None = None,
    reasons: dict[str, str] | None = None,
    extra_knobs: list[str] | None = None,
    allow_unsafe: bool = False,
    use_rules: bool = True,
    max_knobs: int = 10,
    fill_to: int = 6,
    limits: Limits | None = None,
) -> SearchSpace:
    """The space: the rule-selected important knobs (or the default set) plus ``extra_knobs``.

    ``specs`` holds the catalog for the flavour/version. Durability-risk knobs are left out
    unless ``allow_unsafe``; a knob the user names explicitly that is unknown raises
    ``UnknownKnobError``, one that is unsafe without ``allow_unsafe`` raises ``UsageError``.
    ``limits`` (default: this host's memory) caps ranges at what the hardware can run.
    """
    limits = limits if limits is not None else Limits.for_host()
    if limits.main_buffer is None:  # the engine's main buffer is capped as a global one
        limits = replace(limits, main_buffer=api.get_engine(engine).main_buffer)
    bounds, priors = dict(bounds or {}), dict(priors or {})
    rule_settings = dict(rule_settings or {}) if use_rules else {}
    names: list[str] = []
    for name in extra_knobs or []:
        if name not in specs:
            raise UnknownKnobError(f"unknown knob {name!r} for {flavour} {version}")
        if not allow_unsafe and not _safely_searchable(specs[name]):
            raise UsageError(f"knob {name} risks durability; pass --allow-unsafe to tune it")
        pin = bounds.get(name)
        if isinstance(pin, list) and len(pin) == 1:  # not dropped in silence
            raise UsageError(f"knob {name} is held at {pin[0]} by the rules (a bound of one "
                             "value): it is not searched")
        names.append(name)
    # The rules' important knobs first; when they name few, the usual performance knobs fill
    # the space up to ``fill_to`` (with hardware caps, the rules' values as their start).
    ruled = list(important) if use_rules and important else []
    fill = [n for n in default_knob_names(engine) if n not in ruled]
    knobs: list[SpaceKnob] = []
    clip_default = api.get_engine(engine).host_derived_defaults
    for name in [*names, *ruled, *fill]:
        if len(knobs) >= max_knobs or (name in fill and ruled and len(knobs) >= fill_to):
            break
        spec = specs.get(name)
        if spec is None or any(k.name == name for k in knobs):
            continue
        explicit = name in names
        if not explicit and not allow_unsafe and not _safely_searchable(spec):
            continue
        if not explicit and not (spec.type in TUNABLE_TYPES and spec.scope in COST_ORDER):
            continue
        prior = priors.get(name, rule_settings.get(name)) if use_rules else None
        k = _space_knob(spec, bounds.get(name), prior, limits, allow_unsafe,
                        clip_default=clip_default)
        if k is not None:
            knobs.append(k)
    if not knobs:
        raise UsageError(f"no tunable knobs for {flavour} {version} (name some with --knob)")
    # Cheap knobs first, reinit last: the order also used for display and reports.
    knobs.sort(key=lambda k: COST_ORDER[k.scope])
    space = SearchSpace(engine, flavour, version, knobs,
                        reasons=dict(reasons or {}) if use_rules else {})
    in_space = {k.name for k in knobs}
    outside = {n: v for n, v in rule_settings.items() if n not in in_space}
    reinit = {n for n in outside if n in specs and specs[n].scope == "reinit"}
    space.base = {n: v for n, v in outside.items() if n not in reinit}
    space.base_init = {n: v for n, v in outside.items() if n in reinit}
    _apply_data_bounds(space, specs, limits)
    space.default_params = {
        k.name: k.coerce(k.default if k.default is not None else _middle(k)) for k in knobs
    }
    if use_rules:
        space.rules_params = {
            k.name: k.coerce(priors.get(k.name, rule_settings.get(k.name, space.default_params[
                k.name])))
            for k in knobs
        }
    return space


def _apply_data_bounds(space: SearchSpace, specs: dict[str, KnobSpec], limits: Limits) -> None:
    """The data's bounds on knobs outside the space too: a rule setting is moved into them,
    and the defaults baseline gets the smallest change that makes it hold the data (also in
    the base of every searched config, which would otherwise run the failing default)."""
    from pmem_advisor.tuner.feasible import baseline_fixes

    bounds = [b for b in limits.data_bounds.values() if b.knob in specs]
    for b in bounds:
        if b.knob in space.base:
            space.base[b.knob] = b.clamp(space.base[b.knob])
    fixes, notes = baseline_fixes(bounds, {b.knob: specs[b.knob].default for b in bounds})
    space.default_fixes, space.fix_notes = fixes, notes
    in_space = {k.name for k in space.knobs}
    for name, value in fixes.items():
        if name not in in_space:
            space.base.setdefault(name, value)


def _safely_searchable(spec: KnobSpec) -> bool:
    """Safe, or an enum whose risk lies in some values only (``innodb_flush_method``'s
    nosync): then the space keeps its safe values (at least two) and drops the others."""
    if spec.safety != "durability-risk":
        return True
    if spec.type != "enum" or not spec.risky_values:
        return False
    risky = {str(v).lower() for v in spec.risky_values}
    return len([v for v in spec.values or [] if str(v).lower() not in risky]) >= 2


def _middle(k: SpaceKnob) -> Any:
    if k.choices is not None:
        return k.choices[0]
    if k.log:
        return math.sqrt(k.low * k.high)
    return (k.low + k.high) / 2
