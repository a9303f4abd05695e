"""PM081 SQL Server on Linux: data files on fsdax, the transaction log on a sector namespace.

Anti-pattern: the transaction log (.ldf) on an fsdax (DAX) mount, or data files on PMEM
without DAX. SQL Server requires fsdax for data and sector mode for the log (K23 §3.1, citing
Microsoft's "Configure persistent memory (PMEM) for SQL Server on Linux"): the log needs
storage with sector atomicity, which DAX does not give (8-byte atomicity only); BTT does.
K23 Table 5 (SQL Server TPC-C, x100K tpmC at 8/16/32/64/128 users): SSD-both 385/579/309/
259/123, PMEM-data-SSD-log 406/663/328/173/133, PMEM-both 440/663/321/163/130. The log on PMEM
added little; K23 saw data-on-PMEM/log-on-SSD beat both-on-PMEM at 32-128 users because its
sector namespace sat on the other socket: one socket could not hold both namespaces for 1000
warehouses (K23 §3.1, §5.2).

Recommendation: data, ndf and tempdb files on an fsdax namespace mounted with DAX; the .ldf
on a sector namespace on the same socket (else on the SSD). A sector namespace is created on
free region capacity; re-creating an existing namespace destroys its data, so that step is
marked DESTRUCTIVE and never offered while the namespace is mounted.
"""

from shlex import quote

from pmem_advisor.rules.catalog.PM080_advice_conditions_differ import (
    free_regions,
    gib,
    has_pmem,
    namespace_mounts,
)
from pmem_advisor.rules.model import PRIORITY_SAFETY, Note, OsStep, Rule

MS_DOC = "Microsoft, Configure persistent memory (PMEM) for SQL Server on Linux"
TABLE5 = ("K23 Table 5 (SQL Server, 8/16/32/64/128 users, x100K tpmC): SSD-both "
          "385/579/309/259/123, PMEM-data-SSD-log 406/663/328/173/133")


