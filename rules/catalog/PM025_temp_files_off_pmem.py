"""PM025 Temporary (spill) files off PMEM for analytic work.

Anti-pattern: sorts and hash joins that spill to temporary files on the PMEM that holds the
data. PMEM writes are its weak side (K23 Table 4: 0.83 GB/s random, 2.4 GB/s sequential writes
against 12.6 GB/s reads); in TPC-H Q15 PostgreSQL read lineitem at 4 GB/s but wrote its
temporary data at only 1 GB/s, and K23 concludes one should "increase the working memory or use
a separate storage drive for temporary writes" (K23 §4.5.1). Parallel workers writing sort runs
also slowed the scans (Q3).

Recommendation: for OLAP/mixed work with the data on PMEM, put temporary files on another
drive (PostgreSQL ``temp_tablespaces``, MySQL/MariaDB ``tmpdir``/``innodb_tmpdir``) and give the
tuner room for more work_mem (the worst-case memory fit still caps it).
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule


class TempFilesOffPmem(Rule):
    id = "PM025"
    title = "Temporary spill files off PMEM for OLAP (PMEM writes are slow)"
    insights = ("K23-16",)
    paper = "K23 §4.5.1 (TPC-H Q3, Q15), Table 4"
    priority = PRIORITY_SPEED

    def condition(self, f):
        return f.data_on_pmem and f.workload in ("olap", "mixed")

    def effects(self, f):
        if f.pg:
            fix = ("CREATE TABLESPACE temp_ssd LOCATION '/ssd/pg_temp'; then temp_tablespaces "
                   "= 'temp_ssd' (a directory on an SSD owned by postgres)")
        else:
            fix = "tmpdir = /ssd/mysql_tmp and innodb_tmpdir = /ssd/mysql_tmp (an SSD directory)"
        return [Note("info", "temp files",
                     "sorts and hash joins that spill write temporary files; on PMEM those "
                     "writes are slow (K23 §4.5.1: 1 GB/s temporary writes against 4 GB/s reads "
                     "in TPC-H Q15): more working memory or another drive for them", fix)]


RULE = TempFilesOffPmem()
