"""PM030 PostgreSQL 18 asynchronous I/O: it narrows the PMEM/SSD gap.

Anti-pattern: judging PMEM against an SSD that PostgreSQL reads synchronously. K23 traced much
of PMEM's lead in random-access queries to PostgreSQL's synchronous reads: "if Postgres adopts
asynchronous I/O, the performance difference between the two modes would be negligible" (K23
§4.5.1, Q17; §7.1 ii). PostgreSQL 18 has it (``io_method`` worker, the default, or io_uring).

Recommendation: on PostgreSQL 18 search ``io_method`` (sync/worker/io_uring where built) and
``io_workers``; before buying PMEM for a random-read workload, compare with the data on SSD
under io_method=worker. On 13-17 the note says 18 changes the comparison.
"""

from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Note, Rule


class PgAsyncIo(Rule):
    id = "PM030"
    title = "PostgreSQL 18 async I/O narrows the PMEM/SSD gap: search io_method"
    insights = ("K23-18",)
    paper = "K23 §4.5.1 (Q17), §7.1 (ii)"
    priority = PRIORITY_SPEED
    engines = ("postgres",)

    def condition(self, f):
        return f.data is not None and (f.data_on_pmem or bool(f.pmem_mounts))

    def effects(self, f):
        if f.version_below(18):
            return [Note("info", "io_method",
                         f"PostgreSQL {f.version} reads synchronously; K23 expects asynchronous "
                         "I/O to make PMEM's lead over SSD for random reads negligible (§4.5.1): "
                         "PostgreSQL 18's io_method changes the comparison",
                         "compare PMEM with SSD on PostgreSQL 18 before buying PMEM for it")]
        return [Bound("io_method", values=("sync", "worker", "io_uring"),
                      reason="async I/O narrows the PMEM/SSD gap (K23 §4.5.1)"),
                Bound("io_workers", 1, max(3, min(32, f.cpus)),
                      reason="io_method=worker's pool (K23 §4.5.1)")]


RULE = PgAsyncIo()
