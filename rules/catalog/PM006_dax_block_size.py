"""PM006 DAX needs filesystem block size == page size; ext4 block size by client count.

Anti-pattern: a filesystem on PMEM made with a block size other than the page size: DAX is
then refused (or silently off), so the page cache stays in the path (H4, K23 §5.3.5). On a
no-dax ext4 with O_DIRECT, K23 Table 6 saw 1 KB blocks win at >= 32 clients (+4-12%) and lose
at few clients.

Recommendation: ``mkfs.ext4 -b 4096`` / ``mkfs.xfs -b size=4096`` for DAX mounts; keep 4 KB,
and only consider 1 KB for no-dax MySQL with many clients.
"""

from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, Rule


class DaxBlockSize(Rule):
    id = "PM006"
    title = "DAX filesystems need block size == page size"
    insights = ("K23-10", "H4")
    paper = "K23 §5.3.5, Table 6; D21 §2.3"
    priority = PRIORITY_PLACEMENT
    engines = ()  # a host check; the client-count note needs an engine

    def _bad_mounts(self, f):
        return [m for m in f.profile.get("mounts") or []
                if m.get("dax") in ("always", "inode", True) and m.get("block_size")
                and int(m["block_size"]) != f.page_size]

    def _many_clients_nodax(self, f):
        d = f.data
        return (f.mysql and d is not None and d.real_pmem and not d.dax_on
                and d.fstype == "ext4" and (f.clients or 0) >= 32 and d.block_size == 4096)

    def condition(self, f):
        return bool(self._bad_mounts(f)) or self._many_clients_nodax(f)

    def effects(self, f):
        out = []
        for m in self._bad_mounts(f):
            mk = "mkfs.xfs -b size=" if m.get("fstype") == "xfs" else "mkfs.ext4 -b "
            out.append(Note("fail", f"mount:{m.get('mountpoint')}",
                            f"{m.get('mountpoint')} asks for DAX but its block size is "
                            f"{m['block_size']} B, not the page size {f.page_size} B: DAX is "
                            "refused or off",
                            f"back up its data, then recreate the filesystem: "
                            f"{mk}{f.page_size} {m.get('device')} (DESTROYS its contents)"))
        if self._many_clients_nodax(f):
            out.append(Note("info", f"data:{f.data.path}",
                            f"{f.clients} clients on a no-dax ext4 PMEM mount: K23 Table 6 saw "
                            "1 KB blocks +4-12% at 32-128 clients, but worse at few clients",
                            "keep 4 KB unless the client count stays high"))
        return out


RULE = DaxBlockSize()
