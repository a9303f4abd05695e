"""CK012 Memory mode with a DRAM cache outside 1:4 .. 1:16 of the PMEM it fronts.

Anti-pattern: Optane in Memory (2LM) or Mixed mode with too little DRAM in front of the
volatile PMEM: DRAM becomes a direct-mapped cache (H5) and a working set that misses it runs at
PMEM speed with extra cache-fill traffic; far too much DRAM wastes it. Intel's provisioning
guidance for Memory mode keeps DRAM:PMEM between 1:4 and 1:16 (1:4 to 1:8 preferred). PM001
already says Memory mode rarely pays for a database (K23 §4.1, §4.4); this is the sizing check
for hosts that keep it.

Recommendation: a ratio between 1:4 and 1:16 (add DRAM or provision part of the PMEM as App
Direct), or App Direct for the database (PM001).

Sources: Intel Optane PMem provisioning guide (Memory Mode DRAM:PMem ratio 1:4 to 1:16);
ipmctl show -memoryresources (DDR cache vs volatile PMem); K23 §4.1, §4.4; H5.
"""

from __future__ import annotations

import re

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.memory import gib
from pmem_advisor.rules.model import Finding

LOW, HIGH = 4, 16  # PMEM bytes per DRAM byte Intel's guidance allows


def cache_and_volatile(profile: dict) -> tuple[int | None, int | None]:
    """(DRAM cache bytes, volatile PMEM bytes) from ipmctl's evidence, else HMAT and MemTotal."""
    pmem = profile.get("pmem") or {}
    cache = volatile = None
    for line in pmem.get("mode_evidence") or []:
        m = re.search(r"Volatile PMem (\d+) B.*DDR cache (\d+) B", str(line))
        if m:
            volatile, cache = int(m.group(1)), int(m.group(2))
    if cache is None:
        hmat = [n.get("memory_side_cache_bytes") for n in profile.get("numa") or []]
        if any(isinstance(h, int) for h in hmat):
            cache = sum(h for h in hmat if isinstance(h, int))
    if volatile is None and pmem.get("mode") == "memory":
        volatile = int((profile.get("memory") or {}).get("total_bytes") or 0) or None
    return cache, volatile


class MemoryModeRatio(Check):
    id = "CK012"
    title = "Memory mode DRAM:PMEM ratio outside 1:4 .. 1:16"
    source = "Intel Optane PMem provisioning guide (Memory Mode ratio); K23 §4.1, §4.4; H5"
    insights = ("H5", "K23-1")

    def run(self, inp: CheckInput) -> list[Finding]:
        prof = inp.facts.profile
        if (prof.get("pmem") or {}).get("mode") not in ("memory", "mixed"):
            return []
        cache, volatile = cache_and_volatile(prof)
        if not cache or not volatile:
            return []
        ratio = volatile / cache
        if LOW <= ratio <= HIGH:
            return []
        if ratio > HIGH:
            why = ("too little DRAM: working sets beyond the cache run at PMEM speed plus "
                   "cache-fill traffic")
            fix = "add DRAM, or provision part of the PMEM as App Direct"
        else:
            why = "more DRAM than the cache needs: it could serve as plain memory"
            fix = "use App Direct (PM001) or 1LM with this much DRAM"
        return [self.finding(
            "warn", "pmem.mode", f"Memory mode with {gib(cache)} DRAM cache in front of "
            f"{gib(volatile)} volatile PMEM = 1:{ratio:.1f}, outside Intel's 1:{LOW} .. "
            f"1:{HIGH}: {why}", fix)]


CHECK = MemoryModeRatio()
