"""PM007 Interleave each socket's PMEM DIMMs into one region.

Anti-pattern: App Direct "not interleaved": one region per DIMM. A socket's DIMMs interleave
in 4 KB stripes; with 6 DIMMs anything over 20 KB touches every DIMM (H2, D21 §2.1, Fig. 2);
one DIMM gives one DIMM's bandwidth. K23 Table 7: interleaving +8-22% tpmC and, with a larger
max_wal_size, more than 2x at 128 clients.

Recommendation: ``ipmctl create -goal PersistentMemoryType=AppDirect`` (interleaved).
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule


class PmemNotInterleaved(Rule):
    id = "PM007"
    title = "PMEM regions should interleave all DIMMs of a socket"
    insights = ("H2", "K23-6")
    paper = "D21 §2.1, Fig. 2; K23 §5.3.7, Table 7"
    priority = PRIORITY_SPEED
    engines = ()

    def _sockets(self, f):
        per: dict = {}
        for r in f.pmem.get("regions") or []:
            if r.get("type", "pmem") != "pmem":
                continue
            per.setdefault(r.get("numa_node"), []).append(r)
        return {n: rs for n, rs in per.items()
                if len(rs) > 1 and all((r.get("interleave_ways") or 1) == 1 for r in rs)}

    def condition(self, f):
        return bool(self._sockets(f))

    def effects(self, f):
        return [Note("warn", f"numa-node:{n}",
                     f"{len(rs)} single-DIMM regions on node {n} "
                     f"({', '.join(str(r.get('name')) for r in rs)}): each gives one DIMM's "
                     "bandwidth; interleaved regions stripe 4 KB over all DIMMs",
                     "back up the data on these namespaces first: re-provisioning with "
                     "`ipmctl create -goal PersistentMemoryType=AppDirect` (interleaved) "
                     "DESTROYS every namespace on the DIMMs; then reboot and recreate the "
                     "namespaces")
                for n, rs in sorted(self._sockets(f).items(), key=lambda kv: str(kv[0]))]


RULE = PmemNotInterleaved()
