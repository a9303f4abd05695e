"""PM064 RocksDB off DAX: flushes and compactions with direct I/O, direct reads measured.

Where RocksDB's files go through the page cache (an SSD, NVMe, a disk, or PMEM mounted
without DAX), its big background writers (flush, compaction) fill the cache with data nobody
reads soon and evict the compressed blocks the reads need; direct I/O for flush and
compaction keeps the page cache for reads (RocksDB wiki "Direct IO"). Direct reads are a
trade: K23 §7.1 (ii, iii) credits the page cache and DMA for much of the SSD's showing
against PMEM, so whether bypassing it pays depends on the block cache and the data: searched,
not set. On DAX there is no page cache (PM063).

Recommendation: use_direct_io_for_flush_and_compaction=true; use_direct_reads searched over
false/true.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Rule, Set


class RocksDBDirectIoOffDax(Rule):
    id = "PM064"
    title = "Direct I/O for flush and compaction where the page cache is in the way"
    insights = ("H6",)
    paper = "K23 §7.1 (ii), (iii); RocksDB wiki: Direct IO"
    priority = PRIORITY_SPEED
    engines = ("rocksdb",)

    def condition(self, f):
        return (f.data is not None and not f.data.page_cache_bypassed
                and f.data.medium not in ("unknown",))

    def effects(self, f):
        return [Set("use_direct_io_for_flush_and_compaction", True,
                    f"the data is on {f.data.medium} through the page cache: background writes "
                    "bypass it and leave it to the reads"),
                Bound("use_direct_reads", values=(False, True),
                      reason="the page cache helps SSD reads (K23 §7.1 ii-iii): measured, not set")]


RULE = RocksDBDirectIoOffDax()
