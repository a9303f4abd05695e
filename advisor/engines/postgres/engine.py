"""PostgreSQL on the Engine interface: its config (emit.py, parse.py), baseline (baseline.py),
managed instance (instance.py) and pgbench workloads (pgbench.py) beside this file; the
managed-server machinery it shares with MySQL is ``engines.base.ServerEngine``."""

from __future__ import annotations

from typing import Any

from pmem_advisor.engines.base import ServerEngine
from pmem_advisor.engines.postgres.baseline import PostgresBaseline
from pmem_advisor.engines.postgres.emit import emit_postgresql_conf
from pmem_advisor.engines.postgres.instance import PostgresInstance
from pmem_advisor.engines.postgres.parse import parse_postgresql_text
from pmem_advisor.engines.postgres.pgbench import PgbenchCustom, PgbenchTpcb
from pmem_advisor.knobs.emit import Header
from pmem_advisor.rules.fit import fit_postgres

BASELINE = (PostgresBaseline(),)


class PostgresEngine(ServerEngine):
    instance_class = PostgresInstance

    def emit(self, settings, header=None, *, catalog=None, fragment=True):
        return emit_postgresql_conf(settings, header or Header(), catalog=catalog,
                                    fragment=fragment)

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        return {e.name: e.value for e in parse_postgresql_text(text, origin).effective().values()}

    def baseline_rules(self) -> tuple[Any, ...]:
        return BASELINE

    def fit_memory(self, rec: Any, view: Any, budget_bytes: int) -> None:
        fit_postgres(rec, view, budget_bytes)

    def own_workloads(self) -> dict[str, Any]:
        return {"pgbench-tpcb": PgbenchTpcb, "pgbench-custom": PgbenchCustom}
