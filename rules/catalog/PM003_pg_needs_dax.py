"""PM003 PostgreSQL on PMEM needs DAX.

Anti-pattern: a PostgreSQL data or WAL directory on a PMEM block device mounted without DAX.
With the page cache on, every read and write is copied by the CPU (no DMA, H6) and PostgreSQL
"performs significantly worse" (K23 §5.3.6, §5.1, Fig. 10); read()/write() through kernel
buffers cost ~10%, up to 24%, of query time (P-SE §IV, §VI). MySQL no-dax is on par.

Recommendation: mount the filesystem with ``-o dax=always`` (block size == page size).
"""

from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, OsStep, Rule


class PgNeedsDax(Rule):
    id = "PM003"
    title = "PostgreSQL on PMEM needs a DAX mount"
    insights = ("K23-3", "H6", "P-SE-1")
    paper = "K23 §5.1, §5.3.6, Fig. 10; P-SE §IV, §VI"
    priority = PRIORITY_PLACEMENT
    engines = ("postgres",)

    def _bad(self, f):
        seen, out = set(), []
        for p in f.placed:
            if p.real_pmem and not p.dax_on and p.mountpoint not in seen:
                seen.add(p.mountpoint)
                out.append(p)
        return out

    def condition(self, f):
        return bool(self._bad(f))

    def effects(self, f):
        out = []
        for p in self._bad(f):
            sev = "warn" if p.dax == "inode" else "fail"
            state = ("dax=inode (only files flagged with chattr +x bypass the page cache)"
                     if p.dax == "inode" else "without DAX (page cache on)")
            out.append(Note(sev, f"{p.role}:{p.path}",
                            f"{p.role} directory on PMEM {p.device or ''} mounted {state}: "
                            "PostgreSQL performs significantly worse without DAX (K23 Fig. 10)",
                            f"mount {p.device or 'the device'} on {p.mountpoint} "
                            "with -o dax=always"))
            out.append(OsStep(f"umount {p.mountpoint} && mount -o dax=always "
                              f"{p.device or '<pmem device>'} {p.mountpoint}",
                              "DAX bypasses the page cache; PostgreSQL on PMEM needs it (K23-3)"))
        return out


RULE = PgNeedsDax()
