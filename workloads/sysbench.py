"""sysbench-driven workloads: sysbench's own OLTP scripts and our Lua scripts (lua/).

Latency percentiles: sysbench 1.0 prints a single percentile per report, so every run asks for
``--histogram=on``; the final report's histogram (1024 log-spaced buckets, ~1.5% wide) gives
p50/p95/p99 at bucket resolution. Warm-up: ``--report-checkpoints=W`` dumps the statistics at W
seconds and resets every counter (the histogram too), so the final report covers exactly the
measurement window [W, W+D] while clients stay connected and caches stay warm. The throughput
is the mean of the per-second reports after the steady-state cut (``warmup_mode``,
workloads/interim.py), W when the run is too short to detect one or the mode is "fixed".
"""

from __future__ import annotations

import math
import os
import re
import shutil
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
from pmem_advisor.workloads.dbapi import analyze_database, ensure_database
from pmem_advisor.workloads.interim import steady_window, stream

LUA_DIR = Path(__file__).resolve().parent / "lua"
SYSBENCH_SHARE = Path("/usr/share/sysbench")


def sysbench_binary() -> str:
    return find_tool("sysbench", purpose="sysbench, TPC-C-like and YCSB workloads",
                     debian_pkg="sysbench")


def connection_args(conn: ConnInfo) -> list[str]:
    """sysbench's driver options for a ConnInfo (unix socket preferred)."""
    if conn.engine == "postgres":
        args = ["--db-driver=pgsql", f"--pgsql-user={conn.user}", f"--pgsql-db={conn.dbname}"]
        # libpq treats a host starting with "/" as the socket directory.
        host = conn.socket_dir or conn.host or "127.0.0.1"
        args += [f"--pgsql-host={host}", f"--pgsql-port={conn.port or 5432}"]
        if conn.password:
            args.append(f"--pgsql-password={conn.password}")
        return args
    args = ["--db-driver=mysql", f"--mysql-user={conn.user}", f"--mysql-db={conn.dbname}"]
    if conn.socket_path:
        args.append(f"--mysql-socket={conn.socket_path}")
    else:
        args += [f"--mysql-host={conn.host or '127.0.0.1'}", f"--mysql-port={conn.port or 3306}"]
    if conn.password:
        args.append(f"--mysql-password={conn.password}")
    return args


_HIST_ROW = re.compile(r"^\s*([0-9.]+)\s*\|[ *]*\s(\d+)\s*$")
_NUM_RATE = re.compile(r"^\s*([a-z ]+):\s+([0-9.]+)\s+\(([0-9.]+) per sec\.\)")
_KV = re.compile(r"^\s*([a-z0-9 ]+):\s+([0-9.]+)s?\s*$")


def parse_sysbench_output(text: str) -> dict[str, Any]:
    """The final report of a ``sysbench run`` (checkpoint reports before it are skipped).

    Returns transactions, tps, queries, qps, ignored_errors, reconnects, total_time_s,
    latency{min,avg,max,sum,pct} and histogram [(ms, count)] when one was printed.
    """
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.strip() == "SQL statistics:"]
    if not starts:
        raise EnvironmentProblem("sysbench printed no statistics (run did not complete)")
    final = starts[-1]
    previous = starts[-2] if len(starts) > 1 else -1
    result: dict[str, Any] = {"latency": {}, "histogram": []}
    hist_at = [
        i for i in range(previous + 1, final) if lines[i].strip().startswith("Latency histogram")
    ]
    if hist_at:
        for ln in lines[hist_at[-1] + 1 : final]:
            m = _HIST_ROW.match(ln)
            if m:
                result["histogram"].append((float(m.group(1)), int(m.group(2))))
    section = None
    for ln in lines[final:]:
        s = ln.strip()
        if s.startswith("Latency (ms)"):
            section = "latency"
            continue
        if s.startswith("Threads fairness") or s.startswith("Latency histogram"):
            section = None
            continue
        m = _NUM_RATE.match(ln)
        if m:
            key = m.group(1).strip().replace(" ", "_")
            result[key] = float(m.group(2))
            result[{"transactions": "tps", "queries": "qps"}.get(key, key + "_per_s")] = float(
                m.group(3)
            )
            continue
        m = _KV.match(ln)
        if not m:
            continue
        key, value = m.group(1).strip(), float(m.group(2))
        if section == "latency":
            result["latency"]["pct" if "percentile" in key else key] = value
        elif key == "total time":
            result["total_time_s"] = value
        elif key == "total number of events":
            result["events"] = int(value)
    if "tps" not in result:
        raise EnvironmentProblem("sysbench output has no transaction count")
    return result


