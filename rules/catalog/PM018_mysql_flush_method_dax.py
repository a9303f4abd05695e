"""PM018 MySQL flush method on PMEM: O_DIRECT_NO_FSYNC where it is safe, by flavour/version.

Anti-pattern: choosing the flush method as on SSD. On DAX, O_DIRECT adds nothing; K23 saw a
large gain from O_DIRECT_NO_FSYNC in AppDirect (overwrites use non-temporal stores, only an
sfence), negligible on SSD (K23 §5.3.4, Fig. 9). The paper contradicts itself in the same
section ("negligible, especially in AppDirect" and "large improvement in AppDirect"), so the
gain is reported as uncertain. Safety: MySQL >= 8.0.14 still fsyncs on file create/extend; it
is unsafe when redo and data are on different devices with volatile caches. MariaDB 10.11 skips
the data-file flush at checkpoints with it (as risky as in MySQL); 11.0 deprecated the knob and
11.0.6+ maps it to doublewrite=fast (a durability risk too, PM016).

Recommendation: O_DIRECT; O_DIRECT_NO_FSYNC (the catalog's durability risk) only with
``--allow-unsafe``. With redo and data both on PMEM and MySQL >= 8.0.14 the manual's hazard
(redo and data on different devices, one with a volatile write cache) is absent, not the risk:
the catalog still withholds the value, and the reason says which of the two holds.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule, Set

GAIN = ("uncertain: K23 §5.3.4 calls it both negligible and a large improvement in "
        "AppDirect (Fig. 9)")


class MysqlFlushMethodDax(Rule):
    id = "PM018"
    title = "innodb_flush_method on PMEM, flavour- and version-aware"
    insights = ("K23-9",)
    paper = "K23 §5.3.4, Fig. 9"
    priority = PRIORITY_SPEED
    engines = ("mysql",)

    def condition(self, f):
        return f.data_on_pmem

    def effects(self, f):
        if f.mariadb:
            if f.version_at_least(11, 0):
                return [Note("info", "innodb_flush_method",
                             "MariaDB 11 deprecated innodb_flush_method; its O_DIRECT_NO_FSYNC "
                             "maps to doublewrite=fast, a durability risk (PM016)")]
            return [Set("innodb_flush_method", "O_DIRECT_NO_FSYNC",
                        "O_DIRECT_NO_FSYNC on PMEM: MariaDB 10.11 then skips the data-file "
                        "flush at checkpoints, a durability risk as in MySQL",
                        unsafe=True, gain=GAIN),
                    Set("innodb_flush_method", "O_DIRECT",
                        "O_DIRECT: the safe choice (adds nothing on DAX, helps on SSD)")]
        both_pmem = f.wal_on_pmem and f.data_on_pmem
        if f.version_at_least(8, 0, 14) and both_pmem:
            # What is true of this placement: the hazard the manual names does not apply; what
            # remains is the paper's uncertain gain against skipping fsync on data writes.
            why = ("redo and data both on PMEM, where no device write cache can hold back a "
                   "data write, and MySQL >= 8.0.14 fsyncs on create/extend: the manual's "
                   "hazard (redo and data on different devices with volatile caches) is absent "
                   "here, but data writes still go unsynced")
            extra = False
        else:
            why = ("MySQL < 8.0.14 skips fsync after file extension" if f.version_below(8, 0, 14)
                   else "redo is not on PMEM: a volatile write cache can lose data writes")
            extra = True
        # the catalog classes O_DIRECT_NO_FSYNC as a durability risk: withheld unless allowed
        return [Set("innodb_flush_method", "O_DIRECT_NO_FSYNC",
                    f"O_DIRECT_NO_FSYNC on PMEM: overwrites need only an sfence; {why}",
                    unsafe=extra or None, gain=GAIN),
                Set("innodb_flush_method", "O_DIRECT",
                    "O_DIRECT: the safe choice (adds nothing on DAX, helps on SSD)")]

RULE = MysqlFlushMethodDax()
