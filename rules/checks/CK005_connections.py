"""CK005 Connection limits the server refuses or cannot serve well.

Anti-pattern: PostgreSQL ``superuser_reserved_connections`` (plus ``reserved_connections``,
PostgreSQL 16+) not below ``max_connections``: the server refuses to start. Thousands of
connection slots without a pooler: every PostgreSQL connection is a process, and snapshot and
lock-table costs grow with max_connections even when the slots sit idle; InnoDB's
``max_connections`` beyond what ``open_files_limit`` allows is silently lowered by the server.

Recommendation: keep the reserved slots below max_connections; size max_connections near the
real concurrency (a few per core, K23 §5.1 / §7.1 v: PMEM systems lost to SSD beyond 64
concurrent writers) and put a pooler (pgbouncer, ProxySQL) in front of many clients.

Parallel query workers beyond the CPUs the server may use (its cgroup quota, cpuset or the host):
``max_parallel_workers = 64`` in a 2-CPU container only time-slices the CPUs and multiplies
per-worker ``work_mem``; keep max_parallel_workers (and max_parallel_workers_per_gather) at or
below the budget's whole CPUs (pgtune sets max_parallel_workers to the CPU count).

Sources: PostgreSQL manual §20.3.1 (max_connections, superuser_reserved_connections,
reserved_connections), §19.4.1 (shared memory per connection); MySQL 8.4 manual §7.1.8
(max_connections, open_files_limit); K23 §5.1, §7.1 v; PostgreSQL manual §20.4.6
(max_parallel_workers, max_parallel_workers_per_gather); pgtune.
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding

POOLER_ABOVE = 1000  # beyond a thousand slots the per-slot costs dominate: use a pooler


class ConnectionLimits(Check):
    id = "CK005"
    title = "Connection limits the server refuses or serves badly"
    source = "PostgreSQL manual §20.3.1, §19.4.1; MySQL 8.4 manual §7.1.8; K23 §5.1, §7.1 v"
    insights = ("K23-8",)
    engines = ("postgres", "mysql")

    def run(self, inp: CheckInput) -> list[Finding]:
        if not inp.settings:
            return []
        out = self._parallel(inp)
        max_conn = inp.value("max_connections", default=True)
        if not isinstance(max_conn, int):
            return []
        if inp.facts.pg:
            su = inp.value("superuser_reserved_connections", default=True)
            res = inp.value("reserved_connections", default=True) if inp.knob(
                "reserved_connections") else 0
            if isinstance(su, int) and isinstance(res, int) and su + res >= max_conn:
                out.append(self.finding(
                    "fail", "max_connections", f"superuser_reserved_connections ({su}) + "
                    f"reserved_connections ({res}) is not below max_connections ({max_conn}): "
                    "PostgreSQL refuses to start", "raise max_connections or lower the "
                    "reserved slots"))
        if max_conn > POOLER_ABOVE:
            what = ("each connection is a backend process; snapshots and the lock table grow "
                    "with max_connections" if inp.facts.pg else
                    "each connection is a thread with its own buffers")
            out.append(self.finding(
                "warn", "max_connections",
                f"max_connections is {max_conn}{inp.at('max_connections')}: {what}; on "
                f"{inp.facts.cpus} CPUs only a few dozen run at once",
                "put a connection pooler in front (pgbouncer, ProxySQL) and size "
                "max_connections near the real concurrency"))
        files = str(inp.value("open_files_limit") or "") if inp.facts.mysql else ""
        files = int(files) if files.isdigit() else 0
        if files and max_conn + 810 > files:
            out.append(self.finding(
                "warn", "max_connections", f"max_connections {max_conn} needs more than "
                f"open_files_limit {files} allows (max_connections + 810 files): the server "
                "lowers max_connections at start", "raise open_files_limit (LimitNOFILE in "
                "the systemd unit)"))
        return out

    def _parallel(self, inp: CheckInput) -> list[Finding]:
        """PostgreSQL parallel workers (set in the config) above the budget's whole CPUs."""
        if not inp.facts.pg or inp.source != "config" or inp.budget is None:
            return []
        cpus, judged, out = inp.budget.whole_cpus, inp.where or inp.settings, []
        for name in ("max_parallel_workers", "max_parallel_workers_per_gather"):
            n = inp.value(name)
            if name in judged and isinstance(n, int) and not isinstance(n, bool) and n > cpus:
                out.append(self.finding(
                    "warn", name, f"{name} = {n}{inp.at(name)} is above the {cpus} CPU(s) the "
                    f"server may use ({inp.budget.cpus_source}): the workers only time-slice "
                    "them, each with its own work_mem", f"{name} = {cpus}"))
        return out


CHECK = ConnectionLimits()
