"""CK009 PMEM regions without a persistence domain (no ADR / eADR reported).

Anti-pattern: database files on a PMEM region whose platform does not report a persistence
domain. Stores to PMEM are durable only once they reach the domain the platform protects on
power loss: the memory controller's write queues with ADR (then software must flush the CPU
caches, as the kernels' DAX and PMDK do), or the CPU caches too with eADR. A region whose
``persistence_domain`` is empty or unknown (virtual NVDIMMs without a declared domain, firmware
that does not advertise ADR) gives no such promise: a power loss can drop writes the database
was told were durable. (memmap= regions are DRAM: CK003.)

Recommendation: only put data on regions that report ``memory_controller`` (ADR) or
``cpu_cache`` (eADR); for QEMU's NVDIMMs declare ``nvdimm-persistence=mem-ctrl`` only when the
backing file really is durable.

Sources: Linux kernel Documentation/ABI (nd region persistence_domain), libnvdimm
documentation; SNIA NVM Programming Model v1.2 (persistence domain); D21 §2.1 (H1-H4:
ADR flushes the write pending queues); QEMU docs/nvdimm (nvdimm-persistence).
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.checks.pmem_inventory import namespace_of, region_of
from pmem_advisor.rules.model import Finding

PROTECTED = ("memory_controller", "cpu_cache")


class PersistenceDomain(Check):
    id = "CK009"
    title = "PMEM regions without a persistence domain (no ADR/eADR)"
    source = "kernel ABI nd region persistence_domain; SNIA NVM Programming Model; QEMU nvdimm"
    insights = ("H4",)

    def run(self, inp: CheckInput) -> list[Finding]:
        prof = inp.facts.profile
        out = []
        used = {}
        for p in inp.facts.placed:
            region = region_of(prof, namespace_of(prof, p.device))
            if region is not None:
                used.setdefault(region.get("name"), []).append(p)
        for r in (prof.get("pmem") or {}).get("regions") or []:
            domain = r.get("persistence_domain")
            if r.get("provider") == "e820" or domain in PROTECTED or r.get("type") != "pmem":
                continue
            paths = used.get(r.get("name"), [])
            what = f"region {r.get('name')} reports persistence domain {domain or 'none'!r}"
            if paths:
                dirs = ", ".join(sorted({f"{p.role} {p.path}" for p in paths}))
                out.append(self.risk(
                    inp, f"region:{r.get('name')}", f"{what}, and it holds the {dirs}: the "
                    "platform does not promise that flushed writes survive a power loss",
                    "move the data to a region with ADR (memory_controller) or eADR (cpu_cache)"
                    ", or fix the platform/VM configuration"))
            else:
                out.append(self.finding(
                    "warn", f"region:{r.get('name')}", f"{what}: writes to it may not survive a "
                    "power loss; do not put database files there",
                    "enable ADR in the firmware, or declare the VM's NVDIMM persistence only "
                    "when its backing store is durable"))
        return out


CHECK = PersistenceDomain()
