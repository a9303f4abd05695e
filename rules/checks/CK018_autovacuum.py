"""CK018 PostgreSQL's autovacuum switched off, or left without the statistics it runs on.

Anti-pattern: ``autovacuum = off`` in a config that a server will run with, or
``track_counts = off`` (the autovacuum launcher then has no counts to act on and the server
logs a warning). Dead rows are never reclaimed, tables and indexes bloat and the planner's
statistics go stale; PostgreSQL still forces an anti-wraparound vacuum, at the worst moment,
and stops taking writes when it cannot keep up (manual §25.1.5).

Recommendation: keep autovacuum on and tune it per table (autovacuum_vacuum_scale_factor,
autovacuum_vacuum_cost_limit) rather than switching it off; postgresqltuner flags the same.
A bulk-load session may turn it off for one table (ALTER TABLE ... SET (autovacuum_enabled =
off)), which this file-level check does not judge.

Sources: PostgreSQL manual §20.10 (autovacuum, track_counts), §25.1 (routine vacuuming,
§25.1.5 preventing transaction ID wraparound failures); postgresqltuner.pl (autovacuum check).
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding


class Autovacuum(Check):
    id = "CK018"
    title = "Autovacuum off, or without the counts it runs on"
    source = "PostgreSQL manual §20.10, §25.1.5; postgresqltuner"
    insights = ()
    engines = ("postgres",)

    def run(self, inp: CheckInput) -> list[Finding]:
        if not inp.settings or not inp.facts.pg:
            return []
        out = []
        for name, why in (
                ("autovacuum", "dead rows are never reclaimed, tables bloat and statistics go "
                               "stale; only a forced anti-wraparound vacuum still runs"),
                ("track_counts", "autovacuum has no row counts to act on, so it never vacuums "
                                 "or analyses a table")):
            # read through the value model: off, false, no, 0 and the prefixes PostgreSQL takes
            if name in inp.settings and inp.value(name) is False:
                out.append(self.finding(
                    "warn", name, f"{name} is off{inp.at(name)}: {why}",
                    f"set {name} = on (tune autovacuum per table instead)"))
        return out


CHECK = Autovacuum()
