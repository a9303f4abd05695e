"""PM019 InnoDB page size >= 8 KB on PMEM.

Anti-pattern: ``innodb_page_size = 4k`` on PMEM. Random reads of >= 8 KB blocks get
near-sequential PMEM bandwidth and index lookups ran ~10x faster than on SSD (K23 §4.2, §4.3);
PMEM favours the largest possible random access (D21 insight #12) and its media granularity
is 256 B (H1), so small pages only add requests. PostgreSQL's 8 KB BLCKSZ is fine.

Recommendation: keep 16 KB (searched 8-64 KB, never 4 KB; set at initialisation).
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Rule

KB = 1024


class InnodbPageSize(Rule):
    id = "PM019"
    title = "innodb_page_size at least 8 KB on PMEM"
    insights = ("K23-11", "D21-2", "H1")
    paper = "K23 §4.2, §4.3; D21 §5.2, insight #12"
    priority = PRIORITY_SPEED
    engines = ("mysql",)

    def condition(self, f):
        return f.data_on_pmem

    def effects(self, f):
        return [Bound("innodb_page_size", values=(8 * KB, 16 * KB, 32 * KB, 64 * KB),
                      reason="never 4 KB on PMEM: >= 8 KB random reads are near-sequential")]

    def check_config(self, f, config, effects, same_value):
        have = config.get("innodb_page_size")
        if not f.data_on_pmem or have is None:
            return []
        text = str(have).strip().lower().rstrip("b")
        size = int(text[:-1]) * KB if text.endswith("k") else int(text) if text.isdigit() else 0
        if 0 < size < 8 * KB:
            return [self.finding("warn", "innodb_page_size",
                                 f"innodb_page_size is {have} on PMEM: >= 8 KB random reads get "
                                 "near-sequential bandwidth (K23 §4.2)",
                                 "re-initialise with innodb_page_size = 16k")]
        return []


RULE = InnodbPageSize()
