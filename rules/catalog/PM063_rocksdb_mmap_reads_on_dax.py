"""PM063 RocksDB on DAX: read SST files through mmap, never with O_DIRECT.

On an fsdax mount there is no page cache: mmap maps the PMEM media itself and a read is a
CPU load, while read() copies through the kernel (H4, H6; K23 §2.1, §7.1 iii: on PMEM the CPU
does every copy, no DMA). P-SE measured that copy at ~10% (up to 24%) of query time for
read()/write() on a PM filesystem, removed by mapped access (P-SE §IV, §VI). O_DIRECT has no
page cache to bypass there. /dev/shm (tmpfs) standing in for PMEM behaves alike: its pages
are memory.

Recommendation: allow_mmap_reads=true and use_direct_reads=false (RocksDB refuses both at
once); allow_mmap_writes stays off (RocksDB's own docs advise against it). Conditions differ:
P-SE measured PostgreSQL 9.5 on emulated PM, not RocksDB.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Rule, Set


class RocksDBMmapReadsOnDax(Rule):
    id = "PM063"
    title = "allow_mmap_reads on DAX (no page cache, no kernel copy)"
    insights = ("H6", "P-SE-1")
    paper = "P-SE §IV, §VI; K23 §2.1, §7.1 (iii)"
    priority = PRIORITY_SPEED
    engines = ("rocksdb",)
    check_severity = "warn"  # direct reads on DAX: a config that disagrees is flagged

    def condition(self, f):
        return f.data is not None and f.data.page_cache_bypassed

    def effects(self, f):
        where = "tmpfs (emulated PMEM)" if f.data.emulated_pmem else "a DAX mount"
        return [Set("allow_mmap_reads", True,
                    f"the data is on {where}: mapped reads are loads from the media, read() "
                    "copies through the kernel (P-SE: ~10%, up to 24% of query time)"),
                Set("use_direct_reads", False,
                    "no page cache to bypass on DAX, and RocksDB refuses it with mmap reads")]


RULE = RocksDBMmapReadsOnDax()
