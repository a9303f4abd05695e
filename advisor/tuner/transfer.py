"""Knowledge transfer: warm-start a tune from shipped measurements of similar scenarios.

OtterTune maps a new workload to measured ones and reuses what was learnt there (Van Aken et
al., SIGMOD 2017); the DBTune study (Zhang et al., PVLDB 2022) found such transfer the most
effective way to cut the trials a tuner needs. Here a "source" is a dataset collected by
``benchmarks/collect.py`` (rows + provenance). Sources count as similar when they share the
engine and the workload class; scenarios are compared in a shared frame:

- each knob as its position in [0, 1] of that source's own searched range (log ranges in log
  space), so a budget of 768M and one of 1G both put "three quarters of the memory cap" at 0.75;
- throughput as a speedup over that source's own defaults.

A random forest fitted on the pooled sources ranks the knobs (its impurity importances) and
proposes warm-start points (the best predicted among a Sobol set). A scenario never learns
from its own dataset: callers pass ``exclude`` (the benchmark leaves one scenario out).
"""

from __future__ import annotations

import json
import statistics
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pmem_advisor.tuner.samplers import unit_of, value_at

MIN_SOURCE_ROWS = 10  # a source with fewer measured configs teaches nothing reliable
CANDIDATES = 512  # Sobol points scored by the model when proposing warm starts
SOBOL_SEED = 7


# ------------------------------------------------------------------ unit positions
def to_unit(knob: Any, value: Any, *, clip: bool = True) -> float:
    """Position of ``value`` in [0, 1] of ``knob``'s range (a tuner ``SpaceKnob`` or anything
    with low/high/log/choices/default); choices by index. Clipped unless ``clip`` is False:
    a measured value outside the searched range (the rules' 64 MB log buffer in a 2-16 MB
    range) then keeps its own position (1.67) instead of being taken for the edge's value,
    whose measurements it would otherwise stand for."""
    if value is None:
        value = getattr(knob, "default", None)
    choices = getattr(knob, "choices", None)
    if choices is not None:
        names = [str(c) for c in choices]
        i = names.index(str(value)) if str(value) in names else 0
        return i / max(1, len(choices) - 1)
    lo, hi = float(knob.low), float(knob.high)
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = (lo + hi) / 2
    u = unit_of(x, lo, hi, bool(getattr(knob, "log", False)))
    return min(max(u, 0.0), 1.0) if clip else u


def from_unit(knob: Any, u: float) -> Any:
    """The value of ``knob`` at position ``u`` in [0, 1]; ``knob.coerce`` types and rounds it."""
    u = min(max(float(u), 0.0), 1.0 - 1e-12)
    choices = getattr(knob, "choices", None)
    if choices is not None:
        return choices[int(u * len(choices))]  # equal bins; to_unit's i/(n-1) maps back to i
    x = value_at(u, float(knob.low), float(knob.high), bool(getattr(knob, "log", False)))
    coerce = getattr(knob, "coerce", None)
    return coerce(x) if coerce else x


def sobol_points(dims: int, n: int, seed: int = SOBOL_SEED, skip: int = 0) -> np.ndarray:
    from scipy.stats import qmc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Sobol balance warning for n not a power of two
        engine = qmc.Sobol(d=dims, scramble=True, seed=seed)
        if skip:
            engine.fast_forward(skip)
        return engine.random(n)


# ------------------------------------------------------------------ sources
@dataclass
class _Dim:
    name: str
    low: float | None
    high: float | None
    log: bool
    choices: list[Any] | None
    default: Any


@dataclass
class Source:
    """One shipped dataset in the shared frame: knob -> unit position, speedup over defaults."""

    name: str
    engine: str
    workload_class: str
    memory_bytes: int | None
    points: list[dict[str, float]] = field(default_factory=list)
    speedups: list[float] = field(default_factory=list)


def _tps(row: dict[str, Any]) -> float:
    return float(row.get("tps") or 0.0) if row.get("ok") else 0.0


def read_source(rows_file: Path) -> Source | None:
    """A dataset as a ``Source``; None when it has no defaults measured or too few rows."""
    prov_file = rows_file.with_name(rows_file.name.replace(".jsonl", ".provenance.json"))
    try:
        prov = json.loads(prov_file.read_text())
        lines = rows_file.read_text().splitlines()
    except (OSError, json.JSONDecodeError):
        return None
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a torn last line
    scn = prov.get("scenario") or {}
    dims = [_Dim(d["name"], d.get("low"), d.get("high"), bool(d.get("log")), d.get("choices"),
                 d.get("default")) for d in prov.get("space") or []]
    defaults = [_tps(r) for r in rows if r.get("kind") in ("default", "repeat-default")]
    base = statistics.median(defaults) if defaults else 0.0
    if base <= 0:
        return None
    src = Source(rows_file.stem, scn.get("engine", ""), scn.get("workload_class", ""),
                 _budget(scn.get("memory_budget")))
    for r in rows:
        if r.get("kind") in ("ceiling", "repeat-ceiling"):
            continue  # durability off is outside every safe space
        params = r.get("params") or {}
        src.points.append({d.name: to_unit(d, params.get(d.name), clip=False) for d in dims})
        src.speedups.append(_tps(r) / base)
    return src if len(src.points) >= MIN_SOURCE_ROWS else None


