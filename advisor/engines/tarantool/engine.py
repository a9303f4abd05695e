"""Tarantool (memtx, the in-memory engine I17 measured): box.cfg catalog, Lua init file, a
managed unprivileged server on a unix socket, YCSB-like workloads through net.box.

The pieces, each in its own module of this package: ``catalog`` (knobs/data/tarantool.yaml),
``lua`` (emit and parse the init file), ``instance`` (the managed server), ``evaluator`` (the
tuner's measurements), ``workload`` (the load generator, ``ycsb.lua``) and ``baseline``
(sizing).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pmem_advisor.engines.api import EvalRequest
from pmem_advisor.engines.base import ServerEngine
from pmem_advisor.engines.tarantool.baseline import RUNTIME_BYTES, TarantoolBaseline, fit_memtx
from pmem_advisor.engines.tarantool.catalog import load
from pmem_advisor.engines.tarantool.evaluator import TarantoolEvaluator
from pmem_advisor.engines.tarantool.instance import TarantoolInstance, find_tarantool
from pmem_advisor.engines.tarantool.lua import emit_box_cfg, lua_value, parse_box_cfg
from pmem_advisor.engines.tarantool.workload import get_tarantool_workload
from pmem_advisor.errors import EnvironmentProblem, ServerError, UsageError
from pmem_advisor.instances.privileges import can_reach, server_user
from pmem_advisor.knobs.emit import Header
from pmem_advisor.rules.memory import MemoryEstimate, MemoryPart

MB = 1 << 20
# searched beside the engine's default knobs when the data is in vinyl (vinyl_page_size is not:
# box.cfg's value only applies to indexes created after it)
VINYL_KNOBS = ("vinyl_cache", "vinyl_memory", "vinyl_read_threads")
# Tarantool's own process beyond the arenas: binary, LuaJIT heap of the init script, the WAL
# and iproto threads' buffers. An idle 2.6 instance here holds ~30 MB RSS; 64 MB leaves room.
ASSUMPTIONS = (
    "memtx_memory, vinyl_memory and vinyl_cache are quotas filled lazily; the worst case "
    "counts them full (memtx data plus indexes, and the read views a checkpoint keeps, stay "
    "inside memtx_memory)",
    "each connection holds an input buffer of readahead bytes and an output buffer of about "
    "the same size",
    "not counted: Lua objects the application creates (the LuaJIT heap outside the arenas)",
)


class TarantoolEngine(ServerEngine):
    """Tarantool 2.x as a managed server (kind: server)."""

    # -- knobs and config --------------------------------------------------------------------
    def catalog(self, flavour: str | None = None, version: str | None = None):
        self.resolve_flavour(flavour, version)
        return load(version)

    @property
    def workloads(self) -> tuple[str, ...]:
        return self.spec.workloads

    def emit(self, settings, header=None, *, catalog=None, fragment: bool = True,
             allow_unsafe: bool = False):
        """The Lua init file (one box.cfg call; a complete file, so ``fragment`` is moot)."""
        header = header or Header()
        catalog = catalog or self.catalog(None, header.version or None)
        return emit_box_cfg(list(settings), header, catalog, allow_unsafe=allow_unsafe)

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        return parse_box_cfg(text, origin, self.catalog())

    # -- rules and memory ---------------------------------------------------------------------
    def baseline_rules(self) -> tuple:
        return (TarantoolBaseline(),)

    def memory(self, settings: Mapping[str, Any], *, flavour: str, version: str | None,
               catalog, host_memory_bytes: int | None = None, connections: int | None = None):
        """Worst case: the memtx and vinyl quotas full, the runtime, and per connection an
        input and an output buffer of ``readahead`` bytes (see ASSUMPTIONS)."""
        catalog = catalog or self.catalog(flavour, version)

        def value(name: str) -> int:
            raw = settings.get(name)
            if raw is None:
                return int(catalog.get(name).default)
            n = getattr(raw, "n", None)  # rules.model.Bytes
            return int(n) if n is not None else int(catalog.get(name).coerce(raw))

        conns = connections or self.default_connections("kv") or 100
        parts = [
            MemoryPart("memtx_memory", value("memtx_memory"), False,
                       "memtx arena: all tuples and indexes (counted full)"),
            MemoryPart("vinyl_memory", value("vinyl_memory"), False,
                       "vinyl level-0 trees (counted full even without vinyl spaces)"),
            MemoryPart("vinyl_cache", value("vinyl_cache"), False, "vinyl tuple cache"),
            MemoryPart("runtime", RUNTIME_BYTES, False,
                       "the tarantool process itself: binary, Lua heap, WAL/iproto buffers"),
            MemoryPart("readahead x 2", 2 * value("readahead"), True,
                       "per connection: input buffer (readahead) and output buffer"),
        ]
        glob = sum(p.bytes for p in parts if not p.per_connection)
        per = sum(p.bytes for p in parts if p.per_connection)
        return MemoryEstimate("tarantool", glob, per, conns, parts,
                              assumptions=ASSUMPTIONS)

    def fit_memory(self, rec: Any, view: Any, budget_bytes: int) -> None:
        """Lower memtx_memory (the only big quota) until the worst case fits."""
        fit_memtx(self, rec, view, budget_bytes)

    def data_bounds(self, workload: Any, scale: int, catalog: Any,
                    budget_bytes: int | None = None) -> list[Any]:
        """memtx holds every tuple: the arena must hold the data (else Tarantool cannot even
        recover the golden copy: "Failed to allocate ... in slab allocator"); the smallest
        allocation unit must not exceed the workload's tuples (each tuple takes a whole unit:
        336K for a 1 KB record multiplies the data 300-fold)."""
        from pmem_advisor.engines.tarantool.baseline import ARENA_BASE, ARENA_SLACK, arena_for_data
        from pmem_advisor.rules.model import human_bytes
        from pmem_advisor.tuner.feasible import DataBound

        out = []
        if workload.storage_engine == "vinyl":
            return out  # the data is on disk: memtx holds only the system spaces
        data = workload.data_bytes(scale)
        if data:
            out.append(DataBound(
                "memtx_memory", low=arena_for_data(data),
                reason=f"memtx keeps every tuple in RAM: ~{human_bytes(data)} of tuples and "
                       f"indexes at scale {scale}, +{ARENA_SLACK - 1:.0%} for slab rounding and "
                       f"what a checkpoint holds, +{human_bytes(ARENA_BASE)} for the system "
                       "spaces"))
        record = getattr(workload, "record_bytes", None)
        if record:
            out.append(DataBound(
                "memtx_min_tuple_size", high=record,
                reason=f"the smallest allocation unit at most the workload's tuples "
                       f"(~{record} B): every tuple takes at least one unit"))
        return out

    def workload_knobs(self, workload: Any) -> list[str]:
        """Vinyl's memory and read threads, searched when the workload's data is in vinyl."""
        if workload.storage_engine == "vinyl":
            return list(VINYL_KNOBS)
        return []

    def apply_lines(self, path: str, settings: Mapping[str, str], restart: list[str],
                    flavour: str | None = None) -> list[str]:
        """How a DBA deploys the tuned file (for tune's report)."""
        catalog = self.catalog()

        def lua(name: str, text: str) -> str:
            try:
                knob = catalog.get(name)
                return lua_value(knob, knob.parse(text))
            except UsageError:
                return text

        live = [k for k in settings if k not in restart]
        out = [f"apply: start Tarantool with `tarantool {path}`, or copy its options into "
               "the box.cfg{} call of your own init file"]
        if live:
            out.append("  on a running instance (console): box.cfg{"
                       + ", ".join(f"{k} = {lua(k, settings[k])}" for k in live) + "}")
        if restart:
            out.append(f"  restart needed for {', '.join(restart)} (read at startup only)")
        return out

    # -- running it ---------------------------------------------------------------------------
    def find_binary(self, flavour: str | None = None, version: str | None = None):
        self.resolve_flavour(flavour, version)
        b = find_tarantool()
        if version and not (b.version == version or b.version.startswith(version + ".")):
            raise EnvironmentProblem(f"no Tarantool {version} found (found {b.version})",
                                     hint="apt-get install tarantool")
        return b

    def binary_version(self, path: Path | None) -> str:
        return self.find_binary().version

    def installed_version(self, flavour: str | None = None):
        try:
            b = self.find_binary()
        except Exception:  # noqa: BLE001 - recommend/check work without the binary
            return "tarantool", None
        return b.flavour, b.version

    def binary_status(self) -> tuple[bool, str]:
        try:
            b = self.find_binary()
        except EnvironmentProblem as e:
            return False, str(e)
        return True, f"tarantool {b.version} ({b.bindir / 'tarantool'})"

    def validate_by_starting(self, config_text: str, workdir: str | Path | None = None, *,
                             binary: Any = None) -> None:
        """Start Tarantool with ``config_text`` (unprivileged, unix socket, in a scratch
        directory), then stop it and remove everything. UsageError with Tarantool's own
        reason when it refuses."""
        binary = binary or self.find_binary()
        if workdir is not None and not can_reach(Path(workdir), server_user()):
            workdir = None  # a private scratch (0700 under /tmp): the default work directory
        with TarantoolInstance(binary, workdir) as inst:  # None: the default work directory
            inst.initialize()
            try:
                inst.start(config_text)
            except ServerError as e:
                raise UsageError(f"Tarantool {binary.version} refused the config: "
                                 f"{inst.refusal_reason(inst.log_tail(60))}") from e
            inst.stop()

    def workload(self, name: str, **options: Any):
        return get_tarantool_workload(name, **options)

    def evaluator(self, request: EvalRequest):
        r = request
        if getattr(r.workload, "engines", ("tarantool",)) != ("tarantool",):
            raise UsageError(f"workload {r.workload.name} does not run on Tarantool "
                             f"(use {', '.join(self.workloads)})")
        return TarantoolEvaluator(r.binary, r.workload, scale=r.scale, clients=r.clients,
                                  duration=r.duration, warmup=r.warmup, data_dir=r.data_dir,
                                  wal_dir=r.wal_dir, workdir=r.workdir,
                                  catalog=r.catalog or self.catalog(), cgroup=r.cgroup)
