"""PostgreSQL baseline for a dedicated server: pgtune's formulas, one knob group per function.

Every threshold carries its reason. Values are Bytes/Seconds or plain config values; the
engine converts them to each knob's base unit through the catalog.
"""

from __future__ import annotations

import math

from pmem_advisor.engines.postgres.memory import PG_WORK_MEM_FLOOR
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


# Above the application's clients: superuser_reserved_connections' 3 (only a superuser may
# take them) and 7 for the DBA's own sessions, monitoring and backup tools.
SUPERUSER_RESERVED = 3
TOOL_CONNECTIONS = 7


def connections(f: Facts) -> int:
    if f.clients:
        return f.clients + SUPERUSER_RESERVED + TOOL_CONNECTIONS
    return CONNECTIONS[f.workload]


def connections_reason(f: Facts) -> str:
    if f.clients:
        return (f"{f.clients} clients (--clients) + {SUPERUSER_RESERVED} "
                f"superuser_reserved_connections + {TOOL_CONNECTIONS} for monitoring, backup "
                "and admin sessions")
    return (f"pgtune's {CONNECTIONS[f.workload]} for {f.workload} (no --clients given; pass "
            f"it: the clients + {SUPERUSER_RESERVED + TOOL_CONNECTIONS} reserved are sized "
            "then)")


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
    return Bytes(max(per, PG_WORK_MEM_FLOOR))  # pgtune's floor, the one the fit keeps too


def checkpoints(f: Facts) -> dict[str, object]:
    lo, hi = WAL_SIZES[f.workload]
    return {"min_wal_size": Bytes(lo), "max_wal_size": Bytes(hi),
            "checkpoint_completion_target": 0.9}  # spread checkpoint writes over 90%


def io(f: Facts) -> dict[str, object]:
    m = medium(f)
    return {"random_page_cost": 4.0 if m == "hdd" or f.workload == "olap" else 1.1,
            "effective_io_concurrency": IO_CONCURRENCY.get(m, 200)}


def random_page_cost_reason(f: Facts) -> str:
    m = medium(f)
    if m == "hdd":
        return "4.0: seeks cost on a spinning disk"
    if f.workload == "olap":  # pgtune leaves the default for a warehouse larger than RAM
        return (f"4.0, the default, for a warehouse on {m}: a lower cost makes the planner "
                "pick index scans for large retrievals, slower than sequential scans")
    return f"1.1: random reads cost little more on {m}"


def autovacuum_workers(f: Facts) -> int | None:
    """pgtune raises autovacuum_max_workers from 3 only on heavier servers (16+ CPUs)."""
    return 5 if f.cpus >= 32 else 4 if f.cpus >= 16 else None


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
           **({"autovacuum_max_workers": n} if (n := autovacuum_workers(f)) else {}),
           "max_connections": connections(f),
           "work_mem": work_mem(f, int(par.get("max_worker_processes", 8))),
           "default_statistics_target": 500 if f.workload == "olap" else 100}
    return out


FEW_CPUS = 4  # below this, compression competes with the queries for the only cores


def wal_compression(f: Facts) -> tuple[str, str]:
    """Fewer WAL bytes for CPU per full-page image. pgtune sets lz4 on PostgreSQL 15+; we do
    when the build is known to have it. The measured CPU cost (issue 13) was pglz's, so it only
    decides between pglz and off on few CPUs; lz4 costs a fraction of that and is not refused."""
    if not f.version_below(15) and "lz4" in f.features:
        return "lz4", ("lz4 (this build has it), as pgtune sets on PostgreSQL 15+: fewer WAL "
                       "bytes at a fraction of pglz's CPU")
    if f.cpus < FEW_CPUS:
        return "off", (f"{f.cpus} CPU(s) and no lz4 known in this build: pglz's CPU cost "
                       "outweighs the WAL bytes it saves (on a 2-core machine pglz cost ~16% CPU "
                       "per transaction and rules-only measured 0.92x of the defaults, issue "
                       "13); lz4 (pg_config --configure lists --with-lz4) would be worth it")
    if f.version_below(15):
        return "on", "pglz, the only method before PostgreSQL 15: fewer WAL bytes for some CPU"
    return "pglz", ("pglz: lz4 costs less CPU but this server's build is not known to have it "
                    "(pg_config --configure lists --with-lz4: then set lz4)")


