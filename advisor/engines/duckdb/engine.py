"""DuckDB on the Engine interface: SQL SET files, opened in a child process, measured there.

DuckDB is embedded (PyPI ``duckdb``): no server. pmem-advisor writes its settings as SQL
``SET`` statements (sql.py), checks them against a curated catalog (knobs/data/duckdb.yaml
via catalog.py), validates a config by opening a scratch database with it in a child process
and reading every setting back (runner.py, child.py), and tunes it with olap-tpch-lite or
tpch-refresh (workload.py) on golden copies of the loaded file. Baseline: baseline.py; paper rules
PM050-PM059.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pmem_advisor.engines.api import EvalRequest
from pmem_advisor.engines.base import Engine
from pmem_advisor.engines.duckdb.baseline import PER_THREAD, PROCESS_BASE, RULE
from pmem_advisor.engines.duckdb.catalog import load_duckdb_catalog, parse_shown_size, parse_size
from pmem_advisor.engines.duckdb.runner import DuckDBEvaluator, validate_statements
from pmem_advisor.engines.duckdb.sql import emit_sql, parse_sql, quote, split_statements, value_sql
from pmem_advisor.engines.duckdb.workload import DuckOlapTpchLite, DuckTpchRefresh
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.emit import Header
from pmem_advisor.rules.fit import put_setting
from pmem_advisor.rules.memory import MemoryEstimate, MemoryPart, SettingValues, gib
from pmem_advisor.rules.model import Bytes

MB = 1 << 20
# Not under memory_limit (DuckDB's buffer manager cap), so counted on top of it:
ASSUMPTIONS = (
    "memory_limit caps DuckDB's buffer manager (DuckDB's manual: it only applies to the buffer "
    "manager): cached pages of the database file, hash tables, sort runs, aggregates and "
    "other intermediates that can spill",
    "some DuckDB operations bypass the buffer manager (DuckDB's out-of-memory guide): that "
    "is why memory_limit stays at most 80% of the budget",
    "not under memory_limit and counted on top: the process itself, per-thread state, the "
    "allocator's retained memory (up to allocator_flush_threshold) and block_allocator_memory",
    "not counted: results the application holds (fetchall, pandas/Arrow), extensions' own "
    "allocations, and the OS page cache for the database file (it counts in a cgroup's "
    "memory.max unless the file is on DAX or tmpfs)",
    "one DuckDB database instance per process; a second process opening another database "
    "has its own memory_limit",
)


class DuckDBEngine(Engine):
    # -- knobs ---------------------------------------------------------------------------
    def catalog(self, flavour: str | None = None, version: str | None = None):
        self.resolve_flavour(flavour, version)
        return load_duckdb_catalog(version)

    def emit(self, settings, header=None, *, catalog=None, fragment=True):
        """SET statements with a header and a usage snippet (``fragment`` is moot: DuckDB
        has no config file, every setting is a statement of its own)."""
        header = header or Header(flavour="duckdb")
        catalog = catalog or self.catalog(None, header.version or None)
        return emit_sql(settings, header, catalog=catalog)

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        return parse_sql(text, origin, catalog=self.catalog())

    def statements(self, params: Mapping[str, Any], catalog: Any = None) -> list[str]:
        """``SET`` statements for base-unit values (``Bytes`` and DuckDB text accepted);
        UsageError naming the setting for a value the catalog refuses."""
        catalog = catalog or self.catalog()
        out = []
        for name, value in params.items():
            knob = catalog.get(name)
            if isinstance(value, Bytes):
                value = value.n
            out.append(f"SET {knob.name} = {value_sql(knob, knob.coerce(value))}")
        return out

    # -- rules ---------------------------------------------------------------------------
    def baseline_rules(self) -> tuple[Any, ...]:
        return (RULE,)

    def memory(self, settings: Mapping[str, Any], *, flavour: str | None = None,
               version: str | None = None, catalog=None, host_memory_bytes: int | None = None):
        """Worst case: memory_limit + what DuckDB allocates outside its buffer manager."""
        catalog = catalog or self.catalog(flavour, version)
        v = _Values(catalog, settings, host_memory_bytes)
        limit = v.get("memory_limit")
        threads = int(v.get("threads"))
        flush = v.get("allocator_flush_threshold")
        blocks = v.get("block_allocator_memory")
        parts = [
            MemoryPart("memory_limit", limit, False,
                       "DuckDB's buffer manager cap: data pages, hash tables, sorts, "
                       "intermediates (spilling to temp_directory beyond it)"),
            MemoryPart("threads", threads * PER_THREAD, False,
                       f"{threads} threads x {PER_THREAD >> 20} MiB: stacks, thread-local "
                       "state, vectors in flight (outside memory_limit)"),
            MemoryPart("allocator retained", flush, False,
                       "freed memory the allocator may keep until allocator_flush_threshold"),
            MemoryPart("process", PROCESS_BASE, False,
                       "the host process: interpreter/application, DuckDB's code and catalog"),
        ]
        if blocks:
            parts.append(MemoryPart("block_allocator_memory", blocks, False,
                                    "taken once and never freed"))
        total = sum(p.bytes for p in parts)
        return MemoryEstimate("duckdb", total, 0, 1, parts, 0, ASSUMPTIONS)

    def fit_memory(self, rec: Any, view: Any, budget_bytes: int) -> None:
        """Lower memory_limit (the one large term) until the worst case fits."""
        est = self.memory({s.name: s.value for s in rec.settings}, catalog=view.catalog)
        if est.total_bytes <= budget_bytes:
            return
        limit = next(p.bytes for p in est.parts if p.name == "memory_limit")
        new = max(64 * MB, (budget_bytes - (est.total_bytes - limit)) // MB * MB)
        if new < limit:
            put_setting(rec, view, "memory_limit", Bytes(new),
                 f"lowered from {gib(limit)} so the worst case fits the {gib(budget_bytes)} "
                 "budget")

    def data_bounds(self, workload: Any, scale: int, catalog: Any,
                    budget_bytes: int | None = None) -> list[Any]:
        """memory_limit within the budget: DuckDB's own default is 80% of the RAM it sees,
        the host's (outgrown by a process held to a smaller budget: killed, not spilled) or,
        inside a memory cgroup, the group's limit (2.0.1 in 1 GiB: 819 MiB, more than the
        budget leaves once DuckDB's memory outside memory_limit is counted)."""
        from pmem_advisor.engines.duckdb.baseline import limit_for_budget
        from pmem_advisor.rules.model import human_bytes
        from pmem_advisor.tuner.feasible import DataBound

        if not budget_bytes:
            return []
        threads = int(catalog.get("threads").default or 1)
        return [DataBound("memory_limit", high=limit_for_budget(budget_bytes, threads),
                          reason=f"DuckDB's buffer manager within the {human_bytes(budget_bytes)}"
                                 " budget, with room for what it allocates outside it (its "
                                 "default is 80% of the host's RAM, or of a memory cgroup's "
                                 "limit inside one)")]

    # -- running it ----------------------------------------------------------------------
    def binary_version(self, path: Path | None) -> str:
        from importlib import metadata

        try:
            return metadata.version("duckdb")
        except metadata.PackageNotFoundError:
            return "unknown"

    def validate_by_starting(self, config_text: str, workdir: str | Path, *,
                             binary: Any = None) -> None:
        """Open a scratch database, run the file's statements, SELECT 1, read every setting
        back with current_setting(); UsageError with DuckDB's reason when it refuses one or
        holds another value than the file asks for."""
        catalog = self.catalog()
        wanted = self.parse_config(config_text, "config")  # our own checks first
        binary = binary or self.find_binary()
        statements = [stmt for _, stmt in split_statements(config_text)]
        got = validate_statements(statements, list(wanted), workdir)
        for name, text in wanted.items():
            knob = catalog.get(name)
            have = got.get(name)
            if not _same(knob, knob.parse(text), have):
                raise UsageError(f"{name}: DuckDB holds {have!r} after SET {name} = {text!r}")

    def apply_lines(self, path: str, settings: Mapping[str, str], restart: list[str],
                    flavour: str | None = None) -> list[str]:
        """DuckDB has no server to restart: the application runs the SET file after opening."""
        lines = [f"apply: run {path} right after opening the database in every process that "
                 f"opens it ({len(settings)} SET statements; DuckDB forgets them on exit)",
                 f"  Python: con = duckdb.connect(...); con.execute(open({quote(path)}).read())",
                 f"  CLI:    duckdb -init {path} my.duckdb"]
        if restart:
            lines.append(f"  {', '.join(restart)}: only for database files created after "
                         "the SET")
        return lines

    def workload(self, name: str, **options: Any) -> Any:
        kinds = {w.name: w for w in (DuckOlapTpchLite, DuckTpchRefresh)}
        if name not in kinds:
            raise UsageError(f"workload {name} does not run on DuckDB",
                             hint=f"duckdb runs: {', '.join(kinds)}")
        return kinds[name](**options)

    def evaluator(self, request: EvalRequest):
        r = request
        if r.wal_dir is not None and r.data_dir is not None \
                and Path(r.wal_dir) != Path(r.data_dir):
            raise UsageError("DuckDB keeps its WAL next to the database file (<file>.wal): "
                             "leave --wal-dir out")
        workload = r.workload
        if getattr(workload, "engines", ("duckdb",)) != ("duckdb",):
            workload = self.workload(getattr(workload, "name", str(workload)))
        return DuckDBEvaluator(self, r.binary, workload, scale=r.scale, clients=r.clients,
                               duration=r.duration, warmup=r.warmup, data_dir=r.data_dir,
                               workdir=r.workdir, catalog=r.catalog, cgroup=r.cgroup)


