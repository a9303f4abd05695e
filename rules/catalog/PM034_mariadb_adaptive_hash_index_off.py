"""PM034 MariaDB 10.5+: the adaptive hash index stays off, and is not searched.

Anti-pattern: searching ``innodb_adaptive_hash_index`` on MariaDB 10.5 and later. MariaDB
turned it off by default in 10.5 and its documentation calls OFF "the recommended setting":
enabling it "can make server response time unpredictable" (MariaDB Enterprise docs,
``innodb_adaptive_hash_index``). The MySQL manual (8.4, "Adaptive Hash Index") names the
cause: access to the hash index "can sometimes become a source of contention under heavy
workloads", and asks to benchmark it both ways; MySQL 8.4 also made OFF the default.

Measured here (MariaDB 10.11.19, sysbench read-write, 1 GiB budget, disk): the rules' config
with the hash index on (and table_open_cache 944, the bench's pick) ran -6.1% [-11.7%, -0.1%]
over 3 rounds (p 0.05) in the real validation, but -0.3% [-8.2%, +8.1%] (p 0.92, no
significant difference) over 8 interleaved rounds asked again
(benchmarks/data/checks-2026-11-28/ahi-on-vs-rules-read-write.json); the surrogates of both
MariaDB scenarios call it neutral (within 0.5%). Neither the vendor nor this machine shows a
gain from it, so trials are not spent on it: the search dimension the measurements can resolve
is smaller by one.

Recommendation (MariaDB 10.5+, any workload): the search keeps the server's OFF (a bound of
one value pins a knob: it is not searched). MySQL is left to search it, as its manual asks.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Rule


class MariadbAdaptiveHashIndexOff(Rule):
    id = "PM034"
    title = "MariaDB 10.5+: the adaptive hash index stays off (not searched)"
    insights = ()
    paper = ("MariaDB docs, innodb_adaptive_hash_index (OFF recommended since 10.5); MySQL 8.4 "
             "manual, Adaptive Hash Index (contention under heavy workloads)")
    priority = PRIORITY_SPEED
    engines = ("mysql",)

    def condition(self, f):
        return f.mariadb and f.version_at_least(10, 5)

    def effects(self, f):
        return [Bound("innodb_adaptive_hash_index", values=(False,),
                      reason="MariaDB 10.5+ recommends OFF: the hash index makes response time "
                             "unpredictable under contention; no gain measured here")]


RULE = MariadbAdaptiveHashIndexOff()
