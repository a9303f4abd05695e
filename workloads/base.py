"""The common shape of every workload: load data once, run measured windows, one result type."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pmem_advisor.connection import ConnInfo
from pmem_advisor.errors import CapabilityMissing, EnvironmentProblem, UsageError

PERCENTILES = ("p50", "p95", "p99")
META_TABLE = "pmem_advisor_workload"  # which workload was loaded here, at which scale


@dataclass
class WorkloadResult:
    """One measured run (or the median of repetitions: see ``raw["repetitions"]``).

    ``throughput_tps`` counts the workload's unit of work per second (``unit``: transactions
    for OLTP, queries for OLAP, statements for sql-file, operations for YCSB).
    """

    workload: str
    engine: str
    clients: int
    throughput_tps: float
    latency_ms: dict[str, float | None]
    errors: int
    duration_s: float
    unit: str = "transactions"
    raw: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentiles_from_histogram(buckets: list[tuple[float, int]]) -> dict[str, float | None]:
    """p50/p95/p99 from (value, count) buckets sorted by value: the first bucket whose
    cumulative count reaches the rank (nearest-rank method)."""
    total = sum(c for _, c in buckets)
    if total == 0:
        return {p: None for p in PERCENTILES}
    ordered = sorted(buckets)
    result: dict[str, float | None] = {}
    for name in PERCENTILES:
        rank = total * int(name[1:]) / 100.0
        seen = 0
        for value, count in ordered:
            seen += count
            if seen >= rank:
                result[name] = round(value, 3)
                break
    return result


def percentiles_from_samples(samples: list[float]) -> dict[str, float | None]:
    """Nearest-rank percentiles of raw latency samples (ms)."""
    return percentiles_from_histogram([(s, 1) for s in samples])


def median_result(results: list[WorkloadResult]) -> WorkloadResult:
    """Repetitions collapse to the run with the median throughput; all runs stay in raw."""
    if len(results) == 1:
        return results[0]
    ordered = sorted(results, key=lambda r: r.throughput_tps)
    chosen = ordered[(len(ordered) - 1) // 2]
    chosen.raw = dict(chosen.raw)
    chosen.raw["repetitions"] = [
        {"throughput_tps": r.throughput_tps, "latency_ms": r.latency_ms, "errors": r.errors}
        for r in results
    ]
    chosen.raw["throughput_stdev"] = statistics.pstdev(r.throughput_tps for r in results)
    return chosen


def find_tool(name: str, bindir: str | None = None, *, purpose: str, debian_pkg: str) -> str:
    """A client tool, from the server's own bindir first (pgbench must match the server)."""
    if bindir:
        candidate = Path(bindir) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if not found:
        raise CapabilityMissing(
            f"{name} is not installed; it is needed for {purpose}",
            hint=f"on Debian: apt-get install {debian_pkg}",
        )
    return found


def run_tool(
    argv: list[str],
    *,
    what: str,
    timeout: float,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> subprocess.CompletedProcess:
    """Run a load generator; a non-zero exit raises with the tool's own last error line."""
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=cwd,
            errors="replace",
        )
    except subprocess.TimeoutExpired as e:
        raise EnvironmentProblem(f"{what} did not finish within {timeout:.0f} s") from e
    if proc.returncode != 0:
        raise EnvironmentProblem(f"{what} failed: {tool_error(proc.stdout, proc.stderr)}")
    return proc


_ERROR_MARKERS = ("FATAL", "error", "ERROR", "failed", "aborted", "Can't", "could not")


def tool_error(stdout: str, stderr: str) -> str:
    """The telling part of a failed tool run: its first two lines naming an error
    (sysbench says what failed, then the server's own message)."""
    lines = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if ln.strip()]
    hits = [ln for ln in lines if any(m in ln for m in _ERROR_MARKERS)]
    if hits:
        return "; ".join(hits[:2])
    return lines[-1] if lines else "no output"


