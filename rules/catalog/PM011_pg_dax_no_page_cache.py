"""PM011 PostgreSQL under DAX: no page cache, so re-size the cache knobs.

Anti-pattern: pgtune's sizing on a DAX mount. pgtune gives shared_buffers 25% of RAM and counts
the OS page cache in effective_cache_size (75% of RAM); under DAX there is no page cache or
read-ahead (H6, K23 §2.1, §7.1 iii), so RAM outside shared_buffers caches nothing, while random
reads of >= 8 KB blocks are near-sequential on PMEM (K23 §4.2, §4.3).

Recommendation: shared_buffers 40% of RAM (searched 25-60%), effective_cache_size =
shared_buffers, random_page_cost 1.0 (searched 1.0-2.0). On tmpfs (emulation) only the cost
changes: tmpfs pages are themselves memory.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Bytes, Rule, Set


class PgDaxNoPageCache(Rule):
    id = "PM011"
    title = "PostgreSQL on DAX: shared_buffers is the only cache; random reads are cheap"
    insights = ("H6", "K23-11")
    paper = "K23 §2.1, §4.2, §4.3, §7.1 (iii)"
    priority = PRIORITY_SPEED
    engines = ("postgres",)

    def condition(self, f):
        return f.data is not None and f.data.page_cache_bypassed

    def effects(self, f):
        out = [Set("random_page_cost", 1.0,
                   "PMEM: random >= 8 KB reads are near-sequential (K23 §4.2-4.3)"),
               Bound("random_page_cost", 1.0, 2.0, reason="PMEM random ~ sequential")]
        if f.data.dax_on:  # real DAX: nothing caches outside shared_buffers
            ram = f.memory_bytes
            shared = ram * 2 // 5
            out += [Set("shared_buffers", Bytes(shared),
                        "DAX: no page cache, so 40% of RAM (pgtune's 25% assumes the page "
                        "cache holds the rest)"),
                    Bound("shared_buffers", Bytes(ram // 4), Bytes(ram * 3 // 5),
                          reason="25-60% of RAM under DAX"),
                    Set("effective_cache_size", Bytes(shared),
                        "DAX: only shared_buffers caches pages (no OS page cache)")]
        return out


RULE = PgDaxNoPageCache()
