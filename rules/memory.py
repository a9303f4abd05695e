"""Worst-case memory of a PostgreSQL or MySQL/MariaDB configuration.

One function, :func:`worst_case`, adds up what a server can allocate when every connection
runs a query that uses all the per-query memory the config allows, every background worker is
busy and every global buffer is full. It is a planning bound, the one pgtune and MySQLTuner
reason with: neither server caps its total, so a config whose worst case exceeds the RAM
budget can be OOM-killed under load even if it runs fine most of the time.

Each term carries the reason it is counted (``MemoryPart.why``); the assumptions that are
choices, not manual facts, are module constants with their reason:

- ``SORT_NODES``/``HASH_NODES``: a query runs 2 sort nodes and 1 hash node at once. Plans
  with a hash join under an ORDER BY plus a GROUP BY are ordinary; 3 nodes per connection is
  also pgtune's divisor for work_mem, so a pgtune-sized config is judged by the same yardstick.
  Hash nodes may use work_mem x hash_mem_multiplier (PostgreSQL 13+, default 2.0 since 15).
  Deeper plans can use more: that is stated in the output, not hidden.
- ``JOIN_BUFFERS``: MySQL allocates one join buffer per table joined without an index; one per
  query is the common case the manual's examples size for.

Not counted (small or not bounded by a knob): PostgreSQL's per-backend catalog/plan caches,
lock tables and other fixed shared memory; MySQL's net buffers (grow to max_allowed_packet),
the table cache and the performance_schema. The output says so in ``assumptions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pmem_advisor.engines import api
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.version import parse_version
from pmem_advisor.rules.model import Bytes

KB, MB, GB = 1 << 10, 1 << 20, 1 << 30

# The share of the memory budget a recommended config's worst case may take: the rest is for the
# kernel, the page cache of the WAL/binlogs, monitoring and what this estimate does not count
# (backend catalog/plan caches, net buffers). recommend fits to it; check's CK004 warns above it.
BUDGET_SHARE = 0.90

SORT_NODES = 2  # ORDER BY + GROUP BY/DISTINCT sorts in one plan (see the module docstring)
HASH_NODES = 1  # one hash join or hash aggregate; with 2 sorts: pgtune's 3 nodes per connection
JOIN_BUFFERS = 1  # MySQL: one join buffer per query (one table joined without an index)

# Before PostgreSQL 17, VACUUM stored at most 1 GB of dead-tuple ids whatever
# maintenance_work_mem/autovacuum_work_mem said; 17's TidStore uses the whole setting.
PG_VACUUM_CAP_BEFORE_17 = 1 * GB

# Defaults of knobs the catalogs do not list, from the servers' manuals (bytes unless noted).
# Version differences are resolved in _fallback_default.
_FALLBACK = {
    "postgres": {"hash_mem_multiplier": 2.0},  # 1.0 in 13-14, 2.0 since 15
    "mysql": {"key_buffer_size": 8 * MB, "thread_stack": 1 * MB, "binlog_cache_size": 32 * KB,
              "temptable_max_ram": 1 * GB},
    "mariadb": {"key_buffer_size": 128 * MB, "thread_stack": 299008,
                "binlog_cache_size": 32 * KB, "aria_pagecache_buffer_size": 128 * MB,
                "query_cache_size": 1 * MB},
}

ASSUMPTIONS = {
    "postgres": (f"each connection runs one query with {SORT_NODES} sorts and {HASH_NODES} "
                 "hash node(s) at once (pgtune's 3 work_mem nodes); deeper plans use more",
                 "not counted: per-backend catalog/plan caches and fixed shared memory "
                 "(lock tables, a few MB)"),
    "mysql": (f"each connection runs one query with one sort, {JOIN_BUFFERS} join buffer, "
              "both read buffers and one in-memory temporary table at once",
              "not counted: net buffers (up to max_allowed_packet), table cache, "
              "performance_schema"),
}


@dataclass
class MemoryPart:
    name: str
    bytes: int
    per_connection: bool
    why: str

    def to_dict(self) -> dict:
        return {"name": self.name, "bytes": self.bytes, "per_connection": self.per_connection,
                "why": self.why}


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

    @property
    def total_bytes(self) -> int:
        return self.global_bytes + self.per_connection_bytes * self.connections

    def to_dict(self) -> dict:
        return {"engine": self.engine, "total_bytes": self.total_bytes,
                "global_bytes": self.global_bytes, "background_bytes": self.background_bytes,
                "per_connection_bytes": self.per_connection_bytes,
                "connections": self.connections, "parts": [p.to_dict() for p in self.parts],
                "assumptions": list(self.assumptions)}

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


class _Reader:
    """Knob values in bytes (sizes) or plain numbers, from settings, else the catalog default."""

    def __init__(self, engine: str, flavour: str, version: str | None,
                 settings: Mapping[str, Any], catalog) -> None:
        self.engine, self.flavour, self.version = engine, flavour, version
        self.settings = {str(k).lower().replace("-", "_") if engine == "mysql" else
                         str(k).lower(): v for k, v in settings.items()}
        self.catalog = catalog

    def _knob(self, name: str):
        return None if self.catalog is None else self.catalog.find(name)

    def value(self, name: str) -> float:
        """The knob's value in its base unit (sizes: bytes), as a number."""
        knob = self._knob(name)
        raw = self.settings.get(name)
        if isinstance(raw, Bytes):  # a rule's size, already in bytes
            return float(raw.n)
        if knob is not None and not (raw is None and knob.default is None):
            base = knob.default if raw is None else knob.coerce(raw)
            if knob.type == "size" and isinstance(base, int | float) and base >= 0:
                from pmem_advisor.knobs.units import BASE_BYTES
                return base * BASE_BYTES.get(knob.unit or "B", 1)
            return float(base)
        if raw is None:
            return _fallback_default(self.engine, self.flavour, self.version, name)
        return _parse_loose(self.engine, name, raw)

    def has(self, name: str) -> bool:
        return self._knob(name) is not None or name in self.settings


