"""PM029 In-memory engines: the WAL on fsdax is the cheap first step.

Anti-pattern: an in-memory engine on a PMEM host still logging to an SSD. For persistent
in-memory engines (I17 measured Tarantool) the write-ahead log is the cost: at 50% writes its
throughput fell to 35% of running without a log; removing the log's I/O (WAL-nowrite, the
stand-in for a log on PM) recovered most of it, and creating the entries is a smaller cost than
placing the data itself on PM (I17 §5.3, Fig. 2). Moving all data onto PM pays only at high
write ratios and needs engine changes (libpmemobj).

Recommendation (a host note; PostgreSQL and MySQL keep their data in files, see K23-2/PM002):
for in-memory engines put the WAL on an fsdax mount first; consider data on PM only for
write-heavy work.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule


class InMemoryWalOnFsdax(Rule):
    id = "PM029"
    title = "In-memory engines: WAL on fsdax first"
    insights = ("I17-2", "I17-1")
    paper = "I17 §5.3, Fig. 2-3"
    priority = PRIORITY_SPEED
    engines = ()

    def condition(self, f):
        return f.engine is None and bool(f.pmem_mounts)

    def effects(self, f):
        mp = f.pmem_mounts[0].get("mountpoint")
        return [Note("info", "in-memory engines",
                     "for an in-memory engine (Tarantool, Redis AOF and the like) the log's I/O "
                     "is the cost: I17 saw 35% of log-free throughput at 50% writes, mostly "
                     "recovered without the log I/O (I17 §5.3)",
                     f"put its WAL/append-only file under {mp} (fsdax) first")]


RULE = InMemoryWalOnFsdax()
