"""PM020 InnoDB page cleaners: 4-6 writers per PMEM socket.

Anti-pattern: more page-cleaner (flusher) threads than PMEM can absorb. D21: 4 threads
saturate a socket's PMEM write bandwidth, 4-6 keep it for large writes, more harm it
(insight #7, best practice 2); K23 §5.1: MySQL gains on PMEM because it writes with few
threads.

Recommendation: innodb_page_cleaners 4, searched 1..6 per PMEM socket (MariaDB >= 10.6 has a
single cleaner and no such knob; the rule is then skipped).
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Rule, Set


class MysqlPageCleaners(Rule):
    id = "PM020"
    title = "innodb_page_cleaners limited to 4-6 per PMEM socket"
    insights = ("D21-1", "K23-8")
    paper = "D21 §4.2, insight #7, best practice 2; K23 §5.1"
    priority = PRIORITY_SPEED
    engines = ("mysql",)

    def condition(self, f):
        return f.data_on_pmem and not (f.mariadb and f.version_at_least(10, 6))

    def effects(self, f):
        hi = 6 * max(1, len(f.pmem_nodes))
        return [Set("innodb_page_cleaners", 4,
                    "4 writer threads saturate a socket's PMEM (D21 insight #7)"),
                Bound("innodb_page_cleaners", 1, hi, reason="4-6 writers per PMEM socket")]


RULE = MysqlPageCleaners()
