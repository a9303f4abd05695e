"""CK011 PMEM mounted without DAX, with the real cause and the fix that works.

Anti-pattern: a filesystem on PMEM that runs through the page cache. The fix depends on why:
a sector (BTT) namespace cannot do DAX at all (BTT remaps blocks for sector atomicity), nor can
a raw namespace (no struct pages for the pmem); a filesystem whose block size is not the page
size refuses DAX (PM006 covers the case where DAX was asked for); only an fsdax namespace with
a page-sized block filesystem just needs ``-o dax=always``. Telling a user to remount with
``-o dax=always`` on BTT or raw cannot work. PostgreSQL "performs significantly worse" without
DAX (K23 §5.3.6, Fig. 10, PM003); MySQL without DAX is on par (K23 §5.1).

Recommendation: by cause: ``ndctl create-namespace -f -e <ns> --mode=fsdax`` (re-creates the
namespace: DESTROYS its data, copy it off first) for sector/raw; ``mkfs.ext4 -b 4096`` /
``mkfs.xfs -b size=4096`` (DESTROYS the filesystem) for the block size; ``umount`` and
``mount -o dax=always`` for an fsdax namespace.

Sources: Linux Documentation/filesystems/dax.rst (block size == page size, dax=always|inode|
never), Documentation/driver-api/nvdimm/btt.rst (BTT has no DAX), ndctl-create-namespace(1);
K23 §5.1, §5.3.6, Fig. 10; H4.
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.checks.pmem_inventory import mount_namespace, paths_on_mount
from pmem_advisor.rules.model import Finding

DESTROYS = "DESTROYS the data on it: copy it off first"


def cause_and_fix(mount: dict, ns: dict | None, page_size: int) -> tuple[str, str] | None:
    """Why DAX is off on a PMEM mount and what fixes it, or None when DAX is on."""
    dax = mount.get("dax")
    mode = (ns or {}).get("mode")
    dev, mp = mount.get("device"), mount.get("mountpoint")
    name = (ns or {}).get("name", "<namespace>")
    if mode == "sector":
        return (f"{dev} is a sector (BTT) namespace: BTT cannot do DAX, "
                "`mount -o dax` cannot help",
                f"ndctl create-namespace -f -e {name} --mode=fsdax ({DESTROYS}), then mkfs "
                f"-b {page_size} and mount -o dax=always")
    if mode == "raw":
        state = "DAX was asked for but is off" if dax in ("always", "inode", True) else \
            "no DAX"
        return (f"{dev} is a raw namespace (no struct pages for the PMEM): {state}",
                f"ndctl create-namespace -f -e {name} --mode=fsdax ({DESTROYS})")
    bs = mount.get("block_size")
    if dax in ("always", "inode", True) and bs and int(bs) != page_size:
        return None  # DAX asked for on the wrong block size: PM006 says so and how to fix it
    if dax in ("always", True):
        return None
    if bs and int(bs) != page_size:
        mk = "mkfs.xfs -b size=" if mount.get("fstype") == "xfs" else "mkfs.ext4 -b "
        return (f"{mp} has {bs} B blocks, not the page size {page_size} B: the kernel refuses "
                "DAX on it", f"{mk}{page_size} {dev} ({DESTROYS}), then mount -o dax=always")
    if dax == "inode":
        return (f"{mp} is mounted dax=inode: only files flagged with chattr +x bypass the page "
                "cache", f"umount {mp} && mount -o dax=always {dev} {mp}")
    if mode in (None, "fsdax"):
        return (f"{mp} is mounted without a dax option: the page cache stays in the path",
                f"umount {mp} && mount -o dax=always {dev} {mp}")
    return None


class PmemWithoutDax(Check):
    id = "CK011"
    title = "PMEM mounted without DAX: the real cause and the fix that works"
    source = ("Linux filesystems/dax.rst, nvdimm/btt.rst, ndctl-create-namespace(1); K23 §5.1, "
              "§5.3.6, Fig. 10")
    insights = ("K23-3", "H4", "H6")
    replaces = ("PM003", "PM008")

    def run(self, inp: CheckInput) -> list[Finding]:
        f = inp.facts
        out = []
        for m in f.profile.get("mounts") or []:
            if m.get("medium") != "pmem":
                continue
            ns = mount_namespace(f.profile, m)
            found = cause_and_fix(m, ns, f.page_size)
            if found is None:
                continue
            cause, fix = found
            on = paths_on_mount(f, m.get("mountpoint"))
            if on and f.pg:  # dax=inode may cover flagged files: a warning, as PM003 says
                sev = "warn" if m.get("dax") == "inode" else "fail"
                why = ": PostgreSQL performs significantly worse without DAX (K23 Fig. 10)"
            elif on and f.mysql:
                sev, why = "info", ": MySQL/MariaDB without DAX were on par (K23 §5.1)"
            else:
                sev, why = "warn", ""
            held = f" It holds the {', '.join(sorted({p.role for p in on}))}." if on else ""
            out.append(self.finding(sev, f"mount:{m.get('mountpoint')}",
                                    f"{cause}{why}.{held}", fix))
        return out

    def covers(self, other: Finding, mine: list[Finding]) -> bool:
        """PM003's remount advice and PM008's sector note for a path on a mount reported
        here are the same problem (and PM003's fix cannot work on BTT or raw)."""
        if other.rule not in self.replaces or ":" not in other.subject:
            return False
        if other.rule == "PM008" and other.subject == "pmem.namespaces":
            return False
        path = other.subject.partition(":")[2]
        mounts = [m.subject.partition(":")[2] for m in mine]
        return any(path == mp or path.startswith(mp.rstrip("/") + "/") for mp in mounts)


CHECK = PmemWithoutDax()
