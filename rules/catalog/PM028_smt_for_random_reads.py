"""PM028 Random PMEM reads gain from hyper-threads (unlike sequential ones).

Anti-pattern: sizing random-read concurrency by physical cores (or disabling SMT) because
sequential PMEM reads gain nothing from hyper-threads (D21 insight #2, PM014). For random access
D21 found the opposite: more threads give more bandwidth and "hyperthreading improves the PMEM
bandwidth, unlike sequential reads" (D21 §5.2); small random reads reach about half of the
sequential bandwidth.

Recommendation: for OLTP/key-value work (index lookups: random reads) on PMEM keep SMT on and
size read concurrency by logical CPUs: MySQL ``innodb_read_io_threads`` searched up to the
logical CPUs near the PMEM; PostgreSQL's backends already use every logical CPU.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Note, Rule


class SmtForRandomReads(Rule):
    id = "PM028"
    title = "Random PMEM reads scale with hyper-threads: size read concurrency by logical CPUs"
    insights = ("D21-6",)
    paper = "D21 §5.2 (Fig. 12), insight #2"
    priority = PRIORITY_SPEED

    def _logical(self, f):
        node = f.bound_node if f.bound_node is not None else f.pmem_node
        return len(f.node_cpus(node)) or f.cpus

    def condition(self, f):
        return (f.engine is not None and f.data_on_pmem and f.workload in ("oltp", "kv")
                and f.logical_total > f.physical_total)

    def effects(self, f):
        out = [Note("info", "smt",
                    "random PMEM reads gain from hyper-threads, unlike sequential ones (D21 "
                    "§5.2): keep SMT on for this index-lookup workload")]
        if f.mysql:
            out.append(Bound("innodb_read_io_threads", 4, min(64, max(4, self._logical(f))),
                             reason="random reads scale with logical CPUs (D21 §5.2)"))
        return out


RULE = SmtForRandomReads()
