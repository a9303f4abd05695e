"""pgbench workloads (PostgreSQL only): the built-in TPC-B-like script and a user's script.

Latency percentiles: pgbench's summary has only the average, so the measured run writes a
per-transaction log (``--log``, one line per transaction with its latency in microseconds);
p50/p95/p99 are computed from those lines.

Warm-up (``warmup_mode``): "steady" (the default) is one pgbench run of warm-up + measurement
with ``--progress=1``; the steady-state detector (workloads/interim.py) cuts the warm-up from
the run's own per-second samples, the tps is their mean after the cut and the percentiles come
from the transactions logged after it. "fixed" is a separate warm-up run of the fixed length,
then a measured run (new connections; its summary's tps). Either way the interim samples
reach ``on_interim``, which may stop the run early (the tuner's pruner).
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from pmem_advisor.connection import ConnInfo
from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.fileio import child_path, held_parent, held_temp_dir, open_checked
from pmem_advisor.workloads.base import (
    Workload,
    WorkloadResult,
    find_tool,
    percentiles_from_histogram,
    run_tool,
)
from pmem_advisor.workloads.dbapi import analyze_database, ensure_database, execute_all
from pmem_advisor.workloads.interim import steady_window, stream
from pmem_advisor.workloads.sqlsplit import read_statements


def pgbench_binary(conn: ConnInfo) -> str:
    # pgbench from the server's own bindir: the same major version as the server.
    return find_tool("pgbench", conn.bindir, purpose="pgbench workloads",
                     debian_pkg="postgresql-client")


def connection_args(conn: ConnInfo) -> list[str]:
    args = ["-h", conn.socket_dir or conn.host or "127.0.0.1", "-p", str(conn.port or 5432),
            "-U", conn.user]
    return args


def tool_env(conn: ConnInfo) -> dict[str, str]:
    env = dict(os.environ, PGCONNECT_TIMEOUT="10")
    env.pop("PGSERVICE", None)
    if conn.password:
        env["PGPASSWORD"] = conn.password
    return env


_SUMMARY = {
    "transactions": re.compile(r"number of transactions actually processed:\s*(\d+)"),
    "failed": re.compile(r"number of failed transactions:\s*(\d+)"),
    "latency_avg_ms": re.compile(r"latency average\s*=\s*([0-9.]+)\s*ms"),
    "latency_stddev_ms": re.compile(r"latency stddev\s*=\s*([0-9.]+)\s*ms"),
    "initial_connection_ms": re.compile(r"initial connection time\s*=\s*([0-9.]+)\s*ms"),
    "tps": re.compile(r"tps\s*=\s*([0-9.]+)\s*\((?:without|excluding)"),
    "duration_s": re.compile(r"duration:\s*(\d+)\s*s"),
    "scale": re.compile(r"scaling factor:\s*(\d+)"),
}


def parse_pgbench_summary(text: str) -> dict[str, Any]:
    """pgbench's end-of-run summary (formats of PostgreSQL 13 to 18)."""
    out: dict[str, Any] = {}
    for key, rx in _SUMMARY.items():
        m = rx.search(text)
        if m:
            out[key] = float(m.group(1)) if "." in m.group(1) else int(m.group(1))
    if "tps" not in out:
        # pgbench < 14 printed "tps = X (including ...)" then "(excluding ...)"
        m = re.findall(r"tps\s*=\s*([0-9.]+)", text)
        if m:
            out["tps"] = float(m[-1])
    if "tps" not in out or "transactions" not in out:
        raise EnvironmentProblem("pgbench printed no summary (run did not complete)")
    out.setdefault("failed", 0)
    return out


def _opened_logs(paths: list[Path] | list[str], dir_fd: int | None) -> Iterator[TextIO]:
    """Each log as a text file, opened through fileio (issue 50): relative to the held
    ``dir_fd`` when given (names), else relative to a held descriptor of its parent; never
    through a link, never blocking on a FIFO, a regular file of one name owned by root or us
    only (anything else is fileio.PlantedFile, one line naming it and its owner)."""
    for path in paths:
        if dir_fd is None:
            with held_parent(path, "read") as (pfd, name):
                fd = open_checked(pfd, name, str(path))
        else:
            fd = open_checked(dir_fd, str(path), str(path))
        with os.fdopen(fd, errors="replace") as f:
            yield f