def _same(knob: Any, want: Any, have: str | None) -> bool:
    """Does DuckDB's read-back text hold the value asked for? Sizes come back rounded to
    one decimal of a binary unit ('953.6 MiB'), so they compare within that rounding."""
    if have is None:
        return False
    if knob.type == "size":
        got = parse_shown_size(have)
        # DuckDB prints one decimal, cut off: '3.1 GiB' is 3.1 .. 3.2 GiB (3276MiB shows 3.1)
        unit = parse_shown_size("1" + "".join(c for c in have if c.isalpha())) or 1
        return got is not None and got - 1 <= want < got + max(unit * 0.1, 1)
    if knob.type == "bool":
        return str(have).lower() == ("true" if want else "false")
    if knob.type == "int":
        return str(have).strip() == str(want)
    return str(have).lower() == str(want).lower()


class _Values(SettingValues):
    """DuckDB's setting values as whole numbers (sizes in bytes; unset and undefaulted: 0);
    size text may be a share of RAM (``80%``), read against ``ram``."""

    def __init__(self, catalog: Any, settings: Mapping[str, Any], ram: int | None) -> None:
        super().__init__(catalog, settings, parse_text=self._parse)
        self.ram = ram

    def _parse(self, knob: Any, text: str) -> Any:
        if knob.type == "size":
            return parse_size(text, knob.name, ram=self.ram)
        return knob.parse(text)

    def get(self, name: str) -> int:
        value = super().get(name)
        return 0 if value is None else int(value)


__all__ = ["DuckDBEngine"]
