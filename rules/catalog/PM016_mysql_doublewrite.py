"""PM016 MySQL/MariaDB doublewrite on PMEM: the gain is real, the risk too.

Anti-pattern: switching ``innodb_doublewrite`` off silently for speed. K23 saw up to +20% tpmC
in AppDirect with doublewrite off and no change on SSD (K23 §5.3.2, Fig. 6), but DAX has no
sector atomicity: a 16 KB page can tear on power loss and only the doublewrite copy repairs it.

Neither MySQL's ``DETECT_ONLY`` (detects a torn page, cannot repair it) nor MariaDB's ``fast``
(ON without the fsync of the data files; MariaDB's own note says it may or may not be safe,
MDEV-33545; only 11.0.6+ and 11.4.2+ have it) is a safe substitute: the catalogs class both as
durability risks.
Recommendation: keep it ON; OFF (or MariaDB's ``fast``) only with ``--allow-unsafe``, reported
with the +20% it would give.
"""

from pmem_advisor.rules.model import PRIORITY_SAFETY, Rule, Set


class MysqlDoublewrite(Rule):
    id = "PM016"
    title = "innodb_doublewrite stays on on PMEM unless --allow-unsafe"
    insights = ("K23-7",)
    paper = "K23 §5.3.2, Fig. 6"
    priority = PRIORITY_SAFETY
    engines = ("mysql",)

    def condition(self, f):
        return f.data_on_pmem

    def _safe_value(self, f):
        return "ON"

    def _has_fast(self, f):
        """MariaDB's catalog for this version lists `fast` (11.0.6+, 11.4.2+; not 11.4.0-1)."""
        if not f.mariadb:
            return False
        from pmem_advisor.knobs.catalog import load_catalog

        knob = load_catalog("mysql", "mariadb", f.version).get("innodb_doublewrite")
        return "fast" in knob.values

    def effects(self, f):
        # order matters: among equal priorities the first listed wins when it is allowed
        return [Set("innodb_doublewrite", "OFF",
                    "doublewrite off on PMEM: up to +20% tpmC (K23 Fig. 6), but 16 KB pages can "
                    "tear on power loss (DAX has no sector atomicity)",
                    unsafe=True, gain="up to +20% tpmC in AppDirect (K23 §5.3.2)"),
                *([Set("innodb_doublewrite", "fast",
                       "MariaDB fast: doublewrite without the fsync of the data files; MariaDB "
                       "says it may or may not be safe (MDEV-33545)", unsafe=True,
                       gain="not measured by any of the papers")]
                  if self._has_fast(f) else []),
                Set("innodb_doublewrite", self._safe_value(f),
                    "keep torn-page protection on PMEM (DAX has no sector atomicity)")]

    def check_config(self, f, config, effects, same_value):
        have = config.get("innodb_doublewrite")
        if not f.data_on_pmem or have is None:
            return []
        if same_value("innodb_doublewrite", have, "OFF"):
            return [self.finding("warn", "innodb_doublewrite",
                                 "innodb_doublewrite is OFF on PMEM: up to +20% tpmC (K23) but "
                                 "torn 16 KB pages are unrecoverable after a power loss",
                                 f"set innodb_doublewrite = {self._safe_value(f)}")]
        return []


RULE = MysqlDoublewrite()
