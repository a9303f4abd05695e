"""PM054 DuckDB on PMEM: scans gain about 2x, CPU-heavy joins gain nothing.

What to expect, so a DBA does not buy PMEM for the wrong queries. K23 §4.5.3: DuckDB's scan
of lineitem took 2.6 s on PMEM against 5 s on the SSD in Q1 ("a 2x performance increase, much
less than our microbenchmarks suggest"), 3.5 s against 7.5 s in Q19; but CPU-heavy index
joins and hash group-bys gain nothing or lose: Q2 ran the same, and in Q15 those operators
took 23 s on PMEM against 20 s, "covering PMEM's bandwidth advantage completely". Without DMA
in AppDirect the CPU does the I/O (K23 §4.1, K23-13), and DuckDB's compressed columns keep I/O
off the critical path.

Conditions: K23 ran DuckDB v0.6.1 on TPC-H SF100 with 48 logical cores of one socket and an
SSD baseline; a smaller data set that fits the buffer manager gains less still.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule


class DuckdbScansGainJoinsDont(Rule):
    id = "PM054"
    title = "DuckDB on PMEM: expect ~2x on scans, nothing on CPU-heavy joins"
    insights = ("K23-13",)
    paper = "K23 §4.5.3 (Q1, Q2, Q15, Q19), §4.1"
    priority = PRIORITY_SPEED
    engines = ("duckdb",)

    def condition(self, f):
        return f.data_on_pmem and f.workload in ("olap", "mixed")

    def effects(self, f):
        emulated = (" Here the 'PMEM' is tmpfs (DRAM) standing in for it: the measured gain "
                    "is DRAM's, not PMEM's." if f.emulated else "")
        return [Note("info", "expected gain",
                     "K23 §4.5.3 (DuckDB v0.6.1, TPC-H SF100): scans about 2x faster than on "
                     "an SSD (Q1 lineitem 2.6 s vs 5 s, Q19 3.5 s vs 7.5 s); CPU-heavy index "
                     "joins and hash group-bys gain nothing (Q2 equal, Q15 23 s vs 20 s) "
                     "because the CPU does the PMEM I/O." + emulated)]


RULE = DuckdbScansGainJoinsDont()
