"""PM021 Limit concurrency on write-heavy and mixed workloads on PMEM.

Anti-pattern: hundreds of concurrent writers on PMEM. SQL Server and VoltDB lost to the SSD at
64+ users; RocksDB YCSB-A at 48 threads fell to its 16-thread level (K23 §5.1, §6, §7.1 v);
one concurrent writer cut read bandwidth from 31 to 26 GB/s (D21 insight #11).

Recommendation: cap active sessions near 2x the physical cores of the PMEM socket (at least
16) with a pooler; MySQL: innodb_thread_concurrency; tune with the real client count.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Note, Rule, Set


def cap(f) -> int:
    return max(16, 2 * f.cores_near(f.pmem_node))


class LimitConcurrency(Rule):
    id = "PM021"
    title = "Cap concurrency for write-heavy and mixed workloads on PMEM"
    insights = ("K23-12",)
    paper = "K23 §5.1, §6, §7.1 (v); D21 insight #11"
    priority = PRIORITY_SPEED

    def condition(self, f):
        return f.any_pmem_path and f.workload != "olap"

    def effects(self, f):
        c = cap(f)
        out = []
        if f.mysql:
            out += [Set("innodb_thread_concurrency", c,
                        f"at most {c} threads inside InnoDB: PMEM throughput falls with many "
                        "concurrent writers (K23 §6)"),
                    Bound("innodb_thread_concurrency", 0, 4 * c, reason="K23-12")]
        if f.clients is None:
            out.append(Note("info", "clients",
                            "PMEM throughput plateaus or falls with many concurrent writers; "
                            "give --clients so the advice and the tuning use the real count"))
        elif f.clients > c:
            out.append(Note("warn", "clients",
                            f"{f.clients} clients on PMEM with a {f.workload} workload: K23 saw "
                            "throughput fall to the 16-thread level at 48 threads (YCSB-A)",
                            f"pool connections: at most {c} active sessions (pgbouncer "
                            "default_pool_size / a thread pool)"))
        return out


RULE = LimitConcurrency()
