"""PM089 In-memory column stores on two sockets: one socket for Hyrise; replicate small tables.

Anti-pattern: a NUMA-unaware column store spread over both sockets, or a NUMA-aware one that
reads small dimension tables across the interconnect. D21 §6.1 ran Hyrise on a single socket
because it "does not support NUMA-aware allocation of intermediates and data structures".
D21 §6.2 striped the fact table over both sockets' PMEM, replicated the small dimension tables
on each socket "to avoid far random access", and pinned threads: Q2.1 on PMEM went from
25.1 s (18 threads) to 12.3 s (both sockets), 9.4 s (NUMA-local) and 8.6 s (pinned to
physical cores); DRAM 15.2/9.2/5.2/5.2 s (Table 1). Best practices 3-4: pin threads within
their NUMA region; place data on all sockets, access it only from near.

Recommendation: Hyrise: one socket (``numactl --cpunodebind=N --membind=N``). NUMA-aware
engines: stripe the fact table, replicate dimension tables per socket, pin threads to
physical cores.
"""

from pmem_advisor.rules.catalog.PM080_advice_conditions_differ import (
    conditions_sentence,
    far_memory,
)
from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, OsStep, Rule

TABLE1 = ("D21 Table 1, SSB Q2.1 on PMEM: 25.1 s (18 threads) -> 12.3 s (both sockets) -> "
          "9.4 s (NUMA-local) -> 8.6 s (pinned); DRAM 15.2 -> 9.2 -> 5.2 -> 5.2 s")


class ColumnstoreNumaReplicateDimensions(Rule):
    id = "PM089"
    title = "Column stores on two sockets: Hyrise on one; replicate dimension tables"
    insights = ("D21-3", "D21-1")
    paper = "D21 §6.1, §6.2, Table 1, best practices 3-4"
    priority = PRIORITY_PLACEMENT
    engines = ("hyrise",)

    def condition(self, f):
        return far_memory(f) and len(f.cpu_nodes) >= 2

    def effects(self, f):
        node = f.pmem_node if f.pmem_node is not None else f.cpu_nodes[0].get("node")
        caveat = conditions_sentence(f)
        return [
            Note("info", "numa",
                 "Hyrise does not allocate NUMA-aware, so D21 ran it on one socket (§6.1); "
                 "a NUMA-aware engine gains from both sockets when the small dimension tables "
                 f"are replicated per socket and the fact table striped: {TABLE1}"
                 + (f" ({caveat})" if caveat else ""),
                 "Hyrise: one socket; NUMA-aware engines: replicate dimension tables per "
                 "socket, stripe the fact table, pin threads to physical cores"),
            OsStep(f"numactl --cpunodebind={node} --membind={node} hyriseServer",
                   f"Hyrise on one socket (node {node}), as D21 ran it (§6.1): it cannot "
                   "keep intermediates near their threads", key="numa-policy"),
        ]


RULE = ColumnstoreNumaReplicateDimensions()
