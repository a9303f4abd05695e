"""PM065 RocksDB block compression on PMEM: start without it, let the measurement decide.

K23 §7.1 (vi): optimisations that trade CPU for less I/O were built for slow disks; on PMEM
the CPU does the I/O itself (no DMA), so they may not pay: PostgreSQL's WAL compression cost
up to ~50% of the transactions at 16 clients on App Direct and helped slightly on SSD (K23
§5.3.1, Fig. 8). Block compression is RocksDB's CPU-for-I/O trade.

Recommendation: on PMEM the tuner starts from kNoCompression and searches it against LZ4
and Snappy (RocksDB's default); nothing is forced. Conditions differ: K23 measured
PostgreSQL's WAL compression, not RocksDB's block compression.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Note, Prior, Rule


class RocksDBCompressionOnPmem(Rule):
    id = "PM065"
    title = "Block compression on PMEM: searched from none"
    insights = ("K23-5",)
    paper = "K23 §7.1 (vi), §5.3.1, Fig. 8"
    priority = PRIORITY_SPEED
    engines = ("rocksdb",)

    def condition(self, f):
        return f.data_on_pmem

    def effects(self, f):
        return [Prior("compression", "kNoCompression",
                      "on PMEM the CPU does the I/O: saving bytes with CPU may not pay "
                      "(K23 §7.1 vi)"),
                Bound("compression", values=("kNoCompression", "kLZ4Compression",
                                             "kSnappyCompression"),
                      reason="none against the cheap codecs"),
                Note("info", "compression",
                     "K23 §7.1 (vi): CPU-for-I/O optimisations may not pay on PMEM (PostgreSQL's "
                     "WAL compression lost up to ~50%); K23 did not measure RocksDB's block "
                     "compression, so tune compares none, LZ4 and Snappy",
                     "pmem-advisor tune rocksdb --workload ycsb-a")]


RULE = RocksDBCompressionOnPmem()