def log_names(dir_fd: int) -> list[str]:
    """pgbench's per-transaction logs (``txn.<pid>[.<thread>]``) in the held directory."""
    with os.scandir(dir_fd) as it:
        return sorted(e.name for e in it if e.name.startswith("txn"))


def first_log_epoch(paths: list[Path] | list[str], dir_fd: int | None = None) -> float | None:
    """The earliest completion time (epoch seconds) in pgbench per-transaction logs."""
    first = None
    for f in _opened_logs(paths, dir_fd):
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[4].isdigit() and parts[5].isdigit():
                t = int(parts[4]) + int(parts[5]) / 1e6
                first = t if first is None or t < first else first
                break  # each client's log is in time order
    return first


def parse_transaction_logs(paths: list[Path] | list[str], since_epoch: float | None = None,
                           dir_fd: int | None = None) -> dict[str, Any]:
    """Latency percentiles (ms) from pgbench per-transaction logs (only the transactions that
    completed at or after ``since_epoch`` when given: the steady part of the run).

    Line: ``client_id transaction_no time script_no time_epoch time_us [schedule_lag] ...``;
    ``time`` is the latency in microseconds, or ``failed``/``skipped``. ``dir_fd``: the
    paths are names in that held directory.
    """
    counts: dict[float, int] = {}
    done = failed = skipped = 0
    for f in _opened_logs(paths, dir_fd):
        for line in f:
            parts = line.split()
            if len(parts) < 6:
                continue
            if since_epoch is not None and parts[4].isdigit() and parts[5].isdigit() and \
                    int(parts[4]) + int(parts[5]) / 1e6 < since_epoch:
                continue
            if parts[2] == "failed":
                failed += 1
                continue
            if parts[2] == "skipped":
                skipped += 1
                continue
            try:
                us = int(parts[2])
            except ValueError:
                continue
            # 10 us resolution keeps the table small without visible loss at p50..p99.
            ms = round(us / 1000.0, 2)
            counts[ms] = counts.get(ms, 0) + 1
            done += 1
    return {
        "latency_ms": percentiles_from_histogram(list(counts.items())),
        "logged": done,
        "failed": failed,
        "skipped": skipped,
    }


