"""PM050 DuckDB on PMEM: threads = the physical cores of the PMEM's socket.

Anti-pattern: DuckDB's default of one thread per logical CPU of the whole machine. K23 ran
DuckDB (v0.6.1) on "all the available logical cores in socket 0 (48 in total)" (K23 §4.1);
D21 found that sequential PMEM reads want every physical core and gain nothing from
hyper-threads, and that reads from the far socket lose bandwidth (D21 insights #1-#2, #3-#4;
D21-1). DuckDB scans are sequential column reads.

Recommendation: with the data on PMEM, ``threads`` = the physical cores of the NUMA node that
owns the PMEM (the baseline's value, now for the paper's reason); the tuner may still try up
to the logical CPUs there (PM051: hyper-threads help random reads, D21-6).
"""

from pmem_advisor.engines.duckdb.baseline import near_node, physical_cores_near
from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule, Set


class DuckdbThreadsPhysicalCores(Rule):
    id = "PM050"
    title = "DuckDB on PMEM: threads = physical cores of the PMEM's socket"
    insights = ("D21-1",)
    paper = "D21 insights #1-#2; K23 §4.1"
    priority = PRIORITY_SPEED
    engines = ("duckdb",)

    def condition(self, f):
        return f.data_on_pmem

    def effects(self, f):
        n, node = physical_cores_near(f), near_node(f)
        where = (f"node {node}, which owns the PMEM" if node is not None
                 else "the budget (no NUMA node known for the PMEM)")
        out = [Set("threads", n,
                   f"{n} physical cores of {where}: sequential PMEM reads "
                   "want every physical core, hyper-threads add nothing (D21 insights #1-#2)")]
        if f.logical_total > f.physical_total:
            out.append(Note("info", "threads",
                            f"DuckDB's default uses every logical CPU ({f.logical_total}); K23 "
                            "ran it on all 48 logical cores of one socket (K23 §4.1); here "
                            f"threads = {n} physical cores of {where}"))
        return out


RULE = DuckdbThreadsPhysicalCores()
