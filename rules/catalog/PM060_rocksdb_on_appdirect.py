"""PM060 RocksDB belongs on App Direct PMEM, not on the SSD next to it or in Memory mode.

K23 §6 ran YCSB A, B and C on RocksDB (1000-byte rows, 110 GB per workload): App Direct
(fsdax) had the highest throughput and the lowest read latency in every workload, the gap
widening with threads, with up to 6.5 GB/s read and 1.3 GB/s write bandwidth from PMEM
against 0.9 and 0.4 GB/s from the SSD. Memory mode performed almost like the SSD-only
Default mode: the extra volatile capacity helped only marginally (K23 §6 Insights, §7.1 i).

Recommendation: when the host has App Direct PMEM and the RocksDB directory is elsewhere,
say so and name the DAX mount; in Memory mode, say it buys RocksDB almost nothing. Conditions
differ: K23 measured RocksDB 5.11 through YCSB 0.17 on a 2-socket Cascade Lake.
"""

from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, Rule


class RocksDBOnAppDirect(Rule):
    id = "PM060"
    title = "RocksDB data on App Direct PMEM (K23 §6)"
    insights = ("K23-2", "K23-1")
    paper = "K23 §6, Fig. 11-12, §7.1 (i)"
    priority = PRIORITY_PLACEMENT
    engines = ("rocksdb",)

    def condition(self, f):
        if f.pmem_mode in ("memory", "mixed"):
            return True
        return bool(f.pmem_mounts) and f.data is not None and not f.data_on_pmem

    def effects(self, f):
        if f.pmem_mode in ("memory", "mixed"):
            return [Note("warn", "pmem.mode",
                         "K23 §6: with PMEM in Memory mode RocksDB ran YCSB A/B/C almost like "
                         "the SSD-only default; App Direct had the highest throughput and lowest "
                         "read latency in every workload",
                         "provision App Direct and put the RocksDB directory on an fsdax mount")]
        mounts = sorted(str(m.get("mountpoint")) for m in f.pmem_mounts)
        return [Note("info", "data_dir",
                     f"the RocksDB directory is on {f.data.medium}; K23 §6 measured the "
                     "highest YCSB throughput with RocksDB on App Direct PMEM (up to 6.5 GB/s "
                     "read bandwidth against 0.9 GB/s from the SSD)",
                     f"put it on the DAX mount {mounts[0]}" if mounts else "")]


RULE = RocksDBOnAppDirect()
