"""CK003 Database files on memory that forgets: tmpfs and memmap=-emulated PMEM.

Anti-pattern: a data or WAL directory on tmpfs (``/dev/shm``) or on a ``/dev/pmemN`` that the
kernel built from ordinary DRAM with ``memmap=`` (e820 type 12, "legacy" PMEM). Both look like
fast persistent storage (the emulated one even mounts with DAX) and both lose every byte at
power off or reboot. P-SE emulated PMEM this way on purpose, for measurements only (P-SE §V);
the advisor lets tmpfs stand in for PMEM in test runs, and says so (PM010).

Recommendation: real storage for anything that must survive a reboot: an fsdax namespace on
NVDIMMs with a persistence domain, or an SSD. Accepted only with ``--allow-unsafe`` (a test
or emulation host), then reported as a warning.

Sources: Linux kernel admin guide, kernel-parameters ``memmap=nn[KMG]!ss[KMG]``; pmem.io
"How to emulate Persistent Memory"; P-SE §V; tmpfs(5).
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding


def memmap_emulated(profile: dict, path) -> bool:
    """Whether a placed path is on memmap= PMEM (legacy e820 region), not real NVDIMMs."""
    if path.medium == "tmpfs" or path.fstype == "tmpfs":
        return False
    pmem = profile.get("pmem") or {}
    for entry in profile.get("paths") or []:
        if entry.get("path") == path.path and any("memmap" in n for n in entry.get("notes") or []):
            return True
    if path.real_pmem and path.emulated_pmem:
        return True
    return bool(pmem.get("legacy_memmap")) and path.real_pmem and all(
        r.get("provider") == "e820" for r in pmem.get("regions") or [{"provider": "e820"}])


class VolatileMedium(Check):
    id = "CK003"
    title = "Data or WAL on tmpfs or memmap= emulated PMEM is lost at reboot"
    source = "kernel-parameters memmap=; pmem.io emulation guide; P-SE §V; tmpfs(5)"
    insights = ("P-SE-1",)
    replaces = ("PM010",)

    def run(self, inp: CheckInput) -> list[Finding]:
        out = []
        seen = set()
        for p in inp.facts.placed:
            if p.path in seen and p.role == "wal":
                continue  # the WAL inside the data directory: one finding
            seen.add(p.path)
            if memmap_emulated(inp.facts.profile, p):
                what = (f"memmap= emulated PMEM ({p.device or 'pmem'} is DRAM the kernel set "
                        "aside, e820 type 12), not NVDIMMs")
            elif p.emulated_pmem or p.medium == "tmpfs":
                what = "tmpfs (DRAM); here it stands in for PMEM"
            else:
                continue
            out.append(self.risk(
                inp, f"{p.role}:{p.path}",
                f"the {p.role} directory {p.path} is on {what}: every byte is lost at power "
                "off or reboot", "put it on durable storage (an fsdax namespace on real PMEM, "
                "or an SSD)"))
        pmem = inp.facts.profile.get("pmem") or {}
        emulated = [r for r in pmem.get("regions") or [] if r.get("provider") == "e820"]
        if (emulated or pmem.get("legacy_memmap")) and not out:
            names = ", ".join(r.get("name", "?") for r in emulated) or "the pmem devices"
            out.append(self.finding(
                "warn", "pmem.memmap", f"{names}: memmap= emulated PMEM (DRAM the kernel set "
                "aside, e820 type 12), not NVDIMMs: fast, but empty after every power off",
                "use it for tests only; never for data that must survive a reboot"))
        return out

    def covers(self, other: Finding, mine: list[Finding]) -> bool:
        # PM010 reports the WAL inside the data directory separately; one report per path
        paths = {m.subject.partition(":")[2] for m in mine}
        return other.rule in self.replaces and other.subject.partition(":")[2] in paths


CHECK = VolatileMedium()
