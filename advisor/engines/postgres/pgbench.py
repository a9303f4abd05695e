"""pgbench workloads (PostgreSQL only): the built-in TPC-B-like script and a user's script.

Latency percentiles: pgbench's summary has only the average, so the measured run writes a
per-transaction log (``--log``, one line per transaction with its latency in microseconds);
p50/p95/p99 are computed from those lines. The warm-up is a separate, unlogged pgbench run
right before, so the measured run's tps covers only the measurement window.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from pmem_advisor.connection import ConnInfo
from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.workloads.base import (
    Workload,
    WorkloadResult,
    find_tool,
    percentiles_from_histogram,
    run_tool,
)
from pmem_advisor.workloads.dbapi import analyze_database, ensure_database, execute_all
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


def parse_transaction_logs(paths: list[Path]) -> dict[str, Any]:
    """Latency percentiles (ms) from pgbench per-transaction logs.

    Line: ``client_id transaction_no time script_no time_epoch time_us [schedule_lag] ...``;
    ``time`` is the latency in microseconds, or ``failed``/``skipped``.
    """
    counts: dict[float, int] = {}
    done = failed = skipped = 0
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 6:
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
        threads = max(1, min(clients, os.cpu_count() or 1))
        common = [*self.script_args(), "-n", "-s", str(scale), "-c", str(clients),
                  "-j", str(threads)]
        warm = math.ceil(warmup)
        if warm:
            self._pgbench(conn, [*common, "-T", str(warm)], what=f"{self.name} warm-up",
                          timeout=warm + 120)
        measure = max(1, math.ceil(duration))
        with tempfile.TemporaryDirectory(prefix="pmem-advisor-pgbench-",
                                         dir=self.scratch_dir) as tmp:
            proc = self._pgbench(
                conn,
                [*common, "-T", str(measure), "--log", "--log-prefix", f"{tmp}/txn"],
                what=f"{self.name} run",
                timeout=measure + 120,
                cwd=tmp,
            )
            summary = parse_pgbench_summary(proc.stdout)
            logs = parse_transaction_logs(sorted(Path(tmp).glob("txn*")))
        return self._result(
            conn,
            clients,
            throughput_tps=summary["tps"],
            latency_ms=logs["latency_ms"],
            errors=int(summary["failed"]),
            duration_s=float(summary.get("duration_s", measure)),
            raw={
                "tool": "pgbench",
                "transactions": summary["transactions"],
                "latency_avg_ms": summary.get("latency_avg_ms"),
                "logged_transactions": logs["logged"],
                "warmup_s": warm,
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
