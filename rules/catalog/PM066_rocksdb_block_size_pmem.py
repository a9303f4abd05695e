"""PM066 RocksDB block size on PMEM: 8 kB or more.

K23 §4.2-4.3: random reads of 8 kB or larger blocks from PMEM reach near-sequential
bandwidth, and index lookups ran ~10x faster than on the SSD; D21 insight #12: random access
should use the largest blocks possible, at least 256 B, best 4 kB. A RocksDB data block is
its unit of reading SST files.

Recommendation: search block_size in 8-64 kB on PMEM (the baseline's 16 kB is inside).
Conditions differ: K23 measured database pages of PostgreSQL/MySQL, not RocksDB blocks.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Bytes, Rule

KB = 1024


class RocksDBBlockSizePmem(Rule):
    id = "PM066"
    title = "block_size of 8 kB or more on PMEM"
    insights = ("K23-11", "D21-2")
    paper = "K23 §4.2, §4.3; D21 insight #12"
    priority = PRIORITY_SPEED
    engines = ("rocksdb",)

    def condition(self, f):
        return f.data_on_pmem

    def effects(self, f):
        return [Bound("block_size", Bytes(8 * KB), Bytes(64 * KB),
                      reason=">= 8 kB random reads get near-sequential PMEM bandwidth (K23 §4.2)")]


RULE = RocksDBBlockSizePmem()
