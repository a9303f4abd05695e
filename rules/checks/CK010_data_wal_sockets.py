"""CK010 Data and WAL on PMEM of different sockets.

Anti-pattern: the data directory on one socket's PMEM and the WAL/redo on another's. The
server can be pinned near only one of them (PM004), so every write to the other crosses the
socket link: far PMEM writes reach about 7 instead of 12.5 GB/s and contend with the near
socket's traffic, far reads are up to 5x slower on first touch (D21 §3.4, §4.4, insights #3,
#4, #8-#10). K23 ran every database on one socket (K23 §3.1).

Recommendation: data and WAL on the same socket's PMEM (one namespace each per socket is
enough), the server pinned there; a server that needs both sockets' CPUs interleaves (PM005).

Sources: D21 §3.4, §4.4, insights #3, #4, #8, #10 (best practice: near access); K23 §3.1.
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding


class DataWalSockets(Check):
    id = "CK010"
    title = "Data and WAL on different sockets' PMEM"
    source = "D21 §3.4, §4.4, insights #3, #4, #8, #10; K23 §3.1"
    insights = ("D21-3", "K23-4")

    def run(self, inp: CheckInput) -> list[Finding]:
        d, w = inp.facts.data, inp.facts.wal
        if d is None or w is None or not (d.is_pmem and w.is_pmem):
            return []
        if d.numa_node is None or w.numa_node is None or d.numa_node == w.numa_node:
            return []
        return [self.finding(
            "warn", "placement", f"data {d.path} is on node {d.numa_node}'s PMEM, the WAL "
            f"{w.path} on node {w.numa_node}'s: pinned near one, the server writes the other "
            "across sockets (far PMEM writes ~7 vs 12.5 GB/s, D21 §4.4)",
            f"put the WAL on node {d.numa_node}'s PMEM next to the data, and pin the server "
            f"to node {d.numa_node}")]


CHECK = DataWalSockets()
