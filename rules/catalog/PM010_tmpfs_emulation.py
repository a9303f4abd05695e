"""PM010 tmpfs stands in for PMEM here, and it is not durable.

Anti-pattern: a database directory on tmpfs (``/dev/shm``) taken for persistent memory. The
advisor treats tmpfs as emulated PMEM so that the PMEM rules can be tried on any machine, as
P-SE did with ``memmap=`` emulation (P-SE §V), but its contents vanish at reboot and real PMEM
is slower, above all for writes.

Recommendation: use a real fsdax mount for anything that must survive a reboot.
"""

from pmem_advisor.rules.model import PRIORITY_SAFETY, Note, Rule


class TmpfsEmulation(Rule):
    id = "PM010"
    title = "tmpfs is emulated PMEM, not durable storage"
    insights = ("P-SE-1",)
    paper = "P-SE §V (memmap= emulation)"
    priority = PRIORITY_SAFETY

    def condition(self, f):
        return any(p.emulated_pmem for p in f.placed)

    def effects(self, f):
        return [Note("warn", f"{p.role}:{p.path}",
                     f"{p.path} is on tmpfs (DRAM): it stands in for PMEM here, but its "
                     "contents are lost at reboot and real PMEM is slower, above all for writes",
                     "use an fsdax mount (mount -o dax=always) for real data")
                for p in f.placed if p.emulated_pmem]


RULE = TmpfsEmulation()
