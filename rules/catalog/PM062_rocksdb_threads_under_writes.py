"""PM062 RocksDB on PMEM: a moderate number of threads once there are writes.

K23 §6: with YCSB A (50% updates) on App Direct, throughput fell heavily as threads grew: at
48 threads it dropped to the level of 16 threads; B (5% updates) plateaued too, and at 48
threads even its write latency rose above the SSD's; only read-only C kept scaling. K23's
conclusion: "mixed read-write workloads should keep a moderate number of threads" and "even a
low number of writes combined with a high number of threads can be problematic for PMEM"
(§6 Insights, §7.1 v). D21 insight #11: one writer cut read bandwidth from 31 to 26 GB/s.

Recommendation: a finding, not a knob (the application owns its threads): with more than 16
client threads on a workload with writes, warn and suggest measuring with `tune rocksdb
--workload ycsb-a --clients N`; without --clients, say what K23 saw. Conditions differ: K23
ran 2 x 24 cores with RocksDB 5.11; the knee moves with cores and PMEM DIMMs.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule

K23_KNEE = 16  # YCSB A at 48 threads fell back to the 16-thread level (K23 §6, Fig. 11)


class RocksDBThreadsUnderWrites(Rule):
    id = "PM062"
    title = "Moderate client threads for RocksDB on PMEM under writes (K23 §6)"
    insights = ("K23-12",)
    paper = "K23 §6, Fig. 11-12, §7.1 (v); D21 insight #11"
    priority = PRIORITY_SPEED
    engines = ("rocksdb",)

    def condition(self, f):
        return f.data_on_pmem and f.workload != "olap" and (f.clients or K23_KNEE + 1) > K23_KNEE

    def effects(self, f):
        if f.clients is None:
            return [Note("info", "clients",
                         "K23 §6: RocksDB YCSB-A on PMEM at 48 threads fell to its 16-thread "
                         "throughput; only read-only YCSB-C kept scaling",
                         "give --clients, and measure the thread count with `pmem-advisor tune "
                         "rocksdb --workload ycsb-a --clients N`")]
        return [Note("warn", "clients",
                     f"{f.clients} client threads with writes on PMEM: K23 §6 saw RocksDB "
                     "YCSB-A at 48 threads fall to its 16-thread throughput, and 5% writes "
                     "(YCSB-B) already plateau",
                     f"keep concurrent writers near {K23_KNEE}-32 in the application and measure "
                     f"with `pmem-advisor tune rocksdb --workload ycsb-a --clients {f.clients}`")]


RULE = RocksDBThreadsUnderWrites()