class PgbenchWorkload(Workload):
    engines = ("postgres",)
    scale_help = "pgbench scale factor (100k accounts each, ~15 MB)"
    # pgbench -i: 100,000 pgbench_accounts rows (~13 MB) + primary key (~2.2 MB) per unit
    bytes_per_scale = 16 << 20
    scale_per_client = 1  # every TPC-B transaction updates one of `scale` branch rows
    builtin: str | None = None
    # One pgbench thread per client, as sysbench runs. With fewer threads than clients (-j at
    # the CPU count, the usual advice) each thread serves several connections, and on the 2-CPU
    # VMs here its runs settled for 20-40 s at a time on one of several levels up to a quarter
    # apart: 28 s runs of one config spread 8.6% (select-only, 4 clients) and 6.6% (the demo's
    # tpcb-like) at -j 2, against 2.7% and 3.5% at -j 4, interleaved
    # (benchmarks/data/noise/demo-threads.json, arm steady30-threads-per-cpu; docs/measurements.md).
    thread_per_client = True
    # pgbench starts in milliseconds, and on these VMs its per-second rate jumps between
    # levels about a third apart that last 2-8 s: 4 s turns of three configs (a 12 s cycle)
    # leave a level on one config, 1 s turns spread it over all three. The demo's tuned and
    # rules-only configs in 6 interleaved rounds each way (2026-11-29): the per-round log
    # ratio's error from its turns was 3.1% at 1 s, 4.7% at 2 s and 6.3% at 4 s, for 2% more
    # wall time (docs/measurements.md, "Turns of one second").
    turn_s = 1

    def script_args(self) -> list[str]:
        return ["-b", self.builtin] if self.builtin else []

    def _pgbench(self, conn: ConnInfo, args: list[str], *, what: str, timeout: float,
                 cwd: str | None = None):
        argv = [pgbench_binary(conn), *connection_args(conn), *args, conn.dbname]
        return run_tool(argv, what=what, timeout=timeout, env=tool_env(conn), cwd=cwd)

    def load(self, conn: ConnInfo, scale: int) -> None:
        self.check_engine(conn)
        if scale < 1:
            raise UsageError(f"scale must be at least 1, got {scale}")
        ensure_database(conn)
        self._pgbench(conn, ["-i", "-s", str(scale), "-q"], what=f"{self.name} load",
                      timeout=24 * 3600)
        self.remember_scale(conn, scale)

    def _run_once(
        self, conn: ConnInfo, *, clients: int, duration: float, warmup: float
    ) -> WorkloadResult:
        scale = self.loaded_scale(conn)
        threads = clients if self.thread_per_client else max(1, min(clients, os.cpu_count() or 1))
        common = [*self.script_args(), "-n", "-s", str(scale), "-c", str(clients),
                  "-j", str(threads)]
        warm = math.ceil(warmup)
        measure = max(1, math.ceil(duration))
        steady = self.warmup_mode == "steady"
        if warm and not steady:
            self._pgbench(conn, [*common, "-T", str(warm)], what=f"{self.name} warm-up",
                          timeout=warm + 120)
        length = warm + measure if steady else measure
        # The logs go to a private directory held by descriptor: pgbench gets it as its cwd
        # through /proc (the inode we made, not a name) and writes relative names; they are
        # read back relative to that descriptor (issue 50: no name of a tree reused).
        with held_temp_dir(self.scratch_dir or tempfile.gettempdir(),
                           "pmem-advisor-pgbench-") as tfd:
            argv = [pgbench_binary(conn), *connection_args(conn), *common, "-T", str(length),
                    "--progress=1", "--log", "--log-prefix", "txn", conn.dbname]
            run = stream(argv, what=f"{self.name} run", timeout=length + 120,
                         on_sample=self.on_interim, env=tool_env(conn), cwd=child_path(tfd),
                         report_stream="stderr")
            names = log_names(tfd)
            window = steady_window(run.samples, warm if steady else 0, detect=steady)
            summary = ({} if run.stopped_early else parse_pgbench_summary(run.stdout))
            since = None
            if steady and window.cut:
                t0 = first_log_epoch(names, tfd)
                since = None if t0 is None else t0 - 1.0 + window.cut
            logs = parse_transaction_logs(names, since, tfd)
        tps = window.tps if steady or run.stopped_early else summary["tps"]
        if tps is None and summary:  # too short for one progress report: the summary's
            tps = summary["tps"]
        if tps is None:
            raise EnvironmentProblem(f"{self.name} run reported no progress samples")
        return self._result(
            conn,
            clients,
            throughput_tps=tps,
            latency_ms=logs["latency_ms"],
            errors=int(summary.get("failed", logs["failed"])),
            # a run too short for a progress report is measured by pgbench's own summary, over
            # the whole run (the throughput above is that summary's too)
            duration_s=float(window.samples if steady and window.samples
                             else summary.get("duration_s", length)),
            raw={
                "tool": "pgbench",
                "transactions": summary.get("transactions"),
                "latency_avg_ms": summary.get("latency_avg_ms"),
                "logged_transactions": logs["logged"],
                "warmup_s": warm,
                "warmup_mode": self.warmup_mode,
                "interim_tps": run.samples,
                "stopped_early": run.stopped_early,
                **window.to_dict(),
            },
        )


class PgbenchTpcb(PgbenchWorkload):
    """pgbench's built-in TPC-B-like transaction (3 updates, 1 select, 1 insert)."""

    name = "pgbench-tpcb"
    builtin = "tpcb-like"


class PgbenchCustom(PgbenchWorkload):
    """A user's pgbench script (``script=FILE``) over pgbench's tables, or over the tables a
    ``setup=FILE`` of SQL statements creates."""

    name = "pgbench-custom"
    option_names = ("script", "setup")
    write_heavy = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        script = options.get("script")
        if not script:
            raise UsageError("workload pgbench-custom needs a script file (--script FILE)")
        self.script = Path(script)
        if not self.script.is_file():
            raise UsageError(f"pgbench script {self.script} does not exist")
        self.setup = Path(options["setup"]) if options.get("setup") else None
        if self.setup and not self.setup.is_file():
            raise UsageError(f"setup file {self.setup} does not exist")
        self.scale_per_client = 0  # a user's script: which rows it shares is unknown
        if self.setup:
            self.bytes_per_scale = None  # the user's own tables: size unknown

    def script_args(self) -> list[str]:
        return ["-f", str(self.script.resolve())]

    def load(self, conn: ConnInfo, scale: int) -> None:
        if self.setup is None:
            super().load(conn, scale)
            return
        self.check_engine(conn)
        ensure_database(conn)
        execute_all(conn, read_statements(self.setup), what=f"setup file {self.setup}")
        self.remember_scale(conn, max(1, scale))
        analyze_database(conn)
