"""MySQL and MariaDB on the Engine interface: delegates to the existing modules (knobs.emit,
parse.py, baseline.py, rules.memory, instances, tuner.managed)."""

from __future__ import annotations

from typing import Any

from pmem_advisor.engines.base import ServerEngine
from pmem_advisor.errors import UsageError


class MysqlEngine(ServerEngine):
    def resolve_flavour(self, flavour: str | None = None, version: str | None = None) -> str:
        """Given flavour, else by version: MariaDB's versions start at 10, MySQL's below."""
        if flavour:
            return super().resolve_flavour(flavour, version)
        from pmem_advisor.knobs.version import parse_version

        if version is not None and parse_version(version)[0] >= 10:
            return "mariadb"
        return "mysql"

    def emit(self, settings, header=None, *, catalog=None, fragment=True):
        from pmem_advisor.knobs.emit import Header, emit_mycnf

        return emit_mycnf(settings, header or Header(), catalog=catalog)

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        from pmem_advisor.engines.mysql.parse import parse_mycnf_text

        parsed = parse_mycnf_text(text, origin)
        if not parsed.entries and not parsed.ignored and text.strip():
            raise UsageError(f"{origin} has no [mysqld] group: not a MySQL/MariaDB option file")
        return {e.name: e.value for e in parsed.effective().values()}

    def baseline_rules(self) -> tuple[Any, ...]:
        from pmem_advisor.rules.baseline import BASELINES

        return tuple(r for r in BASELINES if self.name in r.engines)

    def fit_memory(self, rec: Any, view: Any, budget_bytes: int) -> None:
        from pmem_advisor.rules.fit import fit_mysql

        fit_mysql(rec, view, budget_bytes)
