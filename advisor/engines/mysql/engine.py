"""MySQL and MariaDB on the Engine interface: its config (emit.py, parse.py), baseline
(baseline.py) and managed instance (instance.py) beside this file; the managed-server
machinery it shares with PostgreSQL is ``engines.base.ServerEngine``."""

from __future__ import annotations

from typing import Any

from pmem_advisor.engines.base import ServerEngine
from pmem_advisor.engines.mysql.baseline import MysqlBaseline
from pmem_advisor.engines.mysql.emit import emit_mycnf
from pmem_advisor.engines.mysql.instance import MySQLInstance
from pmem_advisor.engines.mysql.parse import parse_mycnf_text
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.emit import Header
from pmem_advisor.knobs.version import parse_version
from pmem_advisor.rules.fit import fit_mysql

BASELINE = (MysqlBaseline(),)


class MysqlEngine(ServerEngine):
    instance_class = MySQLInstance

    def resolve_flavour(self, flavour: str | None = None, version: str | None = None) -> str:
        """Given flavour, else by version: MariaDB's versions start at 10, MySQL's below."""
        if flavour:
            return super().resolve_flavour(flavour, version)
        if version is not None and parse_version(version)[0] >= 10:
            return "mariadb"
        return "mysql"

    def emit(self, settings, header=None, *, catalog=None, fragment=True):
        return emit_mycnf(settings, header or Header(), catalog=catalog)

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        parsed = parse_mycnf_text(text, origin)
        if not parsed.entries and not parsed.ignored and text.strip():
            raise UsageError(f"{origin} has no [mysqld] group: not a MySQL/MariaDB option file")
        return {e.name: e.value for e in parsed.effective().values()}

    def baseline_rules(self) -> tuple[Any, ...]:
        return BASELINE

    def fit_memory(self, rec: Any, view: Any, budget_bytes: int) -> None:
        fit_mysql(rec, view, budget_bytes)
