"""PM072 Tarantool: data on persistent memory pays only under I17's conditions; say which differ.

Anti-pattern: expecting I17's "data on PM beats DRAM + WAL" on a stock Tarantool, a read-mostly
workload or hardware unlike the paper's. I17 (§5.3, Fig. 2-3): at 4x DRAM latency, data on PM
without a log beat DRAM + WAL-fsync only above ~20% writes (and lost clearly at 0-10%); at 50%
writes PM gave +38% (2x latency) and +25% (4x); even at 8x latency PM paid above ~60% writes.
Those runs used a Tarantool modified with libpmemobj (I17 §4.2), a WAL on a 1 TB SATA HDD and
PM emulated by DRAM throttled to 2x/4x/8x latency and 1/4 bandwidth (I17 §3.3, Table 2).

Recommendation: keep memtx data in DRAM and put the WAL on fsdax (PM070); consider data on PM
only with a PM-native engine and a write share above the paper's break-even. Every condition of
the paper that does not hold here is said: a WAL on a faster medium than an HDD (logging costs
less, so the break-even write share is higher), real PMEM instead of throttled DRAM (reads
closer to DRAM speed, I17 §5.3), tmpfs (DRAM speed: it shows the log's cost, not PM's).
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule


def _pmem_host(f) -> bool:
    return bool(f.pmem_mounts) or f.pmem_mode not in ("none", None) or f.any_pmem_path


class TarantoolDataOnPmConditions(Rule):
    id = "PM072"
    title = "Tarantool: data on PM only above a write share, under the paper's conditions"
    insights = ("I17-1",)
    paper = "I17 §5.3, Fig. 2-3; §4.2; §3.3, Table 2"
    priority = PRIORITY_SPEED
    engines = ("tarantool",)

    def condition(self, f):
        return _pmem_host(f)

    def effects(self, f):
        out = [Note(
            "info", "data placement",
            "I17: data on PM without a log beat DRAM + WAL-fsync only above ~20% writes at 4x "
            "DRAM latency (+38% at 2x, +25% at 4x with 50% writes; above ~60% writes even at "
            "8x) and lost at 0-10% writes (I17 §5.3, Fig. 2-3); its PM runs needed a "
            "libpmemobj-modified Tarantool (§4.2): stock Tarantool keeps memtx in volatile "
            "memory and still needs the WAL, whatever memory backs it",
            "keep memtx_memory in DRAM and the WAL on fsdax (PM070); YCSB-A (50% writes) is "
            "above the break-even, YCSB-B (5%) and C (0%) below it")]
        wal = f.wal
        if wal is not None and wal.medium != "hdd":
            what = "tmpfs (memory)" if wal.emulated_pmem else wal.medium
            out.append(Note(
                "info", "paper conditions: WAL medium",
                f"I17's WAL was on a 1 TB SATA HDD (Table 2); this WAL is on {what}: logging "
                "costs less than the paper measured, so data on PM breaks even at a higher "
                "write share than its ~20%"))
        if f.emulated:
            out.append(Note(
                "warn", "paper conditions: emulation",
                "tmpfs runs at DRAM speed: unlike I17's throttled DRAM (2x/4x/8x latency, 1/4 "
                "bandwidth, §3.3) it does not emulate PM's access cost, so a run here shows the "
                "log's cost only"))
        elif f.pmem_mounts or f.pmem_mode not in ("none", None):
            out.append(Note(
                "info", "paper conditions: real PMEM",
                "I17 emulated PM by throttling DRAM (2x/4x/8x latency, 1/4 bandwidth, §3.3); "
                "real PMEM reads are closer to DRAM (the paper expects PM-4x to do better on "
                "real PM, §5.3): measure with `tune tarantool` before moving data"))
        return out


RULE = TarantoolDataOnPmConditions()
