"""PM026 InnoDB on PMEM: the redo log's size sets the checkpoint rate (PM013's analogue).

Anti-pattern: a small redo log on PMEM. K23 ran MySQL with the default log buffer and log file
sizes (48 MB x 2 files in 8.0), which made it checkpoint about every second (K23 §3.1); its
MySQL PMEM results are measured under that stress. For PostgreSQL the same kind of frequent
checkpoints was the bottleneck at many clients and a larger max_wal_size gave up to x2.37
(K23 §5.3.7, Table 7, PM013). No paper measured a larger InnoDB redo log on PMEM, so no gain is
claimed: the rule keeps the dedicated-server size and lets the tuner search larger ones.

Recommendation: search the redo capacity from the baseline up to 4x it (at most 64 GB; MySQL
8.0.30+ ``innodb_redo_log_capacity``, MariaDB ``innodb_log_file_size``; before 8.0.30 the file
size, fixed at restart).
"""

from pmem_advisor.engines.mysql.baseline import redo
from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Bytes, Note, Rule

GB = 1 << 30


class InnodbRedoCheckpointsOnPmem(Rule):
    id = "PM026"
    title = "InnoDB redo size on PMEM: search larger logs (fewer checkpoints)"
    insights = ("K23-17", "K23-6")
    paper = "K23 §3.1, §5.3.7, Table 7"
    priority = PRIORITY_SPEED
    engines = ("mysql",)

    def condition(self, f):
        return f.data_on_pmem

    def effects(self, f):
        out = []
        for name, value in redo(f).items():
            if not isinstance(value, Bytes):
                continue
            hi = min(max(4 * value.n, 1 * GB), 64 * GB)
            out.append(Bound(name, value, Bytes(hi),
                             reason="fewer checkpoints on PMEM: K23's MySQL checkpointed every "
                                    "second with 48 MB x 2 redo (§3.1)"))
        out.append(Note("info", "redo log",
                        "K23 measured MySQL on PMEM with a 96 MB redo log (a checkpoint about "
                        "every second, §3.1); for PostgreSQL rarer checkpoints gave up to x2.37 "
                        "at 128 clients (Table 7). A larger redo log is the InnoDB analogue; no "
                        "paper measured its gain, so the tuner searches it"))
        return out


RULE = InnodbRedoCheckpointsOnPmem()
