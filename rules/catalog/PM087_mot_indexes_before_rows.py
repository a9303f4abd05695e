"""PM087 openGauss MOT on PMEM memory: indexes before rows, and enough DRAM beside them.

Anti-pattern: moving MOT's rows to PMEM first, or all of it with too little DRAM left. A21
§4.2, Fig. 4 (MOT TPC-C microbenchmark, one socket): indexes alone on PMEM ran faster than
rows alone on PMEM, because index accesses are short and hot inner nodes hide the leaves'
cache misses; but indexes are only ~30% of the database, so PMEM stays underused. The
read-oriented mix ran at DDR-comparable speed even with everything on PMEM; NewOrder's
inserts hit PMEM's bandwidth first. A21 §3.1: cold PMEM accesses can be an order of magnitude
slower, hot ones with a little work between them come close to DDR. MOT's private OCC copies
are DDR allocations (A21 §3.2).

Recommendation: where placement can be chosen, indexes go to PMEM before rows; keep the DRAM
that transaction-private memory needs (openGauss: ``max_mot_local_memory``) and expect
write-heavy mixes to be bandwidth bound. Through kmem the kernel places pages, not MOT, so
this is a sizing note rather than a knob.
"""

from pmem_advisor.rules.catalog.PM080_advice_conditions_differ import (
    conditions_sentence,
    far_memory,
)
from pmem_advisor.rules.model import PRIORITY_SPEED, Note, Rule


class MotIndexesBeforeRows(Rule):
    id = "PM087"
    title = "openGauss MOT: indexes on PMEM before rows, DRAM for the hot rest"
    insights = ("A21-2",)
    paper = "A21 §3.1, §3.2, §4.2, Fig. 4"
    priority = PRIORITY_SPEED
    engines = ("opengauss_mot",)

    def condition(self, f):
        return far_memory(f)

    def effects(self, f):
        caveat = conditions_sentence(f)
        heavy = f.workload in ("oltp", "kv")
        return [Note("info", "placement",
                     "A21 §4.2: indexes alone on PMEM beat rows alone on PMEM (short accesses, "
                     "hot inner nodes), but indexes are only ~30% of the database; the "
                     "read-oriented mix ran at DDR-comparable speed all on PMEM, inserts hit "
                     "its bandwidth first"
                     + ("; this OLTP load is insert-heavy if it is TPC-C-like" if heavy else "")
                     + (f" ({caveat})" if caveat else ""),
                     "indexes to PMEM before rows where placement can be chosen; leave DRAM for "
                     "MOT's transaction-local memory (max_mot_local_memory) and hot rows: "
                     "through kmem the kernel, not MOT, places the pages")]


RULE = MotIndexesBeforeRows()
