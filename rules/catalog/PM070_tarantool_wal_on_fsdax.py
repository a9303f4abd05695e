"""PM070 Tarantool on a PMEM host: the WAL on fsdax is the cheap first step.

Anti-pattern: Tarantool on a host with an fsdax PMEM mount, still writing its WAL (.xlog) to a
disk. I17 measured Tarantool with data in DRAM and the WAL on a 1 TB SATA HDD: at 50% writes
WAL-fsync ran at 35% of the log-free throughput; WAL-nowrite (log entries created, never
written), the stand-in for a log on PM, recovered most of it (I17 §5.3, Fig. 2). Moving the
data itself needs a libpmemobj-modified Tarantool (I17 §4.2); moving wal_dir needs nothing.

Recommendation: wal_dir on the fsdax mount (memtx data stays in DRAM, snapshots may stay on
disk); keep wal_mode = 'fsync' there (PM071). When the WAL already is on PMEM the rule bounds
nothing and says so; when it is tmpfs, it says that tmpfs only stands in for PMEM.
"""

from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, Rule


class TarantoolWalOnFsdax(Rule):
    id = "PM070"
    title = "Tarantool: WAL on fsdax first"
    insights = ("I17-2", "I17-1")
    paper = "I17 §5.3, Fig. 2; §4.2"
    priority = PRIORITY_PLACEMENT
    engines = ("tarantool",)

    def condition(self, f):
        return bool(f.pmem_mounts) and not f.wal_on_pmem

    def effects(self, f):
        mp = f.pmem_mounts[0].get("mountpoint")
        where = f.wal.medium if f.wal is not None else "the disk"
        return [Note("warn", "wal_dir",
                     f"the WAL is on {where} while {mp} is PMEM: I17 saw Tarantool at 35% of "
                     "its log-free throughput at 50% writes with the WAL on disk, mostly "
                     "recovered without the log I/O (I17 §5.3, Fig. 2); moving the WAL needs "
                     "no engine change, moving the data does (libpmemobj, I17 §4.2)",
                     f"set wal_dir to a directory under {mp} (fsdax, mounted -o dax) and "
                     "keep wal_mode = 'fsync'")]


RULE = TarantoolWalOnFsdax()
