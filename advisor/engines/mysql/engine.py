"""MySQL and MariaDB on the Engine interface: its config (emit.py, parse.py), baseline
(baseline.py), managed instance (instance.py) and worst-case memory and its fit (memory.py)
beside this file; the managed-server machinery it shares with PostgreSQL
is ``engines.base.ServerEngine``."""

from __future__ import annotations

from typing import Any

from pmem_advisor.engines.base import ServerEngine
from pmem_advisor.engines.mysql.baseline import MysqlBaseline
from pmem_advisor.engines.mysql.emit import emit_mycnf, sql_epilogue, sql_statement
from pmem_advisor.engines.mysql.memory import fit_mysql, mysql_worst_case
from pmem_advisor.engines.mysql.parse import parse_mycnf_text
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.emit import Header
from pmem_advisor.knobs.version import parse_version

BASELINE = (MysqlBaseline(),)


class MysqlEngine(ServerEngine):

    @property
    def instance_class(self) -> type:  # type: ignore[override]
        """The managed-server class, imported on use: checking a file needs no server code."""
        from pmem_advisor.engines.mysql.instance import MySQLInstance

        return MySQLInstance

    def resolve_flavour(self, flavour: str | None = None, version: str | None = None) -> str:
        """Given flavour, else by version: MariaDB's versions start at 10, MySQL's below."""
        if flavour:
            return super().resolve_flavour(flavour, version)
        if version is not None and parse_version(version)[0] >= 10:
            return "mariadb"
        return "mysql"

    def emit(self, settings, header=None, *, catalog=None, fragment=True):
        return emit_mycnf(settings, header or Header(), catalog=catalog)

    takes_sql = True

    def sql_statement(self, knob, value, flavour, version):
        # MySQL 8 persists SET PERSIST in mysqld-auto.cnf; MariaDB has no persisted variables
        persisted = flavour == "mysql" and parse_version(version or "8.4")[0] >= 8
        return sql_statement(knob, value, flavour, persisted)

    def sql_epilogue(self, statements):
        return sql_epilogue(statements)

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        parsed = parse_mycnf_text(text, origin)
        if not parsed.entries and not parsed.ignored and text.strip():
            raise UsageError(f"{origin} has no [mysqld] group: not a MySQL/MariaDB option file")
        return {e.name: e.value for e in parsed.effective().values()}

    def baseline_rules(self) -> tuple[Any, ...]:
        return BASELINE

    uses_host_cpus = True

    def memory(self, settings, *, flavour, version, catalog, host_memory_bytes=None,
               host_cpus=None):
        if catalog is None:
            catalog = self.catalog(flavour, version)
        return mysql_worst_case(settings, flavour=flavour, version=version, catalog=catalog,
                                host_memory_bytes=host_memory_bytes, host_cpus=host_cpus)

    def fit_memory(self, rec: Any, view: Any, budget_bytes: int) -> None:
        fit_mysql(rec, view, budget_bytes)

    def server_capability(self) -> tuple[str, bool, str, str]:
        return self.discovered_capability()
