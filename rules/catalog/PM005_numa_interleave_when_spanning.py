"""PM005 When the server spans sockets, interleave over every socket's PMEM.

Anti-pattern: binding a server that needs more CPUs (``--cpus``, or more ``--clients``) than
one socket has to one node, or
leaving a multi-socket volatile-PMEM (Memory mode, kmem, CXL) box on first-touch allocation.
A21 §4.1-4.2: bandwidth, not NUMA distance, limits a full DBMS; spreading allocations over
both sockets' PMEM kept TPC-C at DDR speed to 88 clients. D21 insight #5/#10: stripe data
over all sockets and avoid contended cross-socket writes.

Recommendation: ``numactl --interleave=all``; this beats PM004's pinning (higher priority).
"""

from pmem_advisor.probes.reading import format_cpulist
from pmem_advisor.rules.catalog.PM004_numa_pin_to_pmem_node import server_command
from pmem_advisor.rules.model import PRIORITY_PLACEMENT, OsStep, Rule


class NumaInterleaveWhenSpanning(Rule):
    id = "PM005"
    title = "Interleave memory over all sockets when the server spans them"
    insights = ("A21-1", "D21-3")
    paper = "A21 §4.1, §4.2; D21 insights #5, #10"
    priority = PRIORITY_PLACEMENT

    def condition(self, f):
        if len(f.cpu_nodes) < 2:
            return False
        node = f.pmem_node if f.pmem_node is not None else f.cpu_nodes[0].get("node")
        spans = f.needs_more_than_node(node)
        volatile_pmem = f.pmem_mode in ("memory", "mixed") or any(
            n.get("kind") in ("cxl", "pmem-kmem") for n in f.numa)
        return spans and (len(f.pmem_nodes) > 1 or volatile_pmem)

    def effects(self, f):
        # only nodes with CPUs: a CPU-less node (CXL, kmem PMEM) is far slower memory and
        # would get 1/n of every page; the user adds it deliberately, never by default
        chosen = f.numa if f.interleave_cpuless else f.cpu_nodes
        nodes = format_cpulist(sorted(n.get("node") for n in chosen))
        cpuless = [str(n.get("node")) for n in f.numa if n not in f.cpu_nodes]
        if not cpuless:
            left_out = ""
        elif f.interleave_cpuless:
            left_out = (f"; CPU-less node(s) {', '.join(cpuless)} (CXL/kmem PMEM) included as "
                        "asked (--interleave-cpuless): they are slower memory")
        else:
            left_out = (f"; CPU-less node(s) {', '.join(cpuless)} (CXL/kmem PMEM) left out: "
                        "--interleave-cpuless adds them")
        return [OsStep(f"numactl --interleave={nodes} {server_command(f)}",
                       "the server needs more CPUs than one socket has: spread memory over "
                       f"every socket, bandwidth is the limit (A21 §4.1){left_out}",
                       key="numa-policy"),
                OsStep(f"systemd drop-in: [Service] NUMAPolicy=interleave NUMAMask={nodes}",
                       "the same policy for a systemd-managed server",
                       key="numa-policy-systemd")]


RULE = NumaInterleaveWhenSpanning()
