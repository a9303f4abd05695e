"""PostgreSQL on the Engine interface: its config (emit.py, parse.py), baseline (baseline.py),
managed instance (instance.py), worst-case memory and its fit (memory.py) and pgbench
workloads (pgbench.py) beside this file; the managed-server machinery it shares with MySQL
is ``engines.base.ServerEngine``."""

from __future__ import annotations

from typing import Any

from pmem_advisor.capabilities import install_hint
from pmem_advisor.engines.base import ServerEngine
from pmem_advisor.engines.postgres.baseline import PostgresBaseline
from pmem_advisor.engines.postgres.emit import emit_postgresql_conf, sql_epilogue, sql_statement
from pmem_advisor.engines.postgres.features import postgres_build_features
from pmem_advisor.engines.postgres.memory import fit_postgres, postgres_worst_case
from pmem_advisor.engines.postgres.parse import parse_postgresql_text
from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.knobs.emit import Header

BASELINE = (PostgresBaseline(),)


class PostgresEngine(ServerEngine):

    @property
    def instance_class(self) -> type:  # type: ignore[override]
        """The managed-server class, imported on use: checking a file needs no server code."""
        from pmem_advisor.engines.postgres.instance import PostgresInstance

        return PostgresInstance

    def emit(self, settings, header=None, *, catalog=None, fragment=True):
        return emit_postgresql_conf(settings, header or Header(), catalog=catalog,
                                    fragment=fragment)

    def build_features(self, flavour, version):
        major = str(version).split(".")[0] if version else None
        try:
            binary = self.find_binary(flavour, major)
        except (EnvironmentProblem, UsageError):
            return frozenset()
        if major and str(binary.version).split(".")[0] != major:
            return frozenset()
        return postgres_build_features(binary.bindir) or frozenset()

    takes_sql = True

    def sql_statement(self, knob, value, flavour, version):
        return sql_statement(knob, value)

    def sql_epilogue(self, statements):
        return sql_epilogue(statements)

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        return {e.name: e.value for e in parse_postgresql_text(text, origin).effective().values()}

    def baseline_rules(self) -> tuple[Any, ...]:
        return BASELINE

    def memory(self, settings, *, flavour, version, catalog, host_memory_bytes=None):
        if catalog is None:
            catalog = self.catalog(flavour, version)
        return postgres_worst_case(settings, flavour=flavour, version=version, catalog=catalog)

    def fit_memory(self, rec: Any, view: Any, budget_bytes: int) -> None:
        fit_postgres(rec, view, budget_bytes)

    def server_capability(self) -> tuple[str, bool, str, str]:
        return self.discovered_capability(
            lambda best: "" if best.source == "embedded" else
            f"{install_hint('embedded')} for the zero-install PostgreSQL 18")

    def own_workloads(self) -> dict[str, Any]:
        from pmem_advisor.engines.postgres.pgbench import PgbenchCustom, PgbenchTpcb

        return {"pgbench-tpcb": PgbenchTpcb, "pgbench-custom": PgbenchCustom}
