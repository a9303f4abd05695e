"""YCSB-like key-value workloads on Tarantool: ycsb-a/b/c through a Lua client (net.box).

The load generator is ``ycsb.lua`` (beside this file) run by the tarantool binary itself: no Python
Tarantool client is installed and none is added as a dependency; net.box is Tarantool's own
client, so what is measured is the server, not a third-party driver. One client process runs
``clients`` fibers, each with its own connection over the instance's unix socket.

Scale = thousands of 1 KB records (an unsigned key plus ten 100-byte fields, as K23's YCSB
runs and I17's micro-benchmark use). Mixes are YCSB's core workloads A (50/50), B (95/5) and
C (read only); a write is a ``replace`` of the whole record, as in I17 §5.1.

The space is memtx (I17's engine, all data in RAM) unless the name ends in ``-vinyl``: then it
is a vinyl space (Tarantool's LSM tree, data on disk, a tuple cache and an in-memory level in
RAM), the engine for data larger than memory. Vinyl's records hold random bytes, as YCSB's
do: it compresses its run files, and the constant fields of the memtx load would shrink the
data on disk many times over, so no read would ever reach the disk.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from pmem_advisor.connection import ConnInfo
from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.workloads.base import Workload, WorkloadResult, percentiles_from_histogram
from pmem_advisor.workloads.sysbench import LUA_DIR

SCRIPT = Path(__file__).resolve().parent / "ycsb.lua"
RECORDS_PER_SCALE = 1000
READ_SHARE = {"ycsb-a": 0.5, "ycsb-b": 0.95, "ycsb-c": 1.0}
SPACE_ENGINES = ("memtx", "vinyl")  # memtx: the plain names; vinyl: NAME-vinyl
# registry names next to the SQL ycsb-*
NAMES = tuple(f"tarantool-{n}{'' if e == 'memtx' else '-' + e}"
              for e in SPACE_ENGINES for n in READ_SHARE)


def _tarantool(conn: ConnInfo) -> str:
    binary = Path(conn.bindir or "/usr/bin") / "tarantool"
    if not binary.is_file():
        raise EnvironmentProblem(f"the tarantool client {binary} is missing",
                                 hint="apt-get install tarantool")
    return str(binary)


def run_client(conn: ConnInfo, mode: str, options: dict[str, Any], *, timeout: float) -> dict:
    """Run the Lua client once; its JSON answer, or EnvironmentProblem with its error."""
    if not conn.socket_path:
        raise UsageError("a Tarantool workload needs the instance's unix socket")
    options = {**options, "lua_lib": str(LUA_DIR)}  # the shared Lua helpers (pmem_common)
    argv = [_tarantool(conn), str(SCRIPT), mode, conn.socket_path, json.dumps(options)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, errors="replace", cwd="/")
    except subprocess.TimeoutExpired as e:
        raise EnvironmentProblem(f"the Tarantool client ({mode}) did not finish within "
                                 f"{timeout:.0f} s") from e
    answer = None
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            break
    if answer is None or not answer.get("ok"):
        why = (answer or {}).get("error") or (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise EnvironmentProblem(f"the Tarantool client ({mode}) failed: {' '.join(why.split())}")
    return answer


def eval_lua(conn: ConnInfo, code: str, args: list | None = None, timeout: float = 60) -> Any:
    """Evaluate Lua on the server (net.box ``eval``); its first return value."""
    answer = run_client(conn, "eval", {"code": code, "args": args or []}, timeout=timeout)
    return answer.get("result")


class TarantoolYcsb(Workload):
    engines = ("tarantool",)
    kind = "kv"
    unit = "operations"
    default_scale = 10
    scale_help = "thousands of 1 KB records"
    bytes_per_scale = RECORDS_PER_SCALE * 1100  # 1 KB of fields + key, tuple and index overhead
    record_bytes = 1024  # one tuple as memtx stores it (space:bsize() / len() on 2.6.0)
    read_share = 0.95
    storage_engine = "memtx"  # or "vinyl": where the records live (see the module docstring)

    def load(self, conn: ConnInfo, scale: int) -> None:
        self.check_engine(conn)
        if scale < 1:
            raise UsageError(f"scale must be at least 1, got {scale}")
        records = scale * RECORDS_PER_SCALE
        answer = run_client(conn, "load", {"records": records, "engine": self.storage_engine},
                            timeout=600 + records / 500)
        if int(answer.get("records") or 0) != records:
            raise EnvironmentProblem(f"{self.name}: loaded {answer.get('records')} of "
                                     f"{records} records")
        self.options["scale"] = scale
        self._shape_known = True

    def loaded_scale(self, conn: ConnInfo) -> int:
        if self.options.get("scale") and self._shape_known:
            return int(self.options["scale"])
        n = eval_lua(conn, "local s = box.space.usertable return s and s:len() or 0")
        if not n:
            raise UsageError(f"workload {self.name} has no data here: load it first")
        self.options["scale"] = max(1, int(n) // RECORDS_PER_SCALE)
        self._shape_known = True
        return int(self.options["scale"])

    def _run_once(self, conn: ConnInfo, *, clients: int, duration: float,
                  warmup: float) -> WorkloadResult:
        records = self.loaded_scale(conn) * RECORDS_PER_SCALE
        opts = {"records": records, "clients": clients, "read_share": self.read_share,
                "duration": duration, "warmup": warmup, "engine": self.storage_engine}
        answer = run_client(conn, "run", opts, timeout=duration + warmup + 120)
        ops, errors = int(answer.get("ops") or 0), int(answer.get("errors") or 0)
        seconds = float(answer.get("seconds") or duration)
        if ops == 0:
            raise EnvironmentProblem(f"{self.name}: no operation succeeded"
                                     + (f": {answer['first_error']}"
                                        if answer.get("first_error") else ""))
        buckets = [(float(v), int(n)) for v, n in answer.get("buckets") or []]
        return self._result(
            conn, clients, throughput_tps=ops / seconds,
            latency_ms=percentiles_from_histogram(buckets), errors=errors, duration_s=seconds,
            raw={"operations": ops, "read_share": self.read_share, "records": records,
                 "storage_engine": self.storage_engine,
                 "first_error": answer.get("first_error"), "client": "tarantool net.box"},
        )


def _workload(mix: str, engine: str) -> type[TarantoolYcsb]:
    share, letter = READ_SHARE[mix], mix[-1].upper()
    vinyl = engine == "vinyl"
    return type(
        f"TarantoolYcsb{letter}{'Vinyl' if vinyl else ''}", (TarantoolYcsb,),
        {"name": mix + ("-vinyl" if vinyl else ""), "read_share": share,
         "write_heavy": share < 0.9, "storage_engine": engine,
         "__doc__": f"YCSB {letter} on Tarantool ({engine}): {share:.0%} reads, "
                    f"{1 - share:.0%} replaces"},
    )


WORKLOADS: dict[str, type[TarantoolYcsb]] = {
    w.name: w for w in (_workload(mix, e) for e in SPACE_ENGINES for mix in READ_SHARE)}


def get_tarantool_workload(name: str, **options: Any) -> TarantoolYcsb:
    key = name.removeprefix("tarantool-")
    if key not in WORKLOADS:
        raise UsageError(f"unknown Tarantool workload {name!r} (use {', '.join(WORKLOADS)})")
    return WORKLOADS[key](**options)
