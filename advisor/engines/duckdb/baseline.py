"""DuckDB baseline: threads by physical cores near the data, memory_limit sized worst case.

DuckDB's own defaults are every logical CPU for ``threads`` and 80% of RAM for
``memory_limit`` (duckdb_settings() of 2.0.0). The baseline changes both:
- threads = the physical cores near the data (the PMEM's NUMA node when the data is on PMEM,
  else the budget's cores): D21 found sequential PMEM reads want every physical core and gain
  nothing from hyper-threads (D21 insights #1-#2, D21-1); K23 ran DuckDB on all 48 logical
  cores of socket 0 (K23 §4.1). The tuner may still search up to the logical CPUs (PM051).
- memory_limit = 90% of the budget minus what DuckDB allocates outside its buffer manager
  (the engine's memory model: per thread, the allocator's retained memory, the process), at
  most 80% of the budget (DuckDB's own share, of the budget rather than the host's RAM).
  DuckDB's manual: memory_limit "only applies to the buffer manager" (Operations manual,
  Limits) and "some of DuckDB's operations circumvent the database's buffer manager" (guide
  Out-of-Memory Issues, which advises 50-60% of RAM when the OS kills DuckDB).
temp_directory is not set here: where spills should go depends on the disks (PM052 moves
them off PMEM, K23 §4.5.1).
"""

from __future__ import annotations

from pmem_advisor.rules.facts import Facts
from pmem_advisor.rules.memory import BUDGET_SHARE
from pmem_advisor.rules.model import PRIORITY_BASELINE, Bound, Bytes, Rule, Set

MB = 1 << 20
DUCKDB_SHARE = 0.8  # DuckDB's default memory_limit: 80% of RAM

# The memory outside memory_limit (engine.py counts the same terms in its worst case).
PROCESS_BASE = 96 * MB  # the host process: Python/the application, DuckDB's code and catalog
PER_THREAD = 8 * MB  # a worker's stack and thread-local state and vectors in flight


def near_node(f: Facts) -> int | None:
    """The NUMA node the data lives on (its PMEM's), or the node the server is bound to."""
    if f.bound_node is not None:
        return f.bound_node
    if f.data is not None and f.data.numa_node is not None:
        return f.data.numa_node
    return f.pmem_node


def physical_cores_near(f: Facts) -> int:
    node = near_node(f)
    cores = f.cores_near(node) if node is not None else f.physical_cores
    return max(1, min(cores, f.physical_cores, f.cpus))


def memory_limit(f: Facts, threads: int) -> int:
    """90% of the budget less the engine's terms outside memory_limit, whole MiB."""
    return limit_for_budget(f.memory_bytes, threads)


def limit_for_budget(budget_bytes: int, threads: int) -> int:
    """The largest memory_limit whose worst case fits ``budget_bytes`` (see memory_limit)."""
    flush = 128 * MB  # allocator_flush_threshold's default
    rest = PROCESS_BASE + threads * PER_THREAD + flush
    fit = int(budget_bytes * BUDGET_SHARE) - rest
    # never above DuckDB's own 80% share, now of the real budget: some operations bypass the
    # buffer manager (DuckDB's out-of-memory guide), so the rest needs room
    return max(64 * MB, min(fit, int(budget_bytes * DUCKDB_SHARE)) // MB * MB)


class DuckDBBaseline(Rule):
    id = "DUCK-BASE"
    title = "DuckDB sizing: physical cores near the data, memory_limit within the budget"
    insights = ("D21-1",)
    paper = "D21 insights #1-#2; K23 §4.1; DuckDB defaults"
    priority = PRIORITY_BASELINE
    engines = ("duckdb",)

    def condition(self, f: Facts) -> bool:
        return True

    def effects(self, f: Facts):
        threads = physical_cores_near(f)
        node = near_node(f)
        where = f"NUMA node {node}" if node is not None else "the budget"
        limit = memory_limit(f, threads)
        cpus = max(1, f.cpus)
        return [
            Bound("threads", 1, cpus,
                  reason=f"1 .. the budget's {cpus} CPUs: DuckDB's workers are CPU-bound, more "
                         "threads than CPUs only add memory and switching"),
            Bound("memory_limit", Bytes(max(64 * MB, limit // 4 // MB * MB)), Bytes(limit),
                  reason="a quarter of .. all of the memory_limit that fits the budget"),
            Set("threads", threads,
                f"the {threads} physical cores of {where} (DuckDB's default is every logical "
                "CPU; sequential reads gain nothing from hyper-threads, D21 insights #1-#2)"),
            Set("memory_limit", Bytes(limit),
                "90% of the memory budget less what DuckDB allocates outside memory_limit "
                f"({threads} threads, allocator, process), at most 80% of it: the worst case "
                "fits (lower it to 50-60% if the OS still kills DuckDB, as DuckDB's "
                "out-of-memory guide advises)"),
        ]


RULE = DuckDBBaseline()
