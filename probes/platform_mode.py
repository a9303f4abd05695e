"""Platform mode of Optane-style PMEM: ``none``, ``app_direct``, ``memory`` or ``mixed``.

With ipmctl we believe ipmctl (Volatile PMem > 0 means Memory mode; App Direct capacity
means App Direct; both means mixed; ``CurrentVolatileMode=2LM`` means Memory mode).

Without ipmctl the heuristic combines kernel signals:
  M1 NFIT DIMMs exist but no NFIT ``nd_pmem`` region does (or an ``nd_volatile`` region does);
  M2 a NUMA node has a ``memory_side_cache`` (HMAT: DRAM acts as a cache for the node);
  P  an ``nd_pmem`` region exists (App Direct; memmap= and CXL pmem count too).
Then P and (M1 or M2) -> mixed; M2, or M1 with no App Direct -> memory; P -> app_direct.
Limits: M1 alone cannot tell Memory mode from DIMMs whose goal was never applied (both show
no regions), so that case is reported as ``memory`` with a warning; M2 needs firmware with an
HMAT table and kernel >= 5.5; in mixed mode neither signal gives the Memory/App Direct split.
"""

from __future__ import annotations

import re

from pmem_advisor.probes.reading import ProbeContext

IOMEM = "/proc/iomem"


def read_iomem(ctx: ProbeContext) -> list[tuple[int, str]]:
    """(nesting depth, lower-case name) of each /proc/iomem entry; addresses are not needed."""
    text = ctx.text(IOMEM)
    if text is None:
        return []
    entries = []
    for line in text.splitlines():
        m = re.match(r"^(\s*)[0-9a-fA-F]+-[0-9a-fA-F]+\s*:\s*(.+?)\s*$", line)
        if m:
            entries.append((len(m.group(1)) // 2, m.group(2).lower()))
    if text.strip() and not entries:
        ctx.warn(f"{IOMEM}: malformed (no address ranges)")
    return entries


def iomem_signals(entries: list[tuple[int, str]]) -> dict:
    names = [name for _, name in entries]
    return {
        "persistent": sum(1 for n in names if n == "persistent memory"),
        "legacy": sum(1 for n in names if n == "persistent memory (legacy)"),
        "kmem": sum(1 for n in names if n == "system ram (kmem)"),
        "soft_reserved": sum(1 for n in names if n == "soft reserved"),
        "cxl_windows": sum(1 for n in names if n.startswith("cxl window")),
    }


def decide_mode(inv: dict, numa: list[dict], ipmctl: dict | None,
                iomem: dict, ctx: ProbeContext) -> tuple[str, list[str]]:
    """(mode, evidence lines)."""
    evidence: list[str] = []
    from_tool = _from_ipmctl(ipmctl, evidence) if ipmctl else None
    buses = {b["name"]: b.get("provider") for b in inv["buses"]}
    nfit_dimms = [d for d in inv["dimms"] if d.get("handle") is not None]
    pmem_regions = [r for r in inv["regions"] if r.get("type") == "pmem"]
    nfit_pmem = [r for r in pmem_regions
                 if buses.get(r.get("bus")) in (None, "ACPI.NFIT")]
    volatile = [r for r in inv["regions"] if r.get("type") == "volatile"]
    cached = [n["node"] for n in numa if n.get("memory_side_cache_bytes")]

    m1 = bool(nfit_dimms) and (not nfit_pmem or bool(volatile))
    if nfit_dimms and not nfit_pmem:
        evidence.append(f"{len(nfit_dimms)} NFIT PMem DIMMs but no App Direct region")
    if volatile:
        evidence.append(f"nd_volatile region(s): {', '.join(r['name'] for r in volatile)}")
    if cached:
        evidence.append(f"memory-side cache (HMAT) in front of node(s) {cached}")
    if pmem_regions:
        evidence.append(f"{len(pmem_regions)} App Direct (nd_pmem) region(s)")
    if iomem["legacy"]:
        evidence.append("/proc/iomem: 'Persistent Memory (legacy)' (e820 type 12, memmap=)")
    if iomem["persistent"]:
        evidence.append(f"/proc/iomem: {iomem['persistent']} 'Persistent Memory' range(s)")

    if from_tool == "memory" and nfit_pmem:  # ipmctl may miss the App Direct share
        return "mixed", evidence
    if from_tool:
        return from_tool, evidence
    memory_signal = m1 or bool(cached)
    if pmem_regions and memory_signal:
        return "mixed", evidence
    if memory_signal:
        if m1 and not cached and not volatile:
            ctx.warn("platform mode 'memory' inferred only from PMem DIMMs without regions; "
                     "unprovisioned DIMMs look the same (install ipmctl to confirm)")
        return "memory", evidence
    if pmem_regions or iomem["persistent"] or iomem["legacy"]:
        return "app_direct", evidence
    return "none", evidence


def _from_ipmctl(ipmctl: dict, evidence: list[str]) -> str | None:
    res = ipmctl.get("memory_resources")
    caps = ipmctl.get("capabilities") or {}
    volatile = appdirect = None
    if res:
        volatile = res.get("volatile_pmem_bytes")
        appdirect = res.get("appdirect_pmem_bytes")
        evidence.append(f"ipmctl: Volatile PMem {volatile} B, App Direct {appdirect} B, "
                        f"DDR cache {res.get('cache_ddr_bytes')} B")
    two_lm = caps.get("current_volatile_mode") == "2LM"
    if caps.get("current_volatile_mode"):
        evidence.append(f"ipmctl: CurrentVolatileMode={caps['current_volatile_mode']}")
    if volatile is None and not two_lm:
        return None
    in_memory = bool(volatile) or two_lm
    if in_memory and appdirect:
        return "mixed"
    if in_memory:
        return "memory"
    return "app_direct" if appdirect else None
