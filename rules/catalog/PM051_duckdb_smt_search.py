"""PM051 DuckDB on PMEM: let the tuner try the hyper-threads too.

Anti-pattern: fixing DuckDB's threads at the physical cores for every query. Index joins and
hash-table probes read PMEM randomly, and for random reads D21 found that "hyperthreading
improves the PMEM bandwidth, unlike sequential reads" (D21 §5.2, D21-6); K23's DuckDB ran on
every logical core of its socket (K23 §4.1).

Recommendation: keep PM050's physical cores as the recommendation, and search ``threads``
from the physical cores up to the logical CPUs of the PMEM's node when tuning on PMEM.
"""

from pmem_advisor.engines.duckdb.baseline import near_node, physical_cores_near
from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Rule


class DuckdbSmtSearch(Rule):
    id = "PM051"
    title = "DuckDB on PMEM: search threads up to the logical CPUs (random reads gain from SMT)"
    insights = ("D21-6",)
    paper = "D21 §5.2 (Fig. 12), insight #2; K23 §4.1"
    priority = PRIORITY_SPEED
    engines = ("duckdb",)

    def _logical(self, f):
        node = near_node(f)
        return min(len(f.node_cpus(node)) or f.cpus, f.cpus)

    def condition(self, f):
        return f.data_on_pmem and self._logical(f) > physical_cores_near(f)

    def effects(self, f):
        return [Bound("threads", physical_cores_near(f), self._logical(f),
                      reason="physical cores .. logical CPUs near the PMEM: random reads "
                             "(index joins, hash probes) gain from hyper-threads (D21 §5.2)")]


RULE = DuckdbSmtSearch()
