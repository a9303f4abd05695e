"""PM073 Tarantool with its WAL on PMEM: bound the WAL kept there by checkpoints.

Anti-pattern: a WAL on a PMEM namespace with Tarantool's default checkpoint_wal_threshold
(10^18 bytes: never). PM's capacity is much smaller than storage's (I17 §3.2: the reason the
paper pairs hybrid memory with disks), and .xlog files accumulate between hourly snapshots;
with checkpoint_count = 2 the files back to the older snapshot stay. A full WAL device stops
every write.

Recommendation: checkpoint_wal_threshold = 1/4 of the WAL device, so the WAL kept for two
checkpoints stays near half of it; the tuner searches at most that.
"""

from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Bound, Bytes, Rule, Set, human_bytes

GB = 1 << 30


def wal_capacity(f) -> int | None:
    if f.wal is not None and f.wal.size_bytes:
        return int(f.wal.size_bytes)
    return f.pmem_capacity_bytes or None


class TarantoolBoundWalOnPmem(Rule):
    id = "PM073"
    title = "Tarantool: bound the WAL on small PMEM with checkpoint_wal_threshold"
    insights = ("I17-2",)
    paper = "I17 §3.2"
    priority = PRIORITY_PLACEMENT
    engines = ("tarantool",)

    def condition(self, f):
        return f.wal_on_pmem and wal_capacity(f) is not None

    def effects(self, f):
        cap = wal_capacity(f)
        limit = max(GB // 4, cap // 4)
        why = (f"the WAL is on {f.wal.medium} of {human_bytes(cap)}; PM is much smaller than "
               "storage (I17 §3.2): a snapshot after 1/4 of it keeps the WAL of two "
               "checkpoints near half the device")
        return [Set("checkpoint_wal_threshold", Bytes(limit), why),
                Bound("checkpoint_wal_threshold", lo=Bytes(min(limit, 256 << 20)),
                      hi=Bytes(limit), reason=why)]


RULE = TarantoolBoundWalOnPmem()