class SysbenchWorkload(Workload):
    """A workload that is one sysbench Lua script: ``prepare`` loads, ``run`` measures."""

    script: str = ""  # a name in /usr/share/sysbench or a file in lua/
    own_script: bool = False

    def script_path(self) -> str:
        path = (LUA_DIR if self.own_script else SYSBENCH_SHARE) / f"{self.script}.lua"
        if self.own_script and not path.is_file():
            raise EnvironmentProblem(f"workload script {path} is missing from the install")
        # sysbench finds its bundled scripts by name when the share dir is elsewhere
        return str(path) if path.is_file() else self.script

    def script_args(self, scale: int) -> list[str]:
        """Options both prepare and run need (table counts and sizes)."""
        return []

    def run_args(self) -> list[str]:
        """Options only run needs (the operation mix)."""
        return []

    def load_steps(self, scale: int) -> list[tuple[str, int]]:
        """The sysbench commands that load the data, each with its thread count."""
        return [("prepare", 1)]

    def _sysbench(self, conn: ConnInfo, args: list[str], *, what: str, timeout: float):
        argv = [sysbench_binary(), self.script_path(), *connection_args(conn), *args]
        env = dict(os.environ, LUA_PATH=f"{LUA_DIR}/?.lua;;")
        return run_tool(argv, what=what, timeout=timeout, env=env)

    def load(self, conn: ConnInfo, scale: int) -> None:
        self.check_engine(conn)
        if scale < 1:
            raise UsageError(f"scale must be at least 1, got {scale}")
        ensure_database(conn)
        common = self.script_args(scale)
        self._sysbench(conn, [*common, "cleanup"], what=f"{self.name} cleanup", timeout=600)
        for command, threads in self.load_steps(scale):
            self._sysbench(conn, [*common, f"--threads={max(1, threads)}", command],
                           what=f"{self.name} load", timeout=24 * 3600)
        self.remember_scale(conn, scale)
        analyze_database(conn)

    def _run_once(
        self, conn: ConnInfo, *, clients: int, duration: float, warmup: float
    ) -> WorkloadResult:
        """One sysbench run of warm-up + measurement, reporting every second: the throughput
        is the mean of the per-second reports after the steady-state cut (workloads/interim.py,
        the fixed warm-up when the run is too short to detect one); the latency histogram
        covers the run after the fixed warm-up (a report checkpoint there)."""
        scale = self.loaded_scale(conn)
        warm = math.ceil(warmup)
        measure = max(1, math.ceil(duration))
        args = [
            *self.script_args(scale),
            *self.run_args(),
            f"--threads={clients}",
            f"--time={warm + measure}",
            "--histogram=on",
            "--percentile=99",
            "--report-interval=1",
        ]
        if warm:
            args.append(f"--report-checkpoints={warm}")
        argv = [sysbench_binary(), self.script_path(), *connection_args(conn), *args, "run"]
        env = dict(os.environ, LUA_PATH=f"{LUA_DIR}/?.lua;;")
        if shutil.which("stdbuf"):  # reports line by line through the pipe, not at exit
            argv = ["stdbuf", "-oL", *argv]
        run = stream(argv, what=f"{self.name} run", timeout=warm + measure + 120,
                     on_sample=self.on_interim, env=env)
        window = steady_window(run.samples, warm, detect=self.warmup_mode == "steady")
        if run.stopped_early:
            parsed: dict[str, Any] = {"latency": {}, "histogram": []}
        else:
            parsed = parse_sysbench_output(run.stdout)
        pct = percentiles_from_histogram(parsed["histogram"])
        if pct["p99"] is None and parsed["latency"].get("pct") is not None:
            pct["p99"] = parsed["latency"]["pct"]  # no histogram printed: keep sysbench's own
        tps = window.tps if window.tps is not None else parsed.get("tps")
        if tps is None:
            raise EnvironmentProblem(f"{self.name} run reported no throughput")
        return self._result(
            conn,
            clients,
            throughput_tps=tps,
            latency_ms=pct,
            errors=int(parsed.get("ignored_errors", 0)),
            # no per-second report (a run of a second or two): sysbench's own summary covers
            # the whole run, warm-up included, and its throughput is the one used above
            duration_s=float(window.samples) if window.samples else float(warm + measure),
            raw={
                "tool": "sysbench",
                "transactions": parsed.get("transactions"),
                "queries": parsed.get("queries"),
                "qps": parsed.get("qps"),
                "reconnects": parsed.get("reconnects"),
                "latency": parsed["latency"],
                "warmup_s": warm,
                "warmup_mode": self.warmup_mode,
                "final_report_tps": parsed.get("tps"),
                "interim_tps": run.samples,
                "stopped_early": run.stopped_early,
                **window.to_dict(),
            },
        )


ROW_BYTES = 240  # one sbtest row with its share of the primary and k indexes, on disk


class SysbenchOltp(SysbenchWorkload):
    """sysbench's own oltp_* scripts; scale = thousands of rows per table."""

    option_names = data_option_names = ("tables",)
    scale_help = "thousands of rows in each of --tables tables (default 4 tables)"

    @property
    def bytes_per_scale(self) -> int:  # type: ignore[override]
        # 1000 sbtest rows of ~190 bytes in InnoDB/heap pages plus the k index: ~240 kB
        return int(self.options.get("tables", 4)) * ROW_BYTES * 1000

    def script_args(self, scale: int) -> list[str]:
        tables = int(self.options.get("tables", 4))
        if tables < 1:
            raise UsageError(f"tables must be at least 1, got {tables}")
        return [f"--tables={tables}", f"--table-size={scale * 1000}"]

    def load_steps(self, scale: int) -> list[tuple[str, int]]:
        # oltp_common's prepare loads tables in parallel, one thread per table
        return [("prepare", min(int(self.options.get("tables", 4)), os.cpu_count() or 1))]


def _oltp(name: str, script: str, write_heavy: bool) -> type[SysbenchOltp]:
    return type(
        f"Sysbench_{script}",
        (SysbenchOltp,),
        {"name": name, "script": script, "write_heavy": write_heavy,
         "__doc__": f"sysbench {script}.lua"},
    )


OLTP_WORKLOADS = {
    "sysbench-oltp-read-write": _oltp("sysbench-oltp-read-write", "oltp_read_write", True),
    "sysbench-oltp-write-only": _oltp("sysbench-oltp-write-only", "oltp_write_only", True),
    "sysbench-oltp-read-only": _oltp("sysbench-oltp-read-only", "oltp_read_only", False),
    "sysbench-oltp-point-select": _oltp("sysbench-oltp-point-select", "oltp_point_select", False),
}