class Workload(ABC):
    """A named benchmark: ``load`` its data once, then ``run`` measured windows.

    ``options`` are workload-specific (a script path, a data density); unknown ones are refused.
    """

    name: str = ""
    engines: tuple[str, ...] = ("postgres", "mysql")
    write_heavy: bool = True
    kind: str = "oltp"  # oltp|olap|mixed|kv
    unit: str = "transactions"
    default_scale: int = 1
    scale_help: str = ""
    option_names: tuple[str, ...] = ()
    data_option_names: tuple[str, ...] = ()  # options that shape the loaded data
    # Bytes on disk (tables + indexes) one scale unit loads; None = unknown (a user's script).
    # Used to size the data at least as large as the memory being tuned.
    bytes_per_scale: int | None = None
    scratch_dir: str | None = None  # where run logs go (the tuner's recorded scratch)
    # Called with the interim throughput samples so far (one per second) by workloads whose
    # tool reports them (workloads/interim.py); returning True stops the run early.
    on_interim: Callable[[list[float]], bool] | None = None
    # "steady": the warm-up ends where the run's interim samples settle (workloads/interim.py),
    # the given warm-up is the fallback; "fixed": always the given warm-up.
    warmup_mode: str = "steady"
    # The length of one turn when the verdict runs a round's configs side by side
    # (Evaluator.evaluate_in_turns): every turn starts the load generator again, so a tool
    # that starts slowly (sysbench prepares its statements) needs longer turns; the shorter
    # the turn, the more of the host's short swings the configs of a round share.
    turn_s: int = 4
    # Scale units each client needs to avoid measuring lock contention on shared rows
    # (pgbench: one branch row per scale unit, updated by every transaction).
    scale_per_client: int = 0
    # Where the data lives when the engine has several storage engines (Tarantool: "memtx" in
    # RAM or "vinyl" on disk); the rules size the memory for it. None: the engine has one.
    storage_engine: str | None = None

    def data_bytes(self, scale: int) -> int | None:
        """Approximate size of the data ``load(scale)`` creates."""
        per = self.bytes_per_scale
        return None if per is None else int(per * scale)

    def scale_for_bytes(self, nbytes: int) -> int | None:
        """The smallest scale whose data is at least ``nbytes``; None when unknown."""
        per = self.bytes_per_scale
        if per is None or per <= 0:
            return None
        return max(1, -(-int(nbytes) // int(per)))

    def __init__(self, **options: Any) -> None:
        unknown = sorted(set(options) - set(self.option_names) - {"scale"})
        if unknown:
            allowed = ", ".join(self.option_names) or "none"
            raise UsageError(
                f"workload {self.name} has no option {', '.join(unknown)} (options: {allowed})"
            )
        self.options = dict(options)
        self._shape_known = False

    def check_engine(self, conn: ConnInfo) -> None:
        if conn.engine not in self.engines:
            raise UsageError(
                f"workload {self.name} runs on {'/'.join(self.engines)}, not on {conn.engine}"
            )

    @abstractmethod
    def load(self, conn: ConnInfo, scale: int) -> None:
        """Create and fill the workload's tables (idempotent: drops what it created before)."""

    @abstractmethod
    def _run_once(
        self, conn: ConnInfo, *, clients: int, duration: float, warmup: float
    ) -> WorkloadResult:
        """One warm-up window followed by one measurement window."""

    def run(
        self,
        conn: ConnInfo,
        *,
        clients: int,
        duration: float,
        warmup: float = 0,
        repetitions: int = 1,
    ) -> WorkloadResult:
        self.check_engine(conn)
        if clients < 1:
            raise UsageError(f"clients must be at least 1, got {clients}")
        if duration <= 0:
            raise UsageError(f"duration must be positive, got {duration}")
        if warmup < 0:
            raise UsageError(f"warm-up must not be negative, got {warmup}")
        if repetitions < 1:
            raise UsageError(f"repetitions must be at least 1, got {repetitions}")
        results = [
            self._run_once(conn, clients=clients, duration=duration, warmup=warmup)
            for _ in range(repetitions)
        ]
        return median_result(results)

    def remember_scale(self, conn: ConnInfo, scale: int) -> None:
        """Record the loaded scale (and the options that shape the data) in the database
        itself, so a later run (another process, a restored golden copy) knows the data."""
        from pmem_advisor.workloads.dbapi import execute_all

        self.options["scale"] = scale
        self._shape_known = True
        shape = {k: self.options[k] for k in self.data_option_names if k in self.options}
        shape_sql = json.dumps(shape).replace("'", "''")
        execute_all(
            conn,
            [
                f"CREATE TABLE IF NOT EXISTS {META_TABLE} (workload VARCHAR(64) PRIMARY KEY, "
                "scale INT NOT NULL, data_options VARCHAR(1000) NOT NULL)",
                f"DELETE FROM {META_TABLE} WHERE workload = '{self.name}'",
                f"INSERT INTO {META_TABLE} VALUES ('{self.name}', {int(scale)}, '{shape_sql}')",
            ],
            what=f"{self.name} metadata",
        )

    def loaded_scale(self, conn: ConnInfo) -> int:
        """The scale recorded by ``load`` (its data-shaping options fill those not given)."""
        if self.options.get("scale") and self._shape_known:
            return int(self.options["scale"])
        from pmem_advisor.workloads.dbapi import query_row

        row = query_row(
            conn,
            f"SELECT scale, data_options FROM {META_TABLE} WHERE workload = '{self.name}'",
            missing_ok=True,
        )
        if row is None:
            if self.options.get("scale"):
                return int(self.options["scale"])
            raise UsageError(f"workload {self.name} has no data here: load it first")
        for key, value in json.loads(row[1] or "{}").items():
            self.options.setdefault(key, value)
        self.options.setdefault("scale", int(row[0]))
        self._shape_known = True
        return int(self.options["scale"])

    def _result(self, conn: ConnInfo, clients: int, **fields: Any) -> WorkloadResult:
        return WorkloadResult(
            workload=self.name, engine=conn.engine, clients=clients, unit=self.unit, **fields
        )
