"""PM088 Hyrise and other in-memory column stores: hash tables and intermediates in DRAM.

Anti-pattern: PMEM (or CXL memory) as a drop-in replacement for DRAM under an in-memory
column store. D21 §6.1: Hyrise running SSB sf 50 with all tables and intermediates in PMEM
was 5.3x slower than in DRAM on average (7.7x for Q2.3, 2.5x for Q3.1); hash joins and
aggregates took over 90% of the time, random accesses PMEM serves poorly. D21 §6.2: a
handcrafted SSB with a PMEM-optimised hash index (Dash) was 1.66x slower than DRAM on average;
Q2.1 on an NVMe SSD with the hash indexes and intermediates in DRAM took 22.8 s, on PMEM 8.6 s:
PMEM moves the bottleneck from the scan to memory-bound operators.

Recommendation: keep hash tables and intermediates (the whole Hyrise process, which cannot
split its allocations) in DRAM; PMEM pays for the scanned base data only in engines that
place it there deliberately. When PMEM or CXL memory is onlined as CPU-less nodes, bind the
server's memory to the DRAM nodes.
"""

from pmem_advisor.probes.reading import format_cpulist
from pmem_advisor.rules.catalog.PM080_advice_conditions_differ import (
    conditions_sentence,
    far_memory,
    kmem_nodes,
)
from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, OsStep, Rule

SAID = ("D21 §6.1: Hyrise with everything in PMEM ran SSB 5.3x slower than DRAM on average "
        "(up to 7.7x, Q2.3), hash joins/aggregates taking over 90% of the time; §6.2: with "
        "hash indexes and intermediates in DRAM even an NVMe SSD did Q2.1 in 22.8 s against "
        "8.6 s on PMEM with a PMEM-optimised hash index")


class ColumnstoreHashTablesInDram(Rule):
    id = "PM088"
    title = "In-memory column stores: hash tables and intermediates in DRAM"
    insights = ("D21-2", "D21-4")
    paper = "D21 §6.1, §6.2, Fig. 14, Table 1"
    priority = PRIORITY_PLACEMENT
    engines = ("hyrise",)

    def condition(self, f):
        return far_memory(f)

    def effects(self, f):
        caveat = conditions_sentence(f)
        far = kmem_nodes(f) + [n.get("node") for n in f.numa if n.get("kind") == "cxl"]
        out = [Note("warn" if far or f.pmem_mode in ("memory", "mixed") else "info",
                    "memory placement", SAID + (f" ({caveat})" if caveat else ""),
                    "keep hash tables and intermediates in DRAM: run Hyrise from DRAM "
                    "nodes only; give PMEM only to base data an engine places there itself")]
        if far:
            dram = format_cpulist(sorted(n.get("node") for n in f.cpu_nodes))
            out.append(OsStep(f"numactl --membind={dram} hyriseServer",
                              f"the CPU-less node(s) {', '.join(map(str, far))} are PMEM/CXL "
                              "memory; Hyrise cannot keep its hash tables off them by itself "
                              "(D21 §6.1)", key="numa-policy"))
        if f.pmem_mode in ("memory", "mixed"):
            out.append(Note("warn", "pmem.mode",
                            "Memory mode hides the PMEM behind a DRAM cache: every allocation, "
                            "hash tables included, can land on PMEM; K23 saw Memory mode the "
                            "same or up to 5% slower for most TPC-H queries (K23 §4.1)",
                            "App Direct, with PMEM onlined as separate nodes if at all"))
        return out


RULE = ColumnstoreHashTablesInDram()
