"""PM080 Advice-only engines: say where this machine differs from the paper's.

Anti-pattern: taking a paper's PMEM numbers for SQL Server, VoltDB, openGauss MOT or Hyrise
to a machine that is not the one measured. K23 ran SQL Server 2019 and VoltDB 11.4 on two
Cascade Lake sockets (48 cores) with 4x128 GB Optane in App Direct (K23 §3.1, Table 2); A21
ran MOT on two sockets of 22 cores, each with four interleaved 256 GB Optane DIMMs used as
volatile memory (A21 §3.1); D21 measured two sockets with six Optane DIMMs each and ran
Hyrise on one socket (D21 §3, §6.1). Optane is discontinued; CXL memory shares its far-tier
traits but has its own bandwidth (K23 §7.2).

Recommendation: read every PMEM finding for these engines with the differences this rule
lists (no PMEM at all, one socket, CXL instead of Optane, Memory mode, tmpfs emulation); on a
machine without PMEM the PMEM advice is left out, not adapted.

The helpers below are shared by the advice-only rules PM081-PM090.
"""

from __future__ import annotations

from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, Rule

ADVICE_ENGINES = ("sqlserver", "opengauss_mot", "hyrise", "voltdb")

# what each engine's paper measured on: (citation, hardware, how PMEM was used)
PAPER_SETUP = {
    "sqlserver": ("K23 §3.1, Table 2",
                  "2 sockets (Xeon Gold 6248R, 48 cores), 4x128 GB Optane PMEM in App Direct, "
                  "data on fsdax, log on a sector namespace, TPC-C 1000 warehouses"),
    "voltdb": ("K23 §3.1, Table 2",
               "2 sockets (Xeon Gold 6248R, 48 cores), 4x128 GB Optane PMEM in App Direct "
               "(fsdax), single-node VoltDB 11.4 TPC-C"),
    "opengauss_mot": ("A21 §3.1",
                      "2 sockets (Xeon Platinum 8260L, 22 cores each), 4 interleaved 256 GB "
                      "Optane DIMMs per socket used as volatile memory"),
    "hyrise": ("D21 §3, §6",
               "2 sockets with 6 Optane DIMMs each (devdax microbenchmarks, fsdax SSB); Hyrise "
               "ran SSB sf 50 on one socket"),
}


def kmem_nodes(f) -> list[int]:
    """NUMA nodes onlined from PMEM through kmem (daxctl system-ram)."""
    return [n.get("node") for n in f.numa if n.get("kind") == "pmem-kmem"]


def cxl_present(f) -> bool:
    cxl = f.profile.get("cxl") or {}
    return bool(cxl.get("memdevs")) or any(n.get("kind") == "cxl" for n in f.numa)


def has_pmem(f) -> bool:
    """Real Optane-class PMEM on this host: App Direct regions/namespaces, a PMEM mount, a kmem
    node, or Memory mode. CXL and tmpfs do not count."""
    pm = f.pmem
    return bool(pm.get("regions") or pm.get("namespaces") or kmem_nodes(f)
                or any(m.get("medium") == "pmem" for m in f.pmem_mounts)
                or f.pmem_mode in ("memory", "mixed", "app_direct"))


def far_memory(f) -> bool:
    """A slower memory tier the OS can allocate from: PMEM (any mode) or CXL memory."""
    return has_pmem(f) or cxl_present(f)


def namespace_mounts(f) -> dict[str, str]:
    """namespace name -> where its block device (or a partition of it) is mounted."""
    found = {}
    for ns in f.pmem.get("namespaces") or []:
        dev = ns.get("blockdev")
        if not dev:
            continue
        for m in f.profile.get("mounts") or []:
            base = str(m.get("device") or "").rsplit("/", 1)[-1]
            # the device itself or one of its partitions (pmem1p1), never pmem10 for pmem1
            if base == dev or (base.startswith(dev + "p") and base[len(dev) + 1:].isdigit()):
                found[str(ns.get("name"))] = str(m.get("mountpoint"))
    return found


def free_regions(f) -> list[dict]:
    """App Direct regions with unallocated capacity: a namespace can be created there without
    touching any data."""
    return [r for r in f.pmem.get("regions") or [] if int(r.get("available_bytes") or 0) > 0]


def gib(n: int) -> str:
    return f"{n / (1 << 30):.0f} GiB"


def differences(f) -> list[str]:
    """How this machine differs from the paper's setup for f.engine, each as a phrase."""
    out = []
    if not has_pmem(f):
        out.append("this machine has CXL memory, not Optane PMEM: the same far-tier traits "
                   "(K23 §7.2) but its own bandwidth, measure it with `pmem-advisor probe "
                   "--bandwidth`" if cxl_present(f) else
                   "this machine has no PMEM: the paper's PMEM findings do not apply here")
    if f.sockets < 2:
        out.append(f"{f.sockets} socket here where the paper had 2: its cross-socket results "
                   "(spreading or replicating over sockets) do not transfer")
    if f.pmem_mode in ("memory", "mixed"):
        out.append(f"the PMEM is in {f.pmem_mode} mode, not the App Direct the paper used")
    if f.emulated:
        out.append("tmpfs stands in for PMEM (DRAM speed, not durable)")
    return out


def conditions_sentence(f) -> str:
    """'conditions differ from <paper> (<setup>): a; b' or '' when they match."""
    diffs = differences(f)
    if not diffs:
        return ""
    cite, setup = PAPER_SETUP.get(f.engine, ("the paper", "its test machine"))
    return f"conditions differ from {cite} ({setup}): " + "; ".join(diffs)


class AdviceConditionsDiffer(Rule):
    id = "PM080"
    title = "Advice-only engines: where this machine differs from the paper's"
    insights = ("K23-15", "K23-12", "A21-1", "D21-3")
    paper = "K23 §3.1, Table 2, §7.2; A21 §3.1; D21 §3, §6.1"
    priority = PRIORITY_PLACEMENT
    engines = ADVICE_ENGINES

    def condition(self, f):
        return bool(differences(f))

    def effects(self, f):
        severity = "warn" if not far_memory(f) else "info"
        fix = ("no PMEM advice is given for this machine; the findings that remain are general"
               if not far_memory(f) else
               "weigh the paper's numbers with these differences; measure before deploying")
        return [Note(severity, "conditions", conditions_sentence(f), fix)]


RULE = AdviceConditionsDiffer()
