"""PM014 PostgreSQL OLAP on PMEM: parallel workers = physical cores of the PMEM socket.

Anti-pattern: parallel query sized by logical CPUs (hyperthreads) or capped low. D21: PMEM
read bandwidth needs all physical cores (~40 GB/s at 16-18 threads on 18 cores) and
hyperthreads add nothing (insights #1, #2, best practices 1-2); in AppDirect the CPU does the
copy (K23 §4.1: PostgreSQL used only 8 threads for I/O and processing).

Recommendation: max_parallel_workers = physical cores near the PMEM,
max_parallel_workers_per_gather = that minus the leader; searched 0..cores.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Rule, Set


class PgParallelWorkersPhysicalCores(Rule):
    id = "PM014"
    title = "Parallel query scales with the PMEM socket's physical cores"
    insights = ("D21-1",)
    paper = "D21 §3.2, insights #1, #2, best practices 1-2; K23 §4.1"
    priority = PRIORITY_SPEED
    engines = ("postgres",)

    def condition(self, f):
        return f.data_on_pmem and f.workload in ("olap", "mixed") and f.cpus >= 4

    def effects(self, f):
        if f.needs_more_than_node(f.pmem_node):  # spans sockets: every core, never fewer
            cores = max(2, f.physical_cores)
        else:  # one socket (bound to it, PM004): its physical cores
            cores = max(2, min(f.cores_near(f.pmem_node), f.physical_cores))
        per_gather = cores - 1 if f.workload == "olap" else min(cores - 1, 4)
        return [Set("max_parallel_workers", cores,
                    f"{cores} physical cores near the PMEM: reads need every core, "
                    "hyperthreads add nothing (D21 insight #2)"),
                Set("max_parallel_workers_per_gather", per_gather,
                    "one worker per physical core besides the leader (D21 insight #2)"),
                Set("max_worker_processes", max(cores, 8),
                    "room for the parallel workers (at least the default 8)"),
                Bound("max_parallel_workers_per_gather", 0, cores,
                      reason="0..physical cores (D21-1)")]


RULE = PgParallelWorkersPhysicalCores()
