"""PM012 PostgreSQL: wal_compression off when the WAL is on PMEM.

Anti-pattern: ``wal_compression`` on (pgtune's default) with the WAL on PMEM. K23 measured
almost 50% fewer transactions at 16 clients in AppDirect mode; on an SSD it was slightly
helpful (K23 §5.3.1, Fig. 8; §7.1 vi: SSD-era optimisations cost CPU, and on PMEM the CPU does
the I/O).

Recommendation: ``wal_compression = off`` on a PMEM WAL; on SSD/HDD leave it in the tuner's
search space.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Rule, Set


class PgWalCompressionOff(Rule):
    id = "PM012"
    title = "wal_compression off on a PMEM WAL"
    insights = ("K23-5",)
    paper = "K23 §5.3.1, Fig. 8; §7.1 (vi)"
    priority = PRIORITY_SPEED
    engines = ("postgres",)
    check_severity = "warn"

    def condition(self, f):
        return f.wal is not None

    def effects(self, f):
        if f.wal_on_pmem:
            return [Set("wal_compression", "off",
                        "WAL on PMEM: compression cost ~50% of tpmC at 16 clients (K23 Fig. 8)")]
        return [Bound("wal_compression", values=("off", "on", "lz4"),
                      reason="WAL on SSD/HDD: compression slightly helps there; let the tuner "
                             "decide (K23 §5.3.1)")]


RULE = PgWalCompressionOff()
