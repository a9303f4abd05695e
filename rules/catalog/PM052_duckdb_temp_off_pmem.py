"""PM052 DuckDB's spill files off PMEM.

Anti-pattern: DuckDB's default temp_directory, ``<database file>.tmp``, next to a database
on PMEM: hash joins, sorts and aggregates beyond memory_limit then write their spill files to
PMEM, whose writes are its weak side. K23 measured it with PostgreSQL on TPC-H Q15: lineitem
read at up to 4 GB/s while temporary data was written at only 1 GB/s, and concludes "we need
to increase the working memory or use a separate storage drive for temporary writes" (K23
§4.5.1, K23-16; Table 4: 0.83 GB/s random and 2.4 GB/s sequential PMEM writes against
12.6 GB/s reads). The paper measured PostgreSQL's temporary files, not DuckDB's; DuckDB's
spills are the same kind of write.

Recommendation: ``SET temp_directory`` to a directory on an SSD (not PMEM, not tmpfs, which
is RAM) and let memory_limit be as large as the budget allows (PM053). ``check`` warns when
a config's temp_directory is on PMEM.
"""

import os

from pmem_advisor.rules.facts import resolve_path
from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule


class DuckdbTempOffPmem(Rule):
    id = "PM052"
    title = "DuckDB spill files (temp_directory) off PMEM: PMEM writes are slow"
    insights = ("K23-16",)
    paper = "K23 §4.5.1 (TPC-H Q15), Table 4"
    priority = PRIORITY_SPEED
    engines = ("duckdb",)

    def condition(self, f):
        return f.data_on_pmem and f.workload in ("olap", "mixed")

    def effects(self, f):
        return [Note("info", "spill files",
                     "DuckDB spills to <database>.tmp beside the data, here on PMEM, whose "
                     "writes are slow (K23 §4.5.1: 1 GB/s temporary writes against 4 GB/s "
                     "reads in TPC-H Q15)",
                     "SET temp_directory = '/ssd/duckdb_tmp'; (a directory on an SSD)")]

    def check_config(self, f, config, effects, same_value):
        path = str(config.get("temp_directory") or "").strip()
        if not path or not os.path.isabs(path):
            return []
        where = resolve_path(f.profile, path, "data")
        if not where.is_pmem:
            return []
        return [self.finding("warn", "temp_directory",
                             f"temp_directory {path} is on {where.medium} "
                             f"({where.mountpoint}): spills write to PMEM slowly "
                             "(K23 §4.5.1)", "SET temp_directory to a directory on an SSD")]


RULE = DuckdbTempOffPmem()
