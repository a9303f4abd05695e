"""PM015 PostgreSQL on PMEM: keep full_page_writes and fsync on.

Anti-pattern: ``full_page_writes = off`` (or ``fsync = off``) because PMEM "is memory". DAX
gives 8-byte failure atomicity only; sector (BTT) mode gives sector atomicity but no DAX
(H4). An 8 KB page can tear on power loss, and only full-page images repair it; fsync still
persists the filesystem metadata.

Recommendation: keep both on (the safe defaults); ``check`` fails a config that turns them off.
"""

from pmem_advisor.rules.model import PRIORITY_SAFETY, Rule, Set


class PgFullPageWritesOn(Rule):
    id = "PM015"
    title = "full_page_writes and fsync stay on: DAX pages can tear"
    insights = ("H4",)
    paper = "D21 §2.1 and kernel dax/btt docs (beyond the papers)"
    priority = PRIORITY_SAFETY
    engines = ("postgres",)
    check_severity = "fail"

    def condition(self, f):
        return f.any_pmem_path

    def effects(self, f):
        return [Set("full_page_writes", "on",
                    "DAX has 8-byte failure atomicity only: 8 KB pages can tear on power loss"),
                Set("fsync", "on", "fsync persists filesystem metadata even under DAX")]


RULE = PgFullPageWritesOn()
