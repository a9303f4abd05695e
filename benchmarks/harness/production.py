"""The product's memory limits at a scenario's budget, applied to every arm of the benchmark.

``pmem-advisor tune`` never measures a config it would refuse to deploy: each global buffer
is searched only up to the room the production connections leave at their worst case
(``tuner.limits.Limits`` with ``shared_room``), and a config whose worst case (every
production connection running its largest query at once) exceeds the budget is not run
(``tuner.session.memory_gate``). The datasets were collected over a wider space, a global
buffer up to 3/4 of the budget whatever the connections need; an arm credited for a config
there is credited for one the product would refuse. So every arm, the peers included, gets
the space and the gate ``tune`` would have on the scenario's budget and clients.

Picklable (the seeds run in worker processes): the catalog is loaded lazily in each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProductionMemory:
    engine: str
    flavour: str
    version: str
    budget_bytes: int
    # every setting of the rules' recommendation: the production connections and their
    # per-connection buffers, which a searched config overrides knob by knob
    settings: dict[str, Any]
    room_bytes: int | None  # session.shared_room: one global buffer's room, None if unknown
    files_in_memory: bool = False  # tmpfs: the files the server writes are RAM too
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:  # the catalog and gate are rebuilt per process
        return {k: v for k, v in self.__dict__.items() if k != "_cache"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _cache={})

    def _catalog(self) -> Any:
        if "catalog" not in self._cache:
            from pmem_advisor.knobs.catalog import load_catalog

            self._cache["catalog"] = load_catalog(self.engine, self.flavour, self.version)
        return self._cache["catalog"]

    def _gate(self) -> Any:
        if "gate" not in self._cache:
            from pmem_advisor.tuner.session import memory_gate

            self._cache["gate"] = memory_gate(self.engine, self.flavour, self.version,
                                              self._catalog(), self.settings,
                                              self.budget_bytes, self.files_in_memory)
        return self._cache["gate"]

    def cap(self, name: str) -> float | None:
        """The largest value of knob ``name`` tune would search (its base unit), or None."""
        from dataclasses import replace

        from pmem_advisor.engines import api
        from pmem_advisor.rules.fit import largest_fitting
        from pmem_advisor.tuner.limits import Limits
        from pmem_advisor.tuner.space import KnobSpec

        knob = next((k for k in self._catalog() if k.name == name), None)
        if knob is None:
            return None
        limits = replace(Limits(self.budget_bytes, None, self.room_bytes),
                         main_buffer=api.get_engine(self.engine).main_buffer)
        spec = KnobSpec.from_knob(knob)
        cap = limits.cap(spec)
        if cap is None:
            return None
        whole = spec.type != "real"  # the gate cannot estimate 1.5 bytes: it would pass them
        top = int(cap) if whole else cap
        if not self.unfit({name: top}):
            return float(top)
        # tune asks its sampler again for a config over the budget; the harness cannot ask
        # an arm again, so the range ends where the gate starts refusing (with the rules'
        # other settings): the room above leaves out the buffer's own overhead (InnoDB's
        # control structures, ~10% of the pool)
        return float(largest_fitting(lambda v: not self.unfit({name: v}),
                                     0 if whole else 0.0, top))

    def human(self, name: str, value: float) -> str:
        """``value`` of knob ``name`` (its base unit) in MB when it is a size, else as is."""
        from pmem_advisor.knobs.units import size_bytes

        knob = next((k for k in self._catalog() if k.name == name), None)
        n = size_bytes(knob, value)
        return f"{n / (1 << 20):,.0f} MB" if n is not None else f"{value:,.0f}"

    def unfit(self, params: dict[str, Any]) -> str | None:
        """Why ``params`` could not be deployed at the budget (its worst case), or None."""
        return self._gate()(params)

    def describe(self) -> str:
        conns = self.settings.get("max_connections")
        return (f"a {self.budget_bytes / (1 << 30):g} GiB budget"
                + (f" with {conns} production connections" if conns is not None else ""))


def from_recommendation(rec: Any, catalog: Any, engine: str, flavour: str,
                        budget_bytes: int) -> ProductionMemory:
    """The limits ``tune`` derives from the rules' recommendation ``rec``."""
    from types import SimpleNamespace

    from pmem_advisor.tuner.session import shared_room

    settings = {s.name: s.value for s in rec.settings}
    binary = SimpleNamespace(flavour=flavour, version=catalog.version)
    return ProductionMemory(engine, flavour or "", catalog.version, budget_bytes, settings,
                            shared_room(engine, binary, catalog, settings, budget_bytes),
                            bool(getattr(rec.facts, "data_in_memory", False)))
