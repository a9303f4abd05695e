"""CK013 PMEM namespaces not aligned to 2 MiB.

Anti-pattern: an fsdax or devdax namespace created with a 4 KiB alignment. Then the kernel
can only map it with 4 KiB pages: 512 times more page faults and TLB entries than the 2 MiB
mappings ndctl creates by default. D21 measured that fsdax's first-touch page faults alone
cost 5-10% bandwidth against devdax (a 2 MiB fault takes ~0.5 ms) and that pre-faulted
mappings close the gap (D21 §2.3).

Recommendation: namespaces with ``--align=2M`` (ndctl's default for fsdax/devdax), a
filesystem that allocates in 2 MiB extents (``mkfs.xfs -d su=2m,sw=1``, ``mkfs.ext4 -E
stride=512``), and pre-faulting (PostgreSQL ``huge_pages``/InnoDB large pages for DRAM, a
warm-up for PMEM files).

Sources: D21 §2.3; ndctl-create-namespace(1) --align; pmem.io "Using Persistent Memory
Devices with the Linux Device Mapper" (2 MiB alignment).
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding

HUGE = 2 << 20


class NamespaceAlignment(Check):
    id = "CK013"
    title = "PMEM namespaces aligned to 2 MiB for huge page mappings"
    source = "D21 §2.3; ndctl-create-namespace(1) --align"
    insights = ("D21-1",)

    def run(self, inp: CheckInput) -> list[Finding]:
        out = []
        for ns in (inp.facts.profile.get("pmem") or {}).get("namespaces") or []:
            align = ns.get("align")
            if ns.get("mode") not in ("fsdax", "devdax") or not isinstance(align, int):
                continue
            if align % HUGE == 0:
                continue
            out.append(self.finding(
                "warn", f"namespace:{ns.get('name')}", f"{ns.get('name')} ({ns.get('mode')}) is "
                f"aligned to {align // 1024} KiB: only 4 KiB page mappings, so 512x the page "
                "faults of 2 MiB mappings (D21 §2.3: fsdax faults cost 5-10% bandwidth)",
                f"re-create it with ndctl create-namespace -f -e {ns.get('name')} "
                f"--mode={ns.get('mode')} --align=2M (DESTROYS its data: copy it off first)"))
        return out


CHECK = NamespaceAlignment()
