"""PM061 RocksDB background jobs: 4-6 writers per PMEM socket.

Anti-pattern: one flush/compaction thread per core (RocksDB's IncreaseParallelism, our
baseline) on PMEM. Flushes and compactions are RocksDB's big sequential writers; D21 found
that 4 threads saturate one socket's PMEM write bandwidth, 4-6 keep it for large writes and
more harm it (D21 §4.2, insight #7, best practice 2); K23 §7.1 (v): on PMEM "the number of
(write) threads has to be carefully tuned to avoid interference".

Recommendation: max_background_jobs 4 per socket that holds PMEM (at most the CPUs the
budget gives), searched 1..6 per socket. Conditions differ: D21 measured raw PMEM writes
with its own microbenchmark, not RocksDB.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Rule, Set


def sockets(f) -> int:
    return max(1, len(f.pmem_nodes))


class RocksDBBackgroundJobs(Rule):
    id = "PM061"
    title = "max_background_jobs: 4-6 writers per PMEM socket"
    insights = ("D21-1", "K23-12")
    paper = "D21 §4.2, insight #7, best practice 2; K23 §7.1 (v)"
    priority = PRIORITY_SPEED
    engines = ("rocksdb",)

    def condition(self, f):
        return f.data_on_pmem

    def effects(self, f):
        n = sockets(f)
        jobs = min(4 * n, max(2, f.cpus))
        return [Set("max_background_jobs", jobs,
                    f"4 writer threads per PMEM socket saturate its write bandwidth, more harm "
                    f"it (D21 insight #7); {n} socket(s)"
                    + ("" if jobs == 4 * n else f", capped at the {f.cpus} CPUs of the budget")),
                Bound("max_background_jobs", 1, 6 * n, reason="4-6 writers per PMEM socket")]

    def check_config(self, f, config, effects, same_value):
        """A config is fine anywhere in 1..6 per socket; above it D21 saw writes degrade."""
        have = config.get("max_background_jobs")
        if not effects or have is None or not str(have).strip().lstrip("-").isdigit():
            return []
        hi = 6 * sockets(f)
        if int(have) <= hi:
            return []
        return [self.finding("warn", "max_background_jobs",
                             f"max_background_jobs is {have}: more than 6 writer threads per "
                             "PMEM socket harm its write bandwidth (D21 insight #7)",
                             f"set max_background_jobs = {min(4 * sockets(f), hi)}")]


RULE = RocksDBBackgroundJobs()
