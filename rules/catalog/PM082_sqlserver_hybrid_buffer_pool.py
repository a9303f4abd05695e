"""PM082 SQL Server 2019+: hybrid buffer pool and persisted log buffer on DAX mounts.

Anti-pattern: SQL Server data files on an fsdax mount while the engine still copies every
page into DRAM and flushes the log to the block path. SQL Server 2019 (15.x) and later read
clean pages of data files on a DAX mount in place (hybrid buffer pool; "further enhanced in
SQL Server 2022 (16.x)"), and keep a 20 MB persisted log buffer on a DAX mount; with both and
startup trace flag 809 the hybrid buffer pool runs in Direct Write mode (Microsoft: Hybrid
buffer pool; Add persisted log buffer to a database; SQL Server 2019 and later on Linux).
K23 measured SQL Server 2019 (15.0.4178) with data on fsdax (K23 §3.1) and reported no
numbers for these features, so no paper gain is claimed. Microsoft's Linux PMEM page also
suggests trace flag 3979 (disable forced flush): it changes how writes are made durable, so it
is withheld without --allow-unsafe.

Recommendation (2019+, data on a DAX mount): enable the hybrid buffer pool (restart), add a
persisted log buffer file on the DAX mount per busy database, start with trace flag 809.
Before 2019 none of these exist on Linux: upgrade to use them.
"""

import re

from pmem_advisor.rules.catalog.PM080_advice_conditions_differ import has_pmem
from pmem_advisor.rules.model import PRIORITY_SPEED, ConfigLine, Note, OsStep, Rule

HBP_DOC = "Microsoft, Hybrid buffer pool (SQL Server 2019 (15.x) and later)"
PLB_DOC = "Microsoft, Add persisted log buffer to a database (SQL Server 2019 and later)"
# release year -> major version, as SQL Server's own version strings number them
YEARS = {2017: 14, 2019: 15, 2022: 16, 2025: 17}


def sqlserver_major(version: str | None) -> int | None:
    """'2019' | '15' | '15.0.4178' | 'SQL Server 2022' -> 15/15/15/16; None when unknown."""
    if not version:
        return None
    m = re.search(r"\d+", str(version))
    if not m:
        return None
    n = int(m.group())
    return YEARS.get(n, n if n < 100 else None)


class SqlServerHybridBufferPool(Rule):
    id = "PM082"
    title = "SQL Server 2019+: hybrid buffer pool and persisted log buffer on DAX"
    insights = ("K23-15", "H6")
    paper = f"K23 §3.1; {HBP_DOC}; {PLB_DOC}"
    priority = PRIORITY_SPEED
    engines = ("sqlserver",)

    def _dax_mount(self, f):
        if f.data is not None and f.data.real_pmem and f.data.dax_on:
            return f.data.mountpoint
        if f.data is None:
            found = [m.get("mountpoint") for m in f.pmem_mounts
                     if m.get("medium") == "pmem" and m.get("dax") == "always"]
            return found[0] if found else None
        return None

    def condition(self, f):
        return has_pmem(f) and self._dax_mount(f) is not None

    def effects(self, f):
        mp = self._dax_mount(f)
        major = sqlserver_major(f.version)
        if major is not None and major < 15:
            return [Note("warn", "version",
                         f"SQL Server {f.version} has neither the hybrid buffer pool nor the "
                         "persisted log buffer on Linux: both arrive with SQL Server 2019 "
                         f"(15.x) ({HBP_DOC}; {PLB_DOC}); the DAX mount still serves as fast "
                         "storage", "upgrade to SQL Server 2019 or later to use them")]
        assumed = ("" if major is not None else
                   " (version not given: assumed 2019 or later; pass --version)")
        enhanced = " (enhanced in 2022)" if major is None or major >= 16 else ""
        out = [
            Note("info", "hybrid buffer pool",
                 f"data files on the DAX mount {mp}: SQL Server 2019+{enhanced} can read their "
                 f"clean pages in place instead of copying them to DRAM{assumed}; K23 "
                 "published no numbers for it, measure before and after",
                 "SQL in the OS steps; restart SQL Server after the server-level change"),
            OsStep("ALTER SERVER CONFIGURATION SET MEMORY_OPTIMIZED HYBRID_BUFFER_POOL = ON;  "
                   "-- then: sudo systemctl restart mssql-server",
                   f"hybrid buffer pool, off by default at the instance level; databases are "
                   f"on by default ({HBP_DOC})", key="sqlserver-hbp"),
            OsStep(f"ALTER DATABASE <db> ADD LOG FILE (NAME = <db>_plb, FILENAME = "
                   f"'{mp.rstrip('/')}/<db>.pldf', SIZE = 20MB);",
                   "persisted log buffer on the DAX mount (always 20 MB whatever SIZE says; "
                   "not with TDE; on availability groups only secondaries use it) "
                   f"({PLB_DOC})", key="sqlserver-plb"),
            OsStep("sudo /opt/mssql/bin/mssql-conf traceflag 809 on && "
                   "sudo systemctl restart mssql-server",
                   "startup trace flag 809: with the hybrid buffer pool and a persisted log "
                   f"buffer, pages on PMEM are modified in place (Direct Write) ({HBP_DOC})",
                   key="sqlserver-tf809",
                   config=(ConfigLine("mssql.conf", "traceflag", "", "809"),)),
        ]
        fstype = next((m.get("fstype") for m in f.pmem_mounts if m.get("mountpoint") == mp),
                      None)
        if fstype == "xfs":
            out.append(OsStep(f"xfs_io -c \"extsize 2m\" {mp}",
                              "2 MB extents so the memory maps use 2 MB pages (Microsoft's "
                              "Linux PMEM page: misalignment silently falls back to 4 KB)",
                              key="sqlserver-extsize"))
        if f.allow_unsafe:
            out.append(OsStep("sudo /opt/mssql/bin/mssql-conf traceflag 3979 on",
                              "UNSAFE, durability risk (--allow-unsafe): trace flag 3979 "
                              "disables SQL Server's forced flush (FUA) on Linux; Microsoft's "
                              "PMEM page suggests it because PMEM devices are O_DIRECT safe; "
                              "only when every database file is on PMEM", key="sqlserver-tf3979",
                              config=(ConfigLine("mssql.conf", "traceflag", "", "3979"),)))
        else:
            out.append(Note("info", "trace flag 3979",
                            "withheld: trace flag 3979 (disable forced flush), which Microsoft's "
                            "Linux PMEM page suggests, changes how writes are made durable",
                            "only with --allow-unsafe, and only when every database file is "
                            "on PMEM"))
        return out

    def check_config(self, f, config, effects, same_value):
        """mssql.conf with trace flag 3979: a durability risk, failed without --allow-unsafe."""
        flags = {str(v).strip() for k, v in config.items() if k.startswith("traceflag.")}
        if "3979" not in flags:
            return []
        said = ("trace flag 3979 disables SQL Server's forced flush (FUA) on Linux; Microsoft's "
                "Linux PMEM page suggests it only because PMEM devices are O_DIRECT safe")
        if f.allow_unsafe:
            return [self.finding("warn", "traceflag 3979", f"{said}: allowed by --allow-unsafe",
                                 "keep every database file on PMEM")]
        return [self.finding("fail", "traceflag 3979", f"{said}: a durability risk",
                             "sudo /opt/mssql/bin/mssql-conf traceflag 3979 off (or pass "
                             "--allow-unsafe when every database file is on PMEM)")]


RULE = SqlServerHybridBufferPool()
