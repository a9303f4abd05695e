"""PM086 openGauss MOT on PMEM memory: spread allocations over both sockets' PMEM.

Anti-pattern: MOT allocating all its PMEM-backed memory from one socket. A21 §4.1, Fig. 3:
with only socket 0's PMEM, GaussDB TPC-C stayed close to DDR up to 44 threads (one socket)
and the second socket added nothing; with the PMEM of both sockets (even threads allocating
from PMEM0, odd from PMEM1) it stayed near DDR "all the way to 88 clients": bandwidth, not
NUMA distance, is the limit. A21 §4.2: the second PMEM module helped from 11 threads on, as
soon as inserts (NewOrder) or rows and indexes together hit the bandwidth barrier. This is
A21-1; for servers that fit one socket, K23-4 pinning still applies (PM004).

Recommendation: when MOT needs more than one socket's threads, interleave its memory over
every socket (``numactl --interleave``), the CPU-less kmem/CXL nodes included only when they
are the PMEM MOT is meant to use.
"""

from shlex import quote

from pmem_advisor.probes.reading import format_cpulist
from pmem_advisor.rules.catalog.PM080_advice_conditions_differ import (
    conditions_sentence,
    far_memory,
    kmem_nodes,
)
from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, OsStep, Rule


class MotSpreadOverSockets(Rule):
    id = "PM086"
    title = "openGauss MOT: spread allocations over both sockets' PMEM"
    insights = ("A21-1", "K23-4")
    paper = "A21 §4.1, Fig. 3, §4.2, Fig. 4"
    priority = PRIORITY_PLACEMENT
    engines = ("opengauss_mot",)

    def condition(self, f):
        return far_memory(f) and len(f.cpu_nodes) >= 2

    def effects(self, f):
        per_socket = len(f.node_cpus(f.cpu_nodes[0].get("node"))) or f.cpus
        far = kmem_nodes(f) + [n.get("node") for n in f.numa if n.get("kind") == "cxl"]
        nodes = sorted({n.get("node") for n in f.cpu_nodes} | set(far))
        spread = format_cpulist(nodes)
        data = quote(f.data.path) if f.data is not None else "<data dir>"
        caveat = conditions_sentence(f)
        said = ("A21 §4.1: one socket's PMEM kept TPC-C near DDR only to 44 threads; both "
                "sockets' PMEM kept it there to 88 clients (bandwidth, not NUMA distance, "
                "limits); §4.2: the second module helped from 11 threads under inserts")
        if f.clients is not None and f.clients <= per_socket:
            return [Note("info", "numa",
                         f"{f.clients} clients fit one socket ({per_socket} CPUs): {said}; "
                         "spread only when the load outgrows a socket"
                         + (f" ({caveat})" if caveat else ""),
                         "pin to the socket that owns the PMEM (numactl --cpunodebind=N "
                         "--membind=N plus its kmem node)")]
        which = (f"every socket's DRAM and PMEM node(s) {', '.join(map(str, far))}" if far
                 else "every socket (online the PMEM as kmem nodes first, PM085, and add them)")
        return [Note("info", "numa", f"{said}" + (f" ({caveat})" if caveat else ""),
                     f"interleave over {which}"),
                OsStep(f"numactl --interleave={spread} gs_ctl start -D {data}",
                       f"spread MOT's memory over {which}: bandwidth is the limit "
                       "(A21 §4.1)", key="numa-policy")]


RULE = MotSpreadOverSockets()
