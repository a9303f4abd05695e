"""The emitted SQL stays the statements we wrote when a server's object name holds a newline
(a quoted identifier may): nothing of a name escapes its comment into a statement line."""

from __future__ import annotations

from pmem_advisor.rules import placement, placement_mariadb, placement_postgres
from pmem_advisor.rules.placement import Obj, Plan, Tier

EVIL = "t\nDROP DATABASE prod; --"


def _tier(path: str) -> Tier:
    return Tier(path, 1 << 30, 1e-5, 1e-5, 1e9, True, "pmem", "test")


def _plan(engine: str, obj: Obj, extra: dict | None = None) -> Plan:
    return Plan(engine, [obj], _tier("/fast"), _tier("/slow"), "interval 2 s", "exact",
                "pmem_fast", None, extra=extra or {})


def _statements_only_ours(sql: str, starts: tuple[str, ...]) -> None:
    """With the comment lines taken out, every statement is one we wrote (a newline inside a
    quoted identifier belongs to it; one that escaped a comment would start a statement)."""
    body = "\n".join(line for line in sql.splitlines() if not line.startswith("-- "))
    stmts = [st.strip() for st in body.split(";\n") if st.strip()]
    assert stmts, sql
    for st in stmts:
        assert st.startswith(starts), st


def test_postgres_comment_keeps_a_newline_in_a_name_inside_it():
    name = '"s"."' + EVIL + '"'
    sql = placement_postgres.render_sql(_plan("postgres", Obj(name, "table", 8192, "pg_default",
                                                             reads=10, on_fast=True)))
    assert "\\x0aDROP DATABASE" in sql
    _statements_only_ours(sql, ("CREATE TABLESPACE", "ALTER TABLE"))


def test_mariadb_comment_keeps_a_newline_in_a_name_inside_it():
    name = f"`s`.`{EVIL}`"
    ddl = "CREATE TABLE " + placement_mariadb._ident(EVIL) + " (\n  `id` int\n) ENGINE=InnoDB"
    extra = {"tables": {name: {"schema": "s", "table": EVIL, "path": "/slow/s/t.ibd",
                               "ddl": ddl, "columns": ["id"]}}}
    sql = placement_mariadb.render_sql(_plan("mariadb", Obj(name, "table", 8192, "/slow",
                                                           reads=10, on_fast=True), extra))
    assert "\\x0aDROP DATABASE" in sql
    _statements_only_ours(sql, ("SET SESSION", "CREATE TABLE", "LOCK TABLES", "INSERT INTO",
                                 "ALTER TABLE", "UNLOCK TABLES", "DROP TABLE"))


def test_sql_comment_escapes_every_control_character():
    assert placement.sql_comment("a\r\nb\x1bc") == "-- a\\x0d\\x0ab\\x1bc"