def autovacuum_work_mem(f: Facts) -> tuple[Bytes, str]:
    """Each of autovacuum_max_workers (3) may take this much; PostgreSQL 17+ really uses all of
    it (no more 1 GB dead-tuple cap), so 3 x maintenance_work_mem would be committable. RAM/64
    per worker keeps autovacuum under 5% of RAM; manual VACUUM/CREATE INDEX keep maint."""
    maint = memory(f)["maintenance_work_mem"].n
    workers = autovacuum_workers(f) or 3
    return Bytes(min(maint, max(64 * MB, f.memory_bytes // 64))), (
        "RAM/64 per autovacuum worker, not pgtune's maintenance_work_mem or its 2 GB cap: "
        f"PostgreSQL 17+ uses all of it, so {workers} workers x maintenance_work_mem would be "
        "committable")


def cpu_source(f: Facts) -> str:
    """Where the CPU budget came from, as the budget note says it (e.g. cgroup cpu.max)."""
    line = next((n for n in f.notes if n.startswith("budget: cpus:")), "")
    return line.removeprefix("budget: cpus:").strip() or f"{f.cpus} CPUs"


def few_cpu_parallel(f: Facts) -> dict[str, tuple[object, str]]:
    """Below 4 CPUs pgtune sets no parallel knobs, which leaves the server's 8 parallel workers
    (2 per gather) on a machine or cgroup with fewer CPUs: cap them at the budget's CPUs.
    max_worker_processes keeps its default 8: it also holds logical replication and extension
    workers, and max_parallel_workers already caps the parallel ones."""
    if f.cpus >= 4:
        return {}
    cpus = max(1, f.cpus)
    why = (f"the budget's CPUs ({cpu_source(f)}); pgtune sets none below 4 CPUs, which would "
           "leave the server's defaults (8 workers, 2 per gather)")
    half = max(1, cpus // 2)
    return {"max_parallel_workers": (cpus, f"one worker per CPU of {why}"),
            "max_parallel_workers_per_gather": (half, f"half of {why}"),
            "max_parallel_maintenance_workers": (half, f"half of {why}")}


def extras(f: Facts) -> dict[str, tuple[object, str]]:
    """Lines beyond pgtune's formulas, each with the reason it differs."""
    out: dict[str, tuple[object, str]] = {"wal_compression": wal_compression(f),
                                          "autovacuum_work_mem": autovacuum_work_mem(f),
                                          **few_cpu_parallel(f)}
    if f.workload in ("oltp", "kv", "mixed"):
        label = {"oltp": "OLTP", "kv": "key-value", "mixed": "mixed"}[f.workload]
        out["jit"] = ("off", f"{label}: short queries, where JIT compilation "
                             "costs more than it saves (pgtune too sets jit = off for web, "
                             "OLTP and mixed loads on PostgreSQL 12+)")
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
               "random_page_cost": random_page_cost_reason(f),
               "autovacuum_max_workers": "4 from 16 CPUs, 5 from 32: more tables vacuumed "
                                         "at once on a heavier server",
               "effective_io_concurrency": f"prefetch depth {medium(f)} sustains",
               "wal_buffers": "3% of shared_buffers, at most 16 MB",
               "work_mem": "RAM left / (3 x (connections + workers))"}
        out = [Set(k, v, connections_reason(f) if k == "max_connections" else
                   f"pgtune: {why.get(k, 'baseline for ' + f.workload)}")
               for k, v in settings(f).items()]
        return out + [Set(k, v, reason) for k, (v, reason) in extras(f).items()]
