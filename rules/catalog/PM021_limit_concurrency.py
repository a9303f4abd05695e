"""PM021 Concurrency on PMEM: cap it only for the engines K23 saw thrash.

Anti-pattern (both ways): hundreds of concurrent writers on PMEM for an engine that thrashes
there, and a blanket cap for engines that do not. SQL Server and VoltDB lost to the SSD at 64+
users; RocksDB YCSB-A at 48 threads fell to its 16-thread level (K23 §5.1, §6, §7.1 v); one
concurrent writer cut read bandwidth from 31 to 26 GB/s (D21 insight #11). But PostgreSQL and
MySQL did not thrash: PostgreSQL with data and WAL on PMEM still rose at 128 clients (K23 Table
5), which K23 credits to their few write threads and write combining (§5.1). No paper measured
``innodb_thread_concurrency``, so no rule caps it.

Recommendation: for PostgreSQL/MySQL, tune with the real client count (``--clients``) instead
of capping; for the engines K23 saw thrash (SQL Server, VoltDB, RocksDB), pool active sessions
near 2x the physical cores of the PMEM socket (a host note; this tool configures neither).
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule

K23_MAX_CLIENTS = 128  # the most clients K23 ran PostgreSQL/MySQL TPC-C with (Table 5)


def cap(f) -> int:
    return max(16, 2 * f.cores_near(f.pmem_node))


class LimitConcurrency(Rule):
    id = "PM021"
    title = "Concurrency on PMEM: cap only the engines K23 saw thrash"
    insights = ("K23-12",)
    paper = "K23 §5.1, §6, §7.1 (v), Table 5; D21 insight #11"
    priority = PRIORITY_SPEED
    engines = ()  # PostgreSQL/MySQL get the tuning note, a host check the thrash note

    def condition(self, f):
        if f.engine is None:
            return f.pmem_mode in ("app_direct", "mixed")
        if f.engine not in ("postgres", "mysql"):
            return False  # RocksDB: PM062; SQL Server/VoltDB: PM083 (their own K23 findings)
        return f.any_pmem_path and f.workload != "olap"

    def effects(self, f):
        if f.engine is None:
            return [Note("info", "concurrency",
                         "K23 saw SQL Server and VoltDB lose to the SSD at 64+ users and RocksDB "
                         "YCSB-A at 48 threads fall to its 16-thread level on PMEM (K23 §6)",
                         f"for those engines pool active sessions near {cap(f)} (2x the PMEM "
                         "socket's physical cores)")]
        if f.clients is None:
            return [Note("info", "clients",
                         "PostgreSQL and MySQL did not thrash on PMEM up to 128 clients (K23 "
                         "Table 5, §5.1): no cap is set; give --clients so the advice and the "
                         "tuning use the real count")]
        if f.clients > K23_MAX_CLIENTS:
            return [Note("info", "clients",
                         f"{f.clients} clients is beyond the 128 K23 measured on PMEM: tune with "
                         "this count and compare with a pooled setup before deploying")]
        return []


RULE = LimitConcurrency()
