"""PM009 CXL-attached memory: the successor of Optane, treated with the same rules.

Anti-pattern: CXL memory (a CPU-less NUMA node or a dax device) left unnoticed. Optane is
discontinued (K23 §7.2); CXL memory has the same traits the papers measured: a far, slower
tier whose bandwidth, not latency, limits a DBMS when it is volatile capacity (A21 §4.1).

Recommendation: measure its bandwidth (``pmem-advisor probe --bandwidth``) and, for a server
spanning nodes, interleave allocations (PM005).
"""

from pmem_advisor.probes.reading import format_cpulist
from pmem_advisor.probes.summary import human_bytes
from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule


class CxlMemory(Rule):
    id = "PM009"
    title = "CXL memory found: measure it and place allocations deliberately"
    insights = ("A21-1",)
    paper = "K23 §7.2; A21 §4.1"
    priority = PRIORITY_SPEED
    engines = ()

    def _nodes(self, f):
        return [n for n in f.numa if n.get("kind") == "cxl"]

    def condition(self, f):
        cxl = f.profile.get("cxl") or {}
        return bool(self._nodes(f) or cxl.get("memdevs"))

    def effects(self, f):
        cxl = f.profile.get("cxl") or {}
        devs = cxl.get("memdevs") or []
        # in bytes, printed with a unit: `>> 30` said "0 GiB persistent" of a 256 MiB device
        ram = human_bytes(sum(int(d.get("ram_bytes") or 0) for d in devs))
        pm = human_bytes(sum(int(d.get("pmem_bytes") or 0) for d in devs))
        nodes = ", ".join(str(n.get("node")) for n in self._nodes(f)) or "none onlined"
        # `all` would include the CPU-less CXL node(s) (slower memory, 1/n of every page):
        # only the nodes with CPUs unless the user asked for them (as PM005 does)
        chosen = f.numa if f.interleave_cpuless else f.cpu_nodes
        spread = format_cpulist(sorted(n.get("node") for n in chosen)) if chosen else "all"
        which = ("every node, the CXL one(s) included as asked (--interleave-cpuless)"
                 if f.interleave_cpuless else
                 "the nodes with CPUs; --interleave-cpuless adds the CXL node(s)")
        return [Note("info", "cxl",
                     f"CXL memory: {len(devs)} memdev(s), {ram} volatile, {pm} persistent; "
                     f"CPU-less node(s): {nodes}",
                     "measure it with `pmem-advisor probe --bandwidth`; a server spanning "
                     f"nodes should interleave (numactl --interleave={spread}: {which})")]


RULE = CxlMemory()
