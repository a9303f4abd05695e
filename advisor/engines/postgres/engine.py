"""PostgreSQL on the Engine interface: delegates to the existing modules (knobs.emit,
parse.py, baseline.py, rules.memory, instances, tuner.managed)."""

from __future__ import annotations

from typing import Any

from pmem_advisor.engines.base import ServerEngine


class PostgresEngine(ServerEngine):
    def emit(self, settings, header=None, *, catalog=None, fragment=True):
        from pmem_advisor.knobs.emit import Header, emit_postgresql_conf

        return emit_postgresql_conf(settings, header or Header(), catalog=catalog,
                                    fragment=fragment)

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        from pmem_advisor.engines.postgres.parse import parse_postgresql_text

        return {e.name: e.value for e in parse_postgresql_text(text, origin).effective().values()}

    def baseline_rules(self) -> tuple[Any, ...]:
        from pmem_advisor.rules.baseline import BASELINES

        return tuple(r for r in BASELINES if self.name in r.engines)

    def fit_memory(self, rec: Any, view: Any, budget_bytes: int) -> None:
        from pmem_advisor.rules.fit import fit_postgres

        fit_postgres(rec, view, budget_bytes)
