"""PostgreSQL baseline for a dedicated server: pgtune's formulas, one knob group per function.

Every threshold carries its reason. Values are Bytes/Seconds or plain config values; the
engine converts them to each knob's base unit through the catalog.
"""

from __future__ import annotations

import math

from pmem_advisor.rules.facts import Facts
from pmem_advisor.rules.model import PRIORITY_BASELINE, Bytes, Rule, Set

KB, MB, GB = 1 << 10, 1 << 20, 1 << 30

# pgtune's per-workload WAL sizes (min, max): more WAL between checkpoints for heavier writers.
WAL_SIZES = {"oltp": (2 * GB, 8 * GB), "olap": (4 * GB, 16 * GB), "mixed": (1 * GB, 4 * GB),
             "kv": (1 * GB, 4 * GB)}  # kv ~ pgtune's "web"
# pgtune's connection counts when the client count is not given.
CONNECTIONS = {"oltp": 300, "olap": 40, "mixed": 100, "kv": 200}
# Prefetch depth the device sustains: one spindle vs. an SSD's queue vs. NVMe's many queues.
IO_CONCURRENCY = {"hdd": 2, "ssd": 200, "nvme": 1000, "pmem": 1000, "cxl": 1000}


def medium(f: Facts) -> str:
    """The data directory's medium; unknown counts as an SSD (pgtune's default)."""
    m = f.data.medium if f.data is not None else "unknown"
    return "ssd" if m in ("unknown", "tmpfs") else m


def connections(f: Facts) -> int:
    # the benchmark/app's clients plus 10 for superuser_reserved_connections and tools
    return f.clients + 10 if f.clients else CONNECTIONS[f.workload]


def memory(f: Facts) -> dict[str, object]:
    ram = f.memory_bytes
    shared = ram // 4  # 25%: the OS page cache does the rest of the caching
    maint = min(ram // (8 if f.workload == "olap" else 16), 8 * GB)  # index builds; capped 8 GB
    wal_buffers = min(shared * 3 // 100, 16 * MB)  # 3% of shared_buffers, 16 MB = 1 segment
    if wal_buffers >= 14 * MB:  # pgtune rounds 14-16 MB up to a whole WAL segment
        wal_buffers = 16 * MB
    return {"shared_buffers": Bytes(shared),
            "effective_cache_size": Bytes(ram * 3 // 4),  # shared_buffers + page cache
            "maintenance_work_mem": Bytes(maint),
            "wal_buffers": Bytes(max(wal_buffers, 64 * KB))}


def work_mem(f: Facts, workers: int) -> Bytes:
    # what is left after shared_buffers, per possible sort/hash node (3 per connection/worker)
    per = (f.memory_bytes - f.memory_bytes // 4) // ((connections(f) + workers) * 3)
    if f.workload in ("olap", "mixed"):
        per //= 2  # pgtune: analytic plans run several sorts/hashes at once
    return Bytes(max(per, 64 * KB))


def checkpoints(f: Facts) -> dict[str, object]:
    lo, hi = WAL_SIZES[f.workload]
    return {"min_wal_size": Bytes(lo), "max_wal_size": Bytes(hi),
            "checkpoint_completion_target": 0.9}  # spread checkpoint writes over 90%


def io(f: Facts) -> dict[str, object]:
    m = medium(f)
    return {"random_page_cost": 4.0 if m == "hdd" else 1.1,  # seeks cost only on spindles
            "effective_io_concurrency": IO_CONCURRENCY.get(m, 200)}


def parallel(f: Facts) -> dict[str, object]:
    cpus = f.cpus
    if cpus < 4:  # pgtune: parallel query does not pay below 4 CPUs
        return {}
    per_gather = math.ceil(cpus / 2)
    if f.workload != "olap":
        per_gather = min(per_gather, 4)  # OLTP: leave cores to concurrent sessions
    return {"max_worker_processes": cpus, "max_parallel_workers": cpus,
            "max_parallel_workers_per_gather": per_gather,
            "max_parallel_maintenance_workers": min(math.ceil(cpus / 2), 4)}


def settings(f: Facts) -> dict[str, object]:
    par = parallel(f)
    out = {**memory(f), **checkpoints(f), **io(f), **par,
           "max_connections": connections(f),
           "work_mem": work_mem(f, int(par.get("max_worker_processes", 8))),
           "default_statistics_target": 500 if f.workload == "olap" else 100,
           # WAL compression trades CPU for fewer WAL bytes on disks (pgtune); pglz ("on")
           # exists in every build. K23-5 (PM012) turns it off on PMEM.
           "wal_compression": "on"}
    return out


class PostgresBaseline(Rule):
    id = "PG-BASE"
    title = "PostgreSQL dedicated-server sizing (pgtune formulas)"
    insights = ()
    paper = "pgtune"
    priority = PRIORITY_BASELINE
    engines = ("postgres",)

    def condition(self, f: Facts) -> bool:
        return True

    def effects(self, f: Facts):
        why = {"shared_buffers": "25% of RAM", "effective_cache_size": "75% of RAM",
               "maintenance_work_mem": "RAM/16 (OLAP RAM/8), at most 8 GB",
               "wal_buffers": "3% of shared_buffers, at most 16 MB",
               "work_mem": "RAM left / (3 x (connections + workers))"}
        return [Set(k, v, f"pgtune: {why.get(k, 'baseline for ' + f.workload)}")
                for k, v in settings(f).items()]
