"""YCSB-like A/B/C mixes on RocksDB through its own benchmark tool, db_bench.

K23 §6 ran YCSB 0.17 workloads A (50% reads / 50% updates), B (95/5) and C (read-only) on
RocksDB with 1000-byte rows (every operation touches the whole row). db_bench runs the same
mixes without a JVM: ``readrandomwriterandom`` with ``--readwritepercent`` 50 (A) or 95 (B),
and ``readrandom`` (C), over keys loaded by a ``fillrandom`` step, 1000-byte values. Keys are
uniform, not YCSB's zipfian: db_bench 7.8 has no zipfian key generator for these benchmarks;
the results say so.

A scale unit is 1000 keys (about 1 MB of values). These workloads are RocksDB's own: the SQL
engines' ycsb-* (workloads/ycsb.py) are different programs with the same mixes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pmem_advisor.errors import UsageError
from pmem_advisor.workloads.base import PERCENTILES, percentiles_from_histogram

KEYS_PER_SCALE = 1000
VALUE_SIZE = 1000  # K23 §6: "Each workload accesses all fields of a 1000-byte row"
KEY_SIZE = 16  # db_bench's default key size
KEY_NOTE = "uniform keys (db_bench has no zipfian generator for these mixes; YCSB's is zipfian)"


@dataclass(frozen=True)
class Mix:
    name: str
    title: str
    benchmark: str
    read_percent: int
    kind: str  # the rules' workload kind


MIXES = {
    "ycsb-a": Mix("ycsb-a", "YCSB A: 50% reads, 50% updates", "readrandomwriterandom", 50, "kv"),
    "ycsb-b": Mix("ycsb-b", "YCSB B: 95% reads, 5% updates", "readrandomwriterandom", 95, "kv"),
    "ycsb-c": Mix("ycsb-c", "YCSB C: read-only", "readrandom", 100, "kv"),
}


class RocksYcsb:
    """One YCSB-like mix for db_bench; the RocksDB evaluator is the only one that runs it."""

    engines = ("rocksdb",)
    unit = "operations"
    default_scale = 100  # 100k keys, ~100 MB: a few seconds to load on a small machine
    scale_help = f"thousands of {VALUE_SIZE}-byte records"
    option_names = ("value_size",)
    data_option_names = ("value_size",)
    scale_per_client = 0
    scratch_dir: str | None = None

    def __init__(self, name: str, **options: Any) -> None:
        if name not in MIXES:
            raise UsageError(f"unknown RocksDB workload {name!r} (use {', '.join(MIXES)})")
        unknown = sorted(set(options) - set(self.option_names) - {"scale"})
        if unknown:
            raise UsageError(f"workload {name} has no option {', '.join(unknown)} "
                             f"(options: {', '.join(self.option_names)})")
        self.mix = MIXES[name]
        self.name = name
        self.kind = self.mix.kind
        self.write_heavy = self.mix.read_percent < 100
        self.options = dict(options)
        self.value_size = int(options.get("value_size", VALUE_SIZE))
        if not 1 <= self.value_size <= 1 << 20:
            raise UsageError(f"value_size must be 1 .. 1048576 bytes, got {self.value_size}")
        self.bytes_per_scale = KEYS_PER_SCALE * (self.value_size + KEY_SIZE)

    def data_bytes(self, scale: int) -> int:
        return int(self.bytes_per_scale * scale)

    def scale_for_bytes(self, nbytes: int) -> int:
        return max(1, -(-int(nbytes) // int(self.bytes_per_scale)))

    def keys(self, scale: int) -> int:
        if scale < 1:
            raise UsageError(f"scale must be at least 1, got {scale}")
        return int(scale) * KEYS_PER_SCALE

    # -- db_bench command lines -------------------------------------------------------------
    def common_args(self, db: str, scale: int) -> list[str]:
        return [f"--db={db}", f"--num={self.keys(scale)}", f"--value_size={self.value_size}",
                f"--key_size={KEY_SIZE}", "--seed=42"]

    def load_args(self, db: str, scale: int) -> list[str]:
        """The fill step: random inserts (YCSB's load phase), then a full compaction so
        every trial starts from the same LSM shape."""
        return ["--benchmarks=fillrandom,compact", *self.common_args(db, scale),
                "--threads=1", "--disable_wal=false"]

    def run_args(self, db: str, scale: int, *, clients: int, duration: float) -> list[str]:
        if clients < 1:
            raise UsageError(f"clients must be at least 1, got {clients}")
        args = [f"--benchmarks={self.mix.benchmark}", *self.common_args(db, scale),
                "--use_existing_db=1", f"--threads={clients}",
                f"--duration={max(1, round(duration))}", "--histogram=1"]
        if self.mix.benchmark == "readrandomwriterandom":
            args.append(f"--readwritepercent={self.mix.read_percent}")
        return args


def workload(name: str, **options: Any) -> RocksYcsb:
    return RocksYcsb(name, **options)


# -- db_bench output ----------------------------------------------------------------------
_RESULT = re.compile(r"^(\w+)\s*:\s*([\d.]+) micros/op (\d+) ops/sec ([\d.]+) seconds "
                     r"(\d+) operations;(.*)$")
_HIST_HEAD = re.compile(r"^Microseconds per (\w+):")
_BUCKET = re.compile(r"^[\[(]\s*([\d.]+),\s*([\d.]+)\s*[\])]\s+(\d+)\s")


def parse_output(text: str, benchmark: str) -> dict[str, Any] | None:
    """ops/sec, seconds, operations and p50/p95/p99 in ms (reads and writes together) of the
    ``benchmark`` line in db_bench's output; None when it printed no such line."""
    result = None
    buckets: list[tuple[float, int]] = []
    per_op: dict[str, list[tuple[float, int]]] = {}
    current: str | None = None
    for line in text.splitlines():
        line = line.strip()
        m = _RESULT.match(line)
        if m and m.group(1) == benchmark:
            result = {"ops_per_sec": float(m.group(3)), "micros_per_op": float(m.group(2)),
                      "seconds": float(m.group(4)), "operations": int(m.group(5)),
                      "detail": m.group(6).strip()}
            continue
        h = _HIST_HEAD.match(line)
        if h:
            current = h.group(1)
            per_op[current] = []
            continue
        b = _BUCKET.match(line)
        if b and current is not None:
            upper_ms = float(b.group(2)) / 1000.0  # nearest rank: the bucket's upper bound
            per_op[current].append((upper_ms, int(b.group(3))))
    if result is None:
        return None
    for ops in per_op.values():
        buckets.extend(ops)
    result["latency_ms"] = (percentiles_from_histogram(buckets) if buckets
                            else {p: None for p in PERCENTILES})
    result["latency_ms_by_op"] = {op: percentiles_from_histogram(b) for op, b in per_op.items()
                                  if b}
    return result


def failure_reason(text: str) -> str:
    """db_bench's own reason for a failed run, one line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    markers = ("Unable to load options", "Invalid argument", "Not supported", "IO error",
               "Corruption", "error", "Error", "failed", "Failed")
    for ln in lines:
        if any(m in ln for m in markers):
            return " ".join(ln.split())[:300]
    return " ".join(lines[-1].split())[:300] if lines else "db_bench printed nothing"
