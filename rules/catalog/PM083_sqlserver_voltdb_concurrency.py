"""PM083 SQL Server and VoltDB on PMEM: many concurrent users lose to the SSD.

Anti-pattern: a SQL Server or VoltDB OLTP load with 64+ concurrent users on PMEM. K23 §5.1
(TPC-C, 1000 warehouses): SQL Server in App Direct gained ~10% over the SSD at few users but
the SSD beat it by 37% at 64 users (thrashing; CPU use stayed low, I/O on the critical path);
Table 5, both on SSD vs both on PMEM: 259 vs 163 x100K tpmC at 64 users. VoltDB gained only
marginally from PMEM: it writes whole snapshots, and "high concurrency high volume writing
does not scale well, particularly for PMEM" (K23 §5.1, §7.1 iv-v). PostgreSQL and MySQL did
not thrash (PM021).

Recommendation: pool active sessions near 2x the PMEM socket's physical cores (PM021's cap)
and measure the target user count on this machine before trusting PMEM over the SSD.
"""

from pmem_advisor.rules.catalog.PM021_limit_concurrency import cap
from pmem_advisor.rules.catalog.PM080_advice_conditions_differ import has_pmem
from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule

THRASH_AT = 64  # the user count at which K23 saw SQL Server lose to the SSD (§5.1)

SAID = {
    "sqlserver": "K23 §5.1: SQL Server on PMEM gained ~10% over the SSD at few users and lost "
                 "37% to it at 64 users (Table 5: 259 vs 163 x100K tpmC, both on SSD vs both "
                 "on PMEM)",
    "voltdb": "K23 §5.1: VoltDB gained only marginally from PMEM; its snapshot-heavy writes at "
              "high concurrency do not scale, particularly on PMEM (§7.1 iv-v)",
}


class SqlServerVoltdbConcurrency(Rule):
    id = "PM083"
    title = "SQL Server and VoltDB on PMEM: cap concurrent users"
    insights = ("K23-12",)
    paper = "K23 §5.1, Table 5, §7.1 (iv), (v)"
    priority = PRIORITY_SPEED
    engines = ("sqlserver", "voltdb")

    def condition(self, f):
        return has_pmem(f) and f.pmem_mode != "memory" and f.workload != "olap"

    def effects(self, f):
        said = SAID[f.engine]
        pool = cap(f)
        if f.clients is None:
            return [Note("info", "clients", f"{said}; give --clients to check your count",
                         f"pool active sessions near {pool} (2x the PMEM socket's physical "
                         "cores) and measure")]
        if f.clients >= THRASH_AT or f.clients > pool:
            return [Note("warn", "clients",
                         f"{f.clients} concurrent users: {said}",
                         f"pool active sessions near {pool} (2x the PMEM socket's physical "
                         "cores), or measure the SSD against PMEM at this count first")]
        return []


RULE = SqlServerVoltdbConcurrency()
