"""Worst-case memory of an engine's configuration: the contract the engines' models fill in.

One function, :func:`worst_case`, asks the engine (``Engine.memory``) what a server can
allocate when every connection runs a query that uses all the per-query memory the config
allows, every background worker is busy and every global buffer is full. It is a planning
bound, the one pgtune and MySQLTuner reason with: the servers do not cap their total, so a
config whose worst case exceeds the RAM budget can be OOM-killed under load even if it runs
fine most of the time. Each engine's model lives in its package (engines/<engine>/memory.py
or its engine.py) and states its own assumptions.

Each term carries the reason it is counted (``MemoryPart.why``). Beside the worst case, two
figures a DBA judges a config by (``MemoryEstimate``):

- ``static_bytes``: what the server allocates at start and holds (a buffer pool, a memtx
  arena): above the budget the server cannot even run its idle load.
- ``realistic_peak``: the sessions that can run at once (``ACTIVE_PER_CPU`` per CPU, at most
  the connections) each at its full per-query memory, plus every global and background term.
  The all-connections-at-maximum worst case is the bound recommend sizes to; a config that
  only exceeds it is a risk under load, not a server that cannot run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pmem_advisor.engines import api
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.catalog import NUMERIC
from pmem_advisor.rules.model import Bytes

KB, MB, GB = 1 << 10, 1 << 20, 1 << 30

# The share of the memory budget a recommended config's worst case may take: the rest is for the
# kernel, the page cache of the WAL/binlogs, monitoring and what this estimate does not count
# (backend catalog/plan caches, net buffers). recommend fits to it; check's CK004 warns above it.
BUDGET_SHARE = 0.90

# Sessions that run at once in the realistic peak, per CPU: the PostgreSQL wiki's pool size
# ("Number Of Database Connections": about core_count x 2 + spindles) - beyond it sessions wait
# for a CPU rather than add memory at the same instant.
ACTIVE_PER_CPU = 2


@dataclass
class MemoryPart:
    name: str
    bytes: int
    per_connection: bool
    why: str
    # Allocated at start and held whatever the load (shared memory, buffer pools). None: a
    # global term that is not a background worker's (the engines' models flag the exceptions).
    static: bool | None = None
    # The size the settings name, when the server allocates another (MySQL rounds its buffer
    # pool up to whole chunks x instances): a DBA who wrote 1536M should see why 2 GiB counts.
    set_bytes: int | None = None

    def label(self) -> str:
        """``name size``, and the size as set when the server runs another."""
        if self.set_bytes is not None and self.set_bytes != self.bytes:
            return f"{self.name} set to {gib(self.set_bytes)}, run as {gib(self.bytes)}"
        return f"{self.name} {gib(self.bytes)}"

    @property
    def is_static(self) -> bool:
        if self.static is not None:
            return self.static
        return not self.per_connection and not self.name.startswith("background:")

    def to_dict(self) -> dict:
        out = {"name": self.name, "bytes": self.bytes, "per_connection": self.per_connection,
               "static": self.is_static, "why": self.why}
        if self.set_bytes is not None:
            out["set_bytes"] = self.set_bytes
        return out


@dataclass
class MemoryEstimate:
    """Global buffers + per-connection memory x connections + background workers."""

    engine: str
    global_bytes: int
    per_connection_bytes: int
    connections: int
    parts: list[MemoryPart]
    background_bytes: int = 0  # autovacuum / parallel workers (part of global in the contract)
    assumptions: tuple[str, ...] = field(default=())

    @classmethod
    def from_parts(cls, engine: str, parts: list[MemoryPart], connections: int,
                   assumptions: tuple[str, ...] = ()) -> MemoryEstimate:
        """Per-connection parts x connections + the global ones; the global parts named
        ``background:...`` are the background workers."""
        per_conn = sum(p.bytes for p in parts if p.per_connection)
        glob = sum(p.bytes for p in parts if not p.per_connection)
        background = sum(p.bytes for p in parts if p.name.startswith("background:"))
        return cls(engine, glob, per_conn, connections, parts, background, assumptions)

    @property
    def total_bytes(self) -> int:
        return self.global_bytes + self.per_connection_bytes * self.connections

    @property
    def static_bytes(self) -> int:
        """Memory held from start whatever the load (see MemoryPart.static)."""
        return sum(p.bytes for p in self.parts if p.is_static)

    def active_sessions(self, cpus: float | None) -> int:
        """Sessions running at once in the realistic peak (ACTIVE_PER_CPU per CPU)."""
        if not cpus:
            return self.connections
        return max(1, min(self.connections, int(ACTIVE_PER_CPU * cpus)))

    def realistic_peak(self, cpus: float | None) -> int:
        """Globals and background workers + the active sessions at full per-query memory."""
        return self.global_bytes + self.active_sessions(cpus) * self.per_connection_bytes

    def describe_peak(self, cpus: float | None) -> str:
        """"realistic peak 9.0 GiB = ... + 8 active sessions (2 per CPU x 4 CPUs) x ...": the
        figure with the assumption it rests on."""
        active = self.active_sessions(cpus)
        why = (f"{ACTIVE_PER_CPU} per CPU x {cpus:g} CPUs" if cpus and active < self.connections
               else "every connection")
        return (f"realistic peak {gib(self.realistic_peak(cpus))} = {gib(self.global_bytes)} "
                f"global + {active} active sessions ({why}) x {mib(self.per_connection_bytes)}")

    def to_dict(self, cpus: float | None = None) -> dict:
        out = {"engine": self.engine, "total_bytes": self.total_bytes,
               "static_bytes": self.static_bytes,
               "global_bytes": self.global_bytes, "background_bytes": self.background_bytes,
               "per_connection_bytes": self.per_connection_bytes,
               "connections": self.connections, "parts": [p.to_dict() for p in self.parts],
               "assumptions": list(self.assumptions)}
        if cpus:
            out |= {"realistic_peak_bytes": self.realistic_peak(cpus),
                    "active_sessions": self.active_sessions(cpus),
                    "active_sessions_assumption": f"{ACTIVE_PER_CPU} per CPU, at most "
                    "max_connections, each at its full per-query memory"}
        return out

    def describe(self) -> str:
        """One line, e.g. "worst case 17.1 GiB = 6.0 GiB global + 300 x 38.0 MiB per connection"."""
        return (f"worst case {gib(self.total_bytes)} = {gib(self.global_bytes)} global "
                f"(incl. {gib(self.background_bytes)} background workers) + "
                f"{self.connections} x {mib(self.per_connection_bytes)} per connection")


def gib(n: int) -> str:
    return f"{n / GB:.1f} GiB"


def mib(n: int) -> str:
    return f"{n / MB:.1f} MiB"


# ------------------------------------------------------------------ reading the settings
class SettingValues:
    """Knob values in base units from ``settings`` (a rule's ``Bytes``, config text, numbers),
    else the catalog default: the reader the engines' memory models share. ``parse_text``
    reads config text in the engine's own syntax (default: ``Knob.parse``)."""

    def __init__(self, catalog: Any, settings: Mapping[str, Any],
                 parse_text: Any = None) -> None:
        self.catalog, self.settings = catalog, dict(settings)
        self.parse_text = parse_text or (lambda knob, text: knob.parse(text))

    def get(self, name: str) -> Any:
        """The value in the knob's base unit; None when neither set nor defaulted."""
        knob = self.catalog.get(name)
        raw = self.settings.get(name, knob.default)
        if isinstance(raw, Bytes):
            return raw.n
        if isinstance(raw, str):
            return self.parse_text(knob, raw)
        if raw is None:
            return None
        return knob.coerce(raw)


class KnobReader:
    """Knob values in bytes (sizes) or plain numbers, from settings, else the catalog default,
    else the engine's ``fallback(name)`` (manual defaults of knobs the catalog lacks); text for
    a knob the catalog lacks is read by the engine's ``parse_loose(text)`` in its own syntax
    (None: not a number or size). ``key`` is how
    the engine spells a knob name (settings keys are read through it)."""

    def __init__(self, flavour: str, version: str | None, settings: Mapping[str, Any],
                 catalog, *, fallback: Callable[[str], float],
                 parse_loose: Callable[[str], float | None],
                 key: Callable[[str], str] = str.lower) -> None:
        self.flavour, self.version = flavour, version
        self.settings = {key(str(k)): v for k, v in settings.items()}
        self.catalog = catalog
        self.fallback, self.parse_loose = fallback, parse_loose

    def _knob(self, name: str):
        return None if self.catalog is None else self.catalog.find(name)

    def value(self, name: str) -> float:
        """The knob's value in its base unit (sizes: bytes), as a number."""
        knob = self._knob(name)
        raw = self.settings.get(name)
        if isinstance(raw, Bytes):  # a rule's size, already in bytes
            return float(raw.n)
        if knob is not None and knob.type not in NUMERIC:
            # a name the server's list has without its type (MySQL's reference list records
            # key_buffer_size by name only): the text is read by the server's own size rules
            # below, so '128M' is sized and not skipped (issue 49)
            knob = None
        if knob is not None and not (raw is None and knob.default is None):
            base = knob.default if raw is None else knob.coerce(raw)
            if knob.type == "size" and isinstance(base, int | float) and base >= 0:
                from pmem_advisor.knobs.units import BASE_BYTES
                return base * BASE_BYTES.get(knob.unit or "B", 1)
            return float(base)
        if raw is None:
            return self.fallback(name)
        if isinstance(raw, bool | int | float):
            return float(raw)
        value = self.parse_loose(str(raw).strip().strip("'\""))
        if value is None:
            raise UsageError(f"{name}: {raw!r} is not a number or size")
        return float(value)

    def has(self, name: str) -> bool:
        return self._knob(name) is not None or name in self.settings


# ------------------------------------------------------------------ the estimate
def worst_case(engine: str | api.Engine, settings: Mapping[str, Any], *,
               flavour: str | None = None, version: str | None = None, catalog=None,
               host_memory_bytes: int | None = None,
               files_in_memory: bool = False,
               host_cpus: int | None = None) -> MemoryEstimate | None:
    """Worst-case memory of ``settings`` (knob -> base-unit value or config text); knobs not
    given take the catalog's default for that flavour/version. ``host_memory_bytes`` sizes
    defaults that depend on the machine (a default that is a share of RAM).
    Each engine accounts for its own memory (``Engine.memory``); None: it has no model.
    ``files_in_memory``: the data directory is tmpfs, so the files the engine writes there
    take RAM as well (counted by engines with ``counts_files_in_memory``; the others' estimate
    leaves them out, as it leaves out their files on disk). ``host_cpus``: the CPUs the
    server may use, for defaults derived from them (engines with ``uses_host_cpus``); unknown,
    the worst case over any count."""
    eng = api.engine_of(engine)
    if isinstance(engine, str) and eng.name != engine:  # an alias: callers pass the name
        raise UsageError(f"engine {engine!r}: use {eng.name}")
    flavour = eng.resolve_flavour(flavour, version)
    if catalog is None:
        try:
            catalog = eng.catalog(flavour, version)
        except UsageError:  # an engine without a catalog (advice only) may still count
            catalog = None
    extra: dict[str, Any] = {}
    if files_in_memory and eng.counts_files_in_memory:
        extra["files_in_memory"] = True
    if host_cpus and eng.uses_host_cpus:
        extra["host_cpus"] = host_cpus
    return eng.memory(settings, flavour=flavour, version=version, catalog=catalog,
                      host_memory_bytes=host_memory_bytes, **extra)
