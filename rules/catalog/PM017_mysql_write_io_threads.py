"""PM017 MySQL/MariaDB on PMEM: about 8 write I/O threads.

Anti-pattern: many InnoDB write threads on PMEM. K23: tpmC peaks at 8 write threads (sync I/O,
``innodb_use_native_aio=OFF``) and falls beyond (K23 §5.3.3, Fig. 7); D21: 4-6 writers per
socket saturate PMEM and more harm it through write-combining and iMC queue contention
(insight #7, best practice 2).

Recommendation: innodb_write_io_threads 4, searched 1..max(8, 6 per PMEM socket): K23's
optimum of 8 on one socket is always inside the range; search
innodb_use_native_aio on/off (K23's peak was with sync I/O).
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Rule, Set


class MysqlWriteIoThreads(Rule):
    id = "PM017"
    title = "innodb_write_io_threads bounded to 8 on PMEM"
    insights = ("K23-8", "D21-1")
    paper = "K23 §5.3.3, Fig. 7; D21 §4.2, insight #7"
    priority = PRIORITY_SPEED
    engines = ("mysql",)

    def _hi(self, f):
        # K23's measured optimum is 8 write threads on one socket (Fig. 7), so 8 is always in
        # the range; D21's 4-6 writers per socket saturate PMEM, so data and redo on the PMEM of
        # more sockets allow more
        used = {p.numa_node for p in f.placed if p.is_pmem and p.numa_node is not None}
        return max(8, 6 * max(1, len(used)))

    def condition(self, f):
        return f.data_on_pmem

    def effects(self, f):
        return [Set("innodb_write_io_threads", 4,
                    "4-6 writers saturate a socket's PMEM; more harm it (D21 insight #7)"),
                Bound("innodb_write_io_threads", 1, self._hi(f),
                      reason="tpmC peaks at 8 write threads (K23 Fig. 7)"),
                Bound("innodb_use_native_aio", values=("ON", "OFF"),
                      reason="K23's peak used sync I/O (native AIO off)")]

    def check_config(self, f, config, effects, same_value):
        have = config.get("innodb_write_io_threads")
        if not f.data_on_pmem or have is None:
            return []
        try:
            n = int(str(have).strip())
        except ValueError:
            return []
        if n > self._hi(f):
            return [self.finding("warn", "innodb_write_io_threads",
                                 f"innodb_write_io_threads is {n} on PMEM: tpmC falls beyond 8 "
                                 "write threads (K23 Fig. 7)",
                                 "set innodb_write_io_threads = 4 (at most 8)")]
        return []


RULE = MysqlWriteIoThreads()
