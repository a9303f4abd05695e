"""PM024 MariaDB memory-maps its redo log on DAX: log buffering knobs do nothing there.

Anti-pattern: tuning ``innodb_log_file_buffering`` / ``innodb_log_buffer_size`` for a redo log
on a ``-o dax`` mount. MariaDB >= 10.8 memory-maps ib_logfile0 there (and treats /dev/shm as
such since 10.11.11), so writes go straight to PMEM without the page cache (H6, beyond the
papers); 10.11.11 also carries PMEM fixes.

Recommendation: leave those knobs alone and run MariaDB >= 10.11.11 for a redo log on PMEM.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule


class MariadbLogOnDax(Rule):
    id = "PM024"
    title = "MariaDB redo log on DAX is memory-mapped"
    insights = ("H6",)
    paper = "MariaDB innodb_log_file_mmap docs (beyond the papers)"
    priority = PRIORITY_SPEED
    engines = ("mysql",)

    def condition(self, f):
        return f.mariadb and f.wal is not None and f.wal.page_cache_bypassed

    def effects(self, f):
        out = [Note("info", f"wal:{f.wal.path}",
                    "MariaDB memory-maps ib_logfile0 on a DAX mount (and /dev/shm since "
                    "10.11.11): innodb_log_file_buffering and the log buffer size matter little")]
        if f.version_below(10, 11, 11):
            out.append(Note("warn", "version",
                            f"MariaDB {f.version} predates 10.11.11 and its PMEM log fixes",
                            "upgrade to MariaDB 10.11.11 or later"))
        return out


RULE = MariadbLogOnDax()