def _fallback_default(engine: str, flavour: str, version: str | None, name: str) -> float:
    from pmem_advisor.knobs.version import parse_version

    v = parse_version(version, pad=True) if version else (99,)
    if name == "hash_mem_multiplier":
        return 1.0 if v < (15,) else 2.0
    if flavour == "mysql" and name == "temptable_max_ram" and v >= (8, 4):
        return 1 * GB  # 8.4: 3% of RAM clamped to 1-4 GB (worst_case's host_memory_bytes)
    table = _FALLBACK.get("mariadb" if flavour == "mariadb" else engine, {})
    if name in table:
        return float(table[name])
    return 0.0


def _parse_loose(engine: str, name: str, raw: Any) -> float:
    """A value for a knob the catalog lacks: numbers as bytes (PG: as given), text with units."""
    if isinstance(raw, bool):
        return float(raw)
    if isinstance(raw, int | float):
        return float(raw)
    from pmem_advisor.knobs import units

    text = str(raw).strip().strip("'\"")
    if engine == "postgres":
        parsed = units.pg_number(text)
        if parsed is not None:
            value = units.pg_to_base(parsed[0], parsed[1], "B") if parsed[1] else parsed[0]
            if value is not None:
                return float(value)
    else:
        value = units.my_number(text)
        if value is not None:
            return float(value)
    raise UsageError(f"{name}: {raw!r} is not a number or size")


# ------------------------------------------------------------------ the estimate
def worst_case(engine: str, settings: Mapping[str, Any], *, flavour: str | None = None,
               version: str | None = None, catalog=None,
               host_memory_bytes: int | None = None) -> MemoryEstimate | None:
    """Worst-case memory of ``settings`` (knob -> base-unit value or config text); knobs not
    given take the catalog's default for that flavour/version. ``host_memory_bytes`` sizes
    defaults that depend on the machine (MySQL 8.4's temptable_max_ram: 3% of RAM, 1-4 GB).
    Each engine accounts for its own memory (``Engine.memory``); None: it has no model."""
    eng = api.get_engine(engine)
    if eng.name != engine:  # an alias: callers pass the engine's own name
        raise UsageError(f"engine {engine!r}: use {eng.name}")
    flavour = eng.resolve_flavour(flavour, version)
    if catalog is None:
        try:
            catalog = eng.catalog(flavour, version)
        except UsageError:  # an engine without a catalog (advice only) may still count
            catalog = None
    return eng.memory(settings, flavour=flavour, version=version, catalog=catalog,
                      host_memory_bytes=host_memory_bytes)


