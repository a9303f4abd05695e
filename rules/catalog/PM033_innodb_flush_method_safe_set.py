"""PM033 InnoDB flush method: searched within the durable set only.

Anti-pattern: searching every ``innodb_flush_method``. ``nosync`` and ``littlesync`` are for
testing and lose data on a crash; ``O_DIRECT_NO_FSYNC`` skips the data-file fsync at
checkpoints (K23 §5.3.4, insight K23-9: the speed it buys on PMEM is a durability risk) and on
MariaDB 11.0.6+ maps to ``innodb_doublewrite=fast`` (MySQL 8.0 manual and MariaDB KB
``innodb_flush_method``). Among the durable methods the best one depends on the medium and the
page cache (O_DIRECT avoids double caching, fsync keeps the OS cache, O_DSYNC writes through),
so the tuner may choose, and the doublewrite buffer stays on (PM016, the catalog's risky
values).

Recommendation: bound ``innodb_flush_method`` to fsync, O_DSYNC and O_DIRECT (MySQL, and
MariaDB before 11.0, which deprecated it).
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Rule

SAFE_METHODS = ("fsync", "O_DSYNC", "O_DIRECT")


class InnodbFlushMethodSafeSet(Rule):
    id = "PM033"
    title = "innodb_flush_method searched within the durable methods"
    insights = ("K23-9",)
    paper = "K23 §5.3.4; MySQL 8.0 manual and MariaDB KB, innodb_flush_method"
    priority = PRIORITY_SPEED
    engines = ("mysql",)

    def condition(self, f):
        return f.workload in ("oltp", "mixed") and not (f.mariadb and f.version_at_least(11, 0))

    def effects(self, f):
        return [Bound("innodb_flush_method", values=SAFE_METHODS,
                      reason="durable methods only: nosync/littlesync lose data, "
                             "O_DIRECT_NO_FSYNC skips the data-file fsync (K23-9)")]


RULE = InnodbFlushMethodSafeSet()
