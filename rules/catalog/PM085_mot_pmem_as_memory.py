"""PM085 openGauss MOT: PMEM as extra volatile memory, through kmem (devdax -> system-ram).

Anti-pattern: an in-memory OLTP engine capped by DRAM while App Direct PMEM sits idle, or
PMEM given to it in Memory mode. A21 used PMEM as volatile capacity for MOT's rows and indexes
(memkind pools; failure atomicity out of scope; private OCC copies stay in DDR), and inside
GaussDB TPC-C ran at almost DDR speed with all tables and indexes on PMEM (A21 §3.2, §4.1,
Fig. 3). Memory mode "sounds good in theory" but was slow: it adds NUMA accesses no software
controls (A21 §2). openGauss plans MOT's memory as standard RAM/DRAM (openGauss MOT
preparation: memory) and names no PMEM allocator; a stock server reaches PMEM capacity through
the kernel: a devdax namespace onlined as a CPU-less NUMA node (kmem), which its allocator
then uses like any node.

Recommendation: devdax namespace (on free region capacity) -> ``daxctl reconfigure-device
--mode=system-ram``; converting a namespace that holds data destroys it, so that step is
marked DESTRUCTIVE and never offered while the namespace is mounted. CXL memory is onlined
the same way and gets the same advice, with the conditions-differ caveat (PM080).
"""

from shlex import quote

from pmem_advisor.rules.catalog.PM080_advice_conditions_differ import (
    conditions_sentence,
    cxl_present,
    far_memory,
    free_regions,
    gib,
    kmem_nodes,
    namespace_mounts,
)
from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, OsStep, Rule

A21 = ("A21 §4.1, Fig. 3: with all MOT tables and indexes on PMEM (used as volatile memory) "
       "GaussDB TPC-C ran at almost DDR speed up to 88 clients once both sockets' PMEM was used")


class MotPmemAsMemory(Rule):
    id = "PM085"
    title = "openGauss MOT: PMEM as volatile memory through kmem"
    insights = ("A21-1", "D21-4", "H5")
    paper = "A21 §2, §3.2, §4.1, Fig. 3"
    priority = PRIORITY_PLACEMENT
    engines = ("opengauss_mot",)

    def condition(self, f):
        return far_memory(f)

    def effects(self, f):
        caveat = conditions_sentence(f)
        tail = f" ({caveat})" if caveat else ""
        nodes = kmem_nodes(f)
        if nodes:
            return [Note("info", "pmem as memory",
                         f"PMEM is online as memory on node(s) {', '.join(map(str, nodes))}: "
                         f"{A21}{tail}", "spread MOT's allocations over it (see PM086)")]
        if f.pmem_mode in ("memory", "mixed"):
            return [Note("warn", "pmem.mode",
                         f"PMEM in {f.pmem_mode} mode: A21 found Memory mode slow for a DBMS, "
                         "it adds NUMA accesses no software controls (A21 §2); App Direct "
                         f"onlined with kmem keeps placement in your hands. {A21}{tail}",
                         "provision App Direct (PM001 says how and what it destroys), then "
                         "devdax + daxctl reconfigure-device --mode=system-ram")]
        if not f.pmem.get("namespaces") and not f.pmem.get("regions") and cxl_present(f):
            cxl = [str(n.get("node")) for n in f.numa if n.get("kind") == "cxl"]
            return [Note("info", "cxl memory",
                         f"CXL memory on node(s) {', '.join(cxl) or '(not onlined)'} can extend "
                         f"MOT's memory the way A21 used PMEM; {A21}{tail}",
                         "online it as system RAM (daxctl reconfigure-device "
                         "--mode=system-ram <daxX.Y>) and spread allocations (PM086)")]
        out = [Note("info", "pmem as memory",
                    "MOT keeps rows and indexes in memory, which openGauss plans as standard "
                    f"RAM/DRAM; A21 extended it to PMEM: {A21}{tail}",
                    "online PMEM as a CPU-less NUMA node (kmem); the OS steps say how")]
        out += self._steps(f)
        return out

    def _steps(self, f):
        ns = f.pmem.get("namespaces") or []
        devdax = [n for n in ns if n.get("mode") == "devdax" and n.get("chardev")]
        if devdax:
            dev = str(devdax[0].get("chardev"))
            return [OsStep(f"daxctl reconfigure-device --mode=system-ram {quote(dev)}",
                           f"DESTRUCTIVE: {dev} becomes volatile system RAM on a CPU-less NUMA "
                           "node; anything an application kept on the device is lost (A21 "
                           "§3.2: PMEM as volatile capacity)", key="mot-kmem", destructive=True)]
        free = free_regions(f)
        if free:
            r = free[0]
            return [OsStep(f"ndctl create-namespace --mode=devdax --region={r.get('name')} && "
                           "daxctl reconfigure-device --mode=system-ram <the new daxN.M>",
                           f"a devdax namespace on the {gib(int(r['available_bytes']))} free in "
                           f"{r.get('name')} (node {r.get('numa_node')}), onlined as memory; "
                           "touches no existing namespace", key="mot-kmem")]
        mounted = namespace_mounts(f)
        spare = [n for n in ns if n.get("name") not in mounted]
        if spare:
            name = str(spare[0].get("name"))
            return [OsStep(f"ndctl create-namespace -f -e {quote(name)} --mode=devdax && "
                           "daxctl reconfigure-device --mode=system-ram <its daxN.M>",
                           f"DESTRUCTIVE: re-creating {name} as devdax DESTROYS all data on it "
                           "(back it up first); it is not mounted", key="mot-kmem",
                           destructive=True)]
        where = ", ".join(f"{k} at {v}" for k, v in sorted(mounted.items()))
        return [Note("info", "pmem as memory",
                     "to use PMEM as memory the way A21 §3.2 did, a namespace must become "
                     "devdax, but every PMEM namespace is mounted as a filesystem "
                     f"({where}) and no region has free capacity: turning one into memory "
                     "DESTROYS its data; not offered as a step",
                     "back up, unmount, then `ndctl create-namespace -f -e <namespace> "
                     "--mode=devdax` and `daxctl reconfigure-device --mode=system-ram`")]


RULE = MotPmemAsMemory()
