"""PM013 PostgreSQL on PMEM: checkpoints are the bottleneck at high client counts.

Anti-pattern: the default 1 GB ``max_wal_size`` / 5 min ``checkpoint_timeout`` on PMEM. K23
Table 7: on interleaved PMEM, raising ``max_wal_size`` took TPC-C at 128 clients from 477 to
1132 (x100K tpmC), more than 2x, bounded then by PMEM bandwidth (K23 §5.3.7).

Recommendation: max_wal_size at least 16 GB (twice the baseline), checkpoint_timeout 15 min,
and let the tuner search max_wal_size 1-64 GB and checkpoint_timeout 5-60 min.
"""

from pmem_advisor.rules.baseline.postgres import WAL_SIZES
from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Bytes, Rule, Seconds, Set

GB = 1 << 30


class PgCheckpointsOnPmem(Rule):
    id = "PM013"
    title = "Fewer checkpoints on PMEM: raise max_wal_size and search it"
    insights = ("K23-6",)
    paper = "K23 §5.3.7, Table 7"
    priority = PRIORITY_SPEED
    engines = ("postgres",)

    def condition(self, f):
        return f.any_pmem_path

    def effects(self, f):
        hi = 64 * GB
        cap = f.pmem_capacity_bytes
        if cap and f.data_on_pmem and not f.emulated:
            hi = max(2 * GB, min(hi, cap // 4))  # WAL must fit beside the data on PMEM
        if f.emulated:  # tmpfs WAL lives in RAM: keep it well inside memory
            hi = max(1 * GB, min(hi, f.memory_bytes // 8))
        size = min(max(2 * WAL_SIZES[f.workload][1], 16 * GB), hi)
        return [Set("max_wal_size", Bytes(size),
                    "PMEM: checkpoints bound tpmC at many clients; a larger max_wal_size gave "
                    ">2x at 128 clients (K23 Table 7)", gain=">2x tpmC at 128 clients"),
                Set("min_wal_size", Bytes(min(WAL_SIZES[f.workload][0], size // 2)),
                    "keep min_wal_size below max_wal_size"),
                Set("checkpoint_timeout", Seconds(900), "fewer checkpoints on PMEM (K23 §5.3.7)"),
                Bound("max_wal_size", Bytes(1 * GB), Bytes(hi), reason="K23 §5.3.7"),
                Bound("checkpoint_timeout", Seconds(300), Seconds(3600), reason="K23 §5.3.7")]


RULE = PgCheckpointsOnPmem()
