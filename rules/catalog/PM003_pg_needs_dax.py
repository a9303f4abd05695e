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
        # the cause and the fix come from check's CK011 (one source of truth): BTT/raw
        # namespaces and a block size != page size cannot be fixed by a remount
        from pmem_advisor.rules.checks.CK011_pmem_without_dax import cause_and_fix

        out = []
        for p in self._bad(f):
            sev = "warn" if p.dax == "inode" else "fail"
            what = (f"{p.role} directory on PMEM {p.device or ''} without DAX: PostgreSQL "
                    "performs significantly worse with the page cache in the path (K23 Fig. 10)")
            mount = {"dax": p.dax, "device": p.device or "the device",
                     "mountpoint": p.mountpoint, "block_size": p.block_size, "fstype": p.fstype}
            ns = {"mode": p.namespace_mode, "name": p.namespace or "<namespace>"} \
                if p.namespace_mode else None
            found = cause_and_fix(mount, ns, f.page_size)
            cause, fix = found if found else ("DAX is off", f"mount -o dax=always {p.device}")
            destructive = "DESTROY" in fix.upper()
            if destructive:
                fix = f"{fix}; not offered as a step while it holds data"
            out.append(Note(sev, f"{p.role}:{p.path}", f"{what}; the real cause: {cause}", fix))
            if not destructive and fix.startswith("umount "):
                out.append(OsStep(f"{fix}  # stop the server first",
                                  "DAX bypasses the page cache; PostgreSQL on PMEM needs it "
                                  "(K23-3)"))
        return out


RULE = PgNeedsDax()