def _budget(text: Any) -> int | None:
    try:
        from pmem_advisor.knobs.units import parse_bytes

        return parse_bytes(text, "memory budget") if text else None
    except Exception:  # noqa: BLE001 - a source without a readable budget is still usable
        return None


def similar_sources(directory: Path, *, engine: str, workload_class: str,
                    exclude: set[str] = frozenset(),
                    class_of: Callable[[str], str | None] | None = None) -> list[Source]:
    """Shipped datasets of the same engine and workload class, except those in ``exclude``.
    ``class_of(name)``: a dataset's class as its scenario defines it today (a dataset records
    the class it was collected under, which a later finding can change), None: the record's."""
    out = []
    for rows_file in sorted(Path(directory).glob("*.jsonl")):
        if rows_file.stem in exclude:
            continue
        src = read_source(rows_file)
        if src and class_of is not None:
            src.workload_class = class_of(src.name) or src.workload_class
        if src and src.engine == engine and src.workload_class == workload_class:
            out.append(src)
    return out


# ------------------------------------------------------------------ the model
@dataclass
class Transfer:
    """What similar scenarios teach about a target space: knob importances and warm starts."""

    knobs: list[Any]  # the target space's knobs (tuner SpaceKnob)
    sources: list[str] = field(default_factory=list)
    importance: dict[str, float] = field(default_factory=dict)
    model: Any = None

    @classmethod
    def fit(cls, knobs: list[Any], sources: list[Source], seed: int = 0) -> Transfer:
        t = cls(knobs, [s.name for s in sources])
        names = [k.name for k in knobs]
        x, y = [], []
        for s in sources:
            for point, speedup in zip(s.points, s.speedups, strict=True):
                # a knob the source did not search sat at its default there: the middle
                # is the least wrong guess in the shared frame
                x.append([point.get(n, 0.5) for n in names])
                y.append(speedup)
        if len(y) < MIN_SOURCE_ROWS:
            return t
        from sklearn.ensemble import RandomForestRegressor

        t.model = RandomForestRegressor(n_estimators=200, min_samples_leaf=2,
                                        random_state=seed, n_jobs=1)
        t.model.fit(np.array(x), np.array(y))
        t.importance = {n: float(v) for n, v in
                        zip(names, t.model.feature_importances_, strict=True)}
        return t

    def score(self, values: dict[str, Any]) -> float:
        """Predicted speedup over the defaults of a config of the target space (0 without a
        model): what the trust region ranks its candidate moves by before it has its own."""
        if self.model is None:
            return 0.0
        row = [[to_unit(k, values.get(k.name)) for k in self.knobs]]
        return float(self.model.predict(row)[0])

    def warm_starts(self, n: int, *, centre: dict[str, Any] | None = None,
                    bounds: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The ``n`` best predicted distinct points of a Sobol set (values of the target
        space), inside ``bounds``; none without a model. Each candidate is clipped into the
        bounds before it is scored: the point measured is the clipped one, and a point the
        model likes outside the bounds can clip onto one it would not pick."""
        if self.model is None or n <= 0:
            return []
        cands = sobol_points(len(self.knobs), CANDIDATES)
        points = [{k.name: clip_to_bounds(k, from_unit(k, u), bounds)
                   for k, u in zip(self.knobs, row, strict=True)} for row in cands]
        scores = self.model.predict(np.array(
            [[to_unit(k, p[k.name]) for k in self.knobs] for p in points]))
        out: list[dict[str, Any]] = []
        for i in np.argsort(-scores, kind="stable"):
            values = points[i]
            if centre is not None and values == centre:
                continue
            if values not in out:
                out.append(values)
            if len(out) >= n:
                break
        return out


def clip_to_bounds(knob: Any, value: Any, bounds: dict[str, Any] | None) -> Any:
    """``value`` inside the rules' bound for ``knob`` (a (low, high) pair or a list of allowed
    values), when the rules gave one."""
    b = (bounds or {}).get(knob.name)
    if b is None:
        return value
    if getattr(knob, "choices", None) is not None:
        allowed = [c for c in knob.choices if not isinstance(b, list) or c in b]
        return value if value in allowed or not allowed else allowed[0]
    if isinstance(b, (list, tuple)) and len(b) == 2 and not isinstance(value, str):
        lo, hi = b
        if lo is not None and value < lo:
            value = lo
        if hi is not None and value > hi:
            value = hi
        coerce = getattr(knob, "coerce", None)
        return coerce(value) if coerce else value
    return value