class SqlServerDataFsdaxLogSector(Rule):
    id = "PM081"
    title = "SQL Server: data on fsdax, the transaction log on a sector namespace"
    insights = ("K23-15", "K23-2", "H4")
    paper = f"K23 §3.1, §5.2, Table 5; {MS_DOC}"
    priority = PRIORITY_SAFETY  # the log placement is a durability requirement
    engines = ("sqlserver",)

    def condition(self, f):
        return has_pmem(f) and f.pmem_mode != "memory"

    def effects(self, f):
        out = []
        out += self._data(f)
        out += self._log(f)
        out += self._sector_namespace(f)
        return out

    def _data(self, f):
        d = f.data
        fsdax = [m.get("mountpoint") for m in f.pmem_mounts if m.get("dax") == "always"]
        if d is None:
            return [Note("info", "placement",
                         "give --data-dir (the .mdf/.ndf/tempdb directory) and --wal-dir (the "
                         f".ldf directory): SQL Server wants data on fsdax and the log on a "
                         f"sector namespace ({MS_DOC}; K23 §3.1); {TABLE5}")]
        if d.real_pmem and d.namespace_mode == "sector":
            return [Note("warn", f"data:{d.path}",
                         f"the data files are on the sector (BTT) namespace {d.namespace}: no "
                         "DAX, so neither the page-cache bypass nor the hybrid buffer pool",
                         "put .mdf/.ndf/tempdb on an fsdax namespace mounted -o dax; keep "
                         "sector for the .ldf")]
        if d.real_pmem and not d.dax_on:
            return [Note("warn", f"data:{d.path}",
                         f"the data files are on PMEM {d.device or ''} mounted without DAX: "
                         "Microsoft's setup mounts fsdax with -o dax,noatime (XFS with "
                         "`xfs_io -c \"extsize 2m\"`, file sizes a multiple of 2 MB)",
                         f"umount {d.mountpoint} && mount -o dax,noatime "
                         f"{d.device or '<device>'} {d.mountpoint}  # SQL Server stopped")]
        if d.real_pmem:
            return [Note("info", f"data:{d.path}",
                         f"data files on fsdax with DAX, the placement K23 used; {TABLE5}")]
        if fsdax:
            return [Note("info", f"data:{d.path}",
                         f"the data files are not on PMEM while {fsdax[0]} (fsdax, DAX) is "
                         f"free for them; {TABLE5}: data on PMEM gave +5-15% at 8-32 users "
                         "(and -33% at 64, see the concurrency finding)",
                         f"place .mdf/.ndf and tempdb under {fsdax[0]}")]
        return []

    def _log(self, f):
        w = f.wal
        if w is None or f.data is None or w.path == f.data.path:
            if f.data is not None:
                return [Note("info", "log", "give --wal-dir for the .ldf directory: the log "
                             "must not share the data's fsdax mount (it needs sector "
                             f"atomicity, {MS_DOC})")] if f.data.real_pmem else []
            return []
        if w.real_pmem and (w.dax_on or w.namespace_mode == "fsdax"):
            return [Note("fail", f"log:{w.path}",
                         f"the transaction log is on {w.namespace_mode or 'a DAX'} PMEM "
                         f"({w.device or w.mountpoint}): the log needs storage with sector "
                         f"atomicity, which DAX does not give ({MS_DOC}; K23 §3.1)",
                         "move the .ldf to a sector (BTT) namespace, or to the SSD")]
        out = []
        if w.real_pmem and w.namespace_mode == "sector":
            out.append(Note("info", f"log:{w.path}",
                            "the log is on a sector (BTT) namespace, as Microsoft requires "
                            "for .ldf files on PMEM; K23 found the log's placement matters "
                            "little next to the data's (K23 §5.2)"))
            if (f.data is not None and f.data.numa_node is not None
                    and w.numa_node is not None and w.numa_node != f.data.numa_node):
                out.append(Note("warn", f"log:{w.path}",
                                f"the log's namespace is on node {w.numa_node}, the data's on "
                                f"node {f.data.numa_node}: K23 had to do the same and its "
                                "data-on-PMEM/log-on-SSD beat both-on-PMEM at 32-128 users "
                                "because of the remote log (K23 §3.1, §5.2; 328 vs 321, 173 vs "
                                "163, 133 vs 130 x100K tpmC)",
                                "create the sector namespace on the data's socket, or keep "
                                "the log on the SSD"))
        elif not w.real_pmem:
            out.append(Note("info", f"log:{w.path}",
                            "the log is on non-PMEM storage: with data on PMEM this was K23's "
                            "best SQL Server placement at 32-128 users (Table 5: 328/173/133 "
                            "x100K tpmC vs 321/163/130 with both on PMEM)"))
        return out

    def _sector_namespace(self, f):
        """OS steps for a sector namespace for the log, when none exists."""
        ns = f.pmem.get("namespaces") or []
        if any(n.get("mode") == "sector" for n in ns):
            return []
        node = f.data.numa_node if f.data is not None else None
        regions = sorted(free_regions(f), key=lambda r: r.get("numa_node") != node)
        if regions:
            r = regions[0]
            return [OsStep(f"ndctl create-namespace --mode=sector --region={r.get('name')} && "
                           "mkfs.xfs /dev/<new pmemNs> && mount /dev/<new pmemNs> "
                           "/var/opt/mssql/pmemlog",
                           f"a sector (BTT) namespace on the {gib(int(r['available_bytes']))} "
                           f"free in {r.get('name')} (node {r.get('numa_node')}) for the .ldf: "
                           f"sector atomicity for the log ({MS_DOC}); touches no existing "
                           "namespace", key="sqlserver-log-namespace")]
        mounted = namespace_mounts(f)
        # devdax is left alone: it may be onlined as memory (kmem) or mapped by a program
        spare = [n for n in ns if n.get("mode") in ("fsdax", "raw")
                 and n.get("name") not in mounted]
        if spare:
            n = spare[0]
            name = str(n.get("name"))
            return [OsStep(f"ndctl create-namespace -f -e {quote(name)} --mode=sector",
                           f"DESTRUCTIVE: re-creating {name} in sector mode DESTROYS all data "
                           f"on it (back it up first); it is not mounted. Sector atomicity for "
                           f"the .ldf ({MS_DOC})", key="sqlserver-log-namespace",
                           destructive=True)]
        where = ", ".join(f"{k} at {v}" for k, v in sorted(mounted.items()))
        return [Note("info", "log namespace",
                     "no sector namespace for the log, which needs one on PMEM "
                     f"({MS_DOC}), and no free PMEM capacity for one: re-creating a "
                     f"namespace in sector mode DESTROYS its data, and every one is mounted "
                     f"({where}); not offered as a step",
                     "keep the .ldf on the SSD (K23 Table 5: the log's placement mattered "
                     "little), or back up, unmount and re-create one namespace with "
                     "`ndctl create-namespace -f -e <namespace> --mode=sector`")]


RULE = SqlServerDataFsdaxLogSector()
