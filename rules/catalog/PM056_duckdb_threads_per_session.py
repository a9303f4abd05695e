"""PM056 DuckDB with concurrent sessions: the sessions' own threads count against the cores.

Anti-pattern: ``threads`` = every core while several sessions query at once. DuckDB runs a
query on the thread of the session that issued it plus the ``threads`` pool, which already
counts one such caller (``external_threads`` = 1, duckdb_settings()); with more sessions than
that, each brings its own thread on top of the pool, so the pool of all the cores
oversubscribes them. DuckDB's tuning guide: "in certain cases DuckDB may launch too many
threads ..., which can lead to slowdowns. In these cases, it's worth manually limiting the
number of threads using SET threads = X" (Tuning Workloads, Too Many Threads). D21 found that
more threads than physical cores add nothing to PMEM reads (D21 insights #1-#2, D21-1); K23
ran one query at a time (K23 §4.1), so its all-cores setting did not meet this case.

Recommendation: with ``--clients`` sessions querying at once, ``threads`` = the physical cores
near the data less the sessions beyond the first (at least 1): the sessions' threads and the
pool together fill the cores, no more. Measured here (duckdb20-olap-disk, 2 sessions on 2
cores): see the README's scenario table.
"""

from pmem_advisor.engines.duckdb.baseline import physical_cores_near
from pmem_advisor.rules.model import PRIORITY_SPEED, Rule, Set


def threads_for_sessions(f) -> int:
    """The pool that fills the cores together with the sessions' own threads."""
    return max(1, physical_cores_near(f) - (f.clients or 1) + 1)


class DuckdbThreadsPerSession(Rule):
    id = "PM056"
    title = "DuckDB with concurrent sessions: threads = cores less the sessions' own threads"
    insights = ("D21-1",)
    paper = "DuckDB Tuning Workloads (Too Many Threads); D21 insights #1-#2; K23 §4.1"
    priority = PRIORITY_SPEED  # same as PM050; the later id refines its cores for sessions
    engines = ("duckdb",)

    def condition(self, f):
        return f.clients is not None and f.clients > 1

    def effects(self, f):
        n, cores = threads_for_sessions(f), physical_cores_near(f)
        return [Set("threads", n,
                    f"{cores} physical cores less the threads of {f.clients - 1} more "
                    f"concurrent sessions: each session runs its queries on its own thread "
                    "besides the pool, so a pool of every core oversubscribes them (DuckDB's "
                    "tuning guide, Too Many Threads)")]


RULE = DuckdbThreadsPerSession()
