"""PM001 Memory mode is not worth it for a database.

Anti-pattern: Optane configured in Memory mode (or Mixed mode) on a database host: PMEM
becomes volatile main memory behind a direct-mapped DRAM "L4" cache (H5) and persists nothing.
K23 measured the same or up to 5% slower TPC-H for most queries, up to 10% faster only for
very large sequential working sets, and TPC-C ~= DRAM-only (K23 §4.1, §4.4, §7.1 i).

Recommendation: provision PMEM in App Direct mode and put the database files on an fsdax
namespace with a DAX filesystem.
"""

from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, OsStep, Rule


class MemoryModeNotWorthIt(Rule):
    id = "PM001"
    title = "PMEM in Memory mode does not pay off for databases"
    insights = ("K23-1", "H5")
    paper = "K23 §4.1, §4.4, §7.1 (i); D21 §2.1"
    priority = PRIORITY_PLACEMENT
    engines = ()  # a host check

    def condition(self, f):
        return f.pmem_mode in ("memory", "mixed")

    def effects(self, f):
        part = "all of" if f.pmem_mode == "memory" else "part of"
        mounted = sorted({str(m.get("mountpoint")) for m in f.pmem_mounts})
        wipe = ("re-provisioning with `ipmctl create -goal PersistentMemoryType=AppDirect` "
                "DESTROYS every namespace and all data on these DIMMs")
        out = [Note("warn", "pmem.mode",
                    f"{part} the PMEM is in Memory mode: volatile, behind a DRAM cache; K23 saw "
                    "TPC-H the same or up to 5% slower and TPC-C equal to DRAM-only",
                    "provision App Direct and put the database files on an fsdax namespace"
                    + (f"; {wipe}, including the mounted {', '.join(mounted)}: back them up, "
                       "unmount, then re-provision (not offered as a step while mounted)"
                       if mounted else ""))]
        if not mounted:  # nothing mounted would be lost: offer it, marked destructive
            out.append(OsStep(
                "ipmctl create -goal PersistentMemoryType=AppDirect  # then reboot; "
                "ndctl create-namespace --mode=fsdax",
                f"DESTRUCTIVE: {wipe}; App Direct makes PMEM persistent storage the database "
                "can use (K23-1)", key="pmem-mode", destructive=True))
        return out


RULE = MemoryModeNotWorthIt()