SERVER_ENGINES = ("postgres", "mysql")  # the two server_worst_case accounts for


def server_worst_case(engine: str, settings: Mapping[str, Any], *, flavour: str | None = None,
                      version: str | None = None, catalog=None,
                      host_memory_bytes: int | None = None) -> MemoryEstimate:
    """``worst_case`` of PostgreSQL and MySQL/MariaDB: global buffers + per-connection
    buffers x max_connections + background workers (see ASSUMPTIONS)."""
    if engine not in SERVER_ENGINES:
        raise UsageError(f"engine {engine!r} is not one of postgres, mysql")
    if flavour is None:
        flavour = api.get_engine(engine).resolve_flavour(None, version)
    if catalog is None:
        catalog = api.get_engine(engine).catalog(flavour, version)
    settings = dict(settings)
    if (flavour == "mysql" and host_memory_bytes and "temptable_max_ram" not in settings
            and (version is None or parse_version(version, pad=True) >= (8, 4))):
        settings["temptable_max_ram"] = min(max(host_memory_bytes * 3 // 100, 1 * GB), 4 * GB)
    r = _Reader(engine, flavour, version, settings, catalog)
    parts = _postgres(r) if engine == "postgres" else _mysql(r)
    per_conn = sum(p.bytes for p in parts if p.per_connection)
    glob = sum(p.bytes for p in parts if not p.per_connection)
    background = sum(p.bytes for p in parts if p.name.startswith("background:"))
    conns = int(r.value("max_connections"))
    return MemoryEstimate(engine, glob, per_conn, conns, parts, background,
                          ASSUMPTIONS[engine])


def pg_query_memory(work_mem: int, hash_mem_multiplier: float) -> int:
    """Memory one PostgreSQL query may take in sort/hash nodes (see SORT_NODES/HASH_NODES)."""
    return int(work_mem * (SORT_NODES + HASH_NODES * hash_mem_multiplier))


def _postgres(r: _Reader) -> list[MemoryPart]:
    from pmem_advisor.knobs.version import parse_version

    v = parse_version(r.version, pad=True) if r.version else (99,)
    shared = int(r.value("shared_buffers"))
    wal = int(r.value("wal_buffers"))
    if wal < 0:  # -1: 1/32 of shared_buffers, at least 64 kB, at most one 16 MB WAL segment
        wal = min(max(shared // 32, 64 * KB), 16 * MB)
    work_mem = int(r.value("work_mem"))
    hmm = r.value("hash_mem_multiplier") if v >= (13,) else 1.0
    query = pg_query_memory(work_mem, hmm)
    temp = int(r.value("temp_buffers"))
    maint = int(r.value("maintenance_work_mem"))
    av_raw = int(r.value("autovacuum_work_mem")) if r.has("autovacuum_work_mem") else -1
    av = maint if av_raw < 0 else av_raw
    av_why = ("autovacuum_work_mem" if av_raw >= 0 else "maintenance_work_mem (autovacuum_work_mem"
              " = -1)")
    if v < (17,):
        av = min(av, PG_VACUUM_CAP_BEFORE_17)
        av_why += ", of which VACUUM uses at most 1 GB before PostgreSQL 17"
    else:
        av_why += "; PostgreSQL 17+ uses all of it (no 1 GB dead-tuple cap)"
    workers = int(r.value("autovacuum_max_workers"))
    par = int(min(r.value("max_parallel_workers"), r.value("max_worker_processes")))
    return [
        MemoryPart("shared_buffers", shared, False, "shared buffer cache, allocated at start"),
        MemoryPart("wal_buffers", wal, False, "WAL buffers in shared memory (-1: shared/32, "
                   "64 kB..16 MB)"),
        MemoryPart("maintenance_work_mem", maint, False,
                   "one manual VACUUM/CREATE INDEX at a time (parallel index builds share it)"),
        MemoryPart("background:autovacuum", workers * av, False,
                   f"autovacuum_max_workers={workers} x {av_why}"),
        MemoryPart("background:parallel workers", par * query, False,
                   f"max_parallel_workers={par} processes, each running the query's "
                   f"{SORT_NODES} sorts + {HASH_NODES} hash node(s)"),
        MemoryPart("work_mem", query, True,
                   f"work_mem x ({SORT_NODES} sorts + {HASH_NODES} hash x hash_mem_multiplier "
                   f"{hmm:g}) per query"),
        MemoryPart("temp_buffers", temp, True, "session-local buffers for temporary tables"),
    ]


def _mysql(r: _Reader) -> list[MemoryPart]:
    mariadb = r.flavour == "mariadb"
    pool = int(r.value("innodb_buffer_pool_size"))
    parts = [
        MemoryPart("innodb_buffer_pool_size", pool, False, "InnoDB buffer pool, allocated at "
                   "start"),
        MemoryPart("buffer pool control structures", pool // 10, False,
                   "MariaDB KB (InnoDB buffer pool): about 10% more than the pool for control "
                   "structures and buffers"),
        MemoryPart("innodb_log_buffer_size", int(r.value("innodb_log_buffer_size")), False,
                   "redo log buffer"),
        MemoryPart("key_buffer_size", int(r.value("key_buffer_size")), False,
                   "MyISAM index cache (system tables, temporary MyISAM tables)"),
    ]
    if mariadb:
        parts += [
            MemoryPart("aria_pagecache_buffer_size", int(r.value("aria_pagecache_buffer_size")),
                       False, "Aria page cache: MariaDB's internal on-disk temporary tables"),
            MemoryPart("query_cache_size", int(r.value("query_cache_size")), False,
                       "query cache (allocated even when query_cache_type=OFF)"),
            MemoryPart("tmp tables", int(min(r.value("tmp_table_size"),
                                             r.value("max_heap_table_size"))), True,
                       "one in-memory temporary table: min(tmp_table_size, max_heap_table_size)"),
        ]
    else:
        parts.append(MemoryPart("temptable_max_ram", int(r.value("temptable_max_ram")), False,
                                "TempTable engine: all in-memory internal temporary tables "
                                "together (8.0+)"))
    parts += [
        MemoryPart("sort_buffer_size", int(r.value("sort_buffer_size")), True, "one sort"),
        MemoryPart("join_buffer_size", JOIN_BUFFERS * int(r.value("join_buffer_size")), True,
                   f"{JOIN_BUFFERS} join buffer (one per table joined without an index)"),
        MemoryPart("read_buffer_size", int(r.value("read_buffer_size")), True,
                   "sequential scan buffer"),
        MemoryPart("read_rnd_buffer_size", int(r.value("read_rnd_buffer_size")), True,
                   "sorted-order row reads (MRR)"),
        MemoryPart("thread_stack", int(r.value("thread_stack")), True, "each connection's "
                   "thread stack"),
        MemoryPart("binlog_cache_size", int(r.value("binlog_cache_size")), True,
                   "transaction's binary log cache"),
    ]
    return parts


def pg_work_mem_to_fit(budget_bytes: int, settings: Mapping[str, Any], *,
                       version: str | None = None, catalog=None, floor: int = 64 * KB) -> int:
    """The largest work_mem (bytes, whole kB) that keeps PostgreSQL's worst case within the
    budget, given the other settings; at least ``floor`` (the server's minimum, 64 kB)."""
    probe = dict(settings)
    probe["work_mem"] = Bytes(64 * KB)
    est = worst_case("postgres", probe, version=version, catalog=catalog)
    fixed = est.total_bytes - _work_mem_bytes(est)
    per_unit = _work_mem_bytes(est) / (64 * KB)  # bytes of worst case per byte of work_mem
    room = budget_bytes - fixed
    if room <= 0 or per_unit <= 0:
        return floor
    return max(floor, int(room / per_unit) // KB * KB)


def _work_mem_bytes(est: MemoryEstimate) -> int:
    """The part of the worst case that scales with work_mem."""
    out = 0
    for p in est.parts:
        if p.name == "work_mem":
            out += p.bytes * est.connections
        elif p.name == "background:parallel workers":
            out += p.bytes
    return out
