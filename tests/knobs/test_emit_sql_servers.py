"""`recommend --format sql` applied to real servers sets every value it names: PostgreSQL 15
(Debian) through ALTER SYSTEM and a restart, MariaDB 10.11 through SET GLOBAL and, for the
restart-only variables, the my.cnf lines it prints; read back from pg_settings / SHOW
VARIABLES. Managed throwaway instances, never the shared services (ALTER SYSTEM persists)."""

from __future__ import annotations

import json
import re

import pytest

from pmem_advisor.instances import create_instance
from pmem_advisor.knobs.catalog import load_catalog
from tests.instances.conftest import find_server
from tests.rules.machines import make_profile

pytestmark = pytest.mark.server

SETTING = re.compile(r"^(?:ALTER SYSTEM SET|SET PERSIST|SET PERSIST_ONLY|SET GLOBAL) (\w+) = ")


def _recommend_sql(run_cli, tmp_path, engine: str, version: str) -> str:
    profile = tmp_path / "probe.json"
    profile.write_text(json.dumps(make_profile("ssd")))
    # a small budget: the values are applied to a test server on a shared machine
    code, out, err = run_cli("recommend", engine, "--profile", str(profile), "--version",
                             version, "--memory", "2G", "--clients", "40", "--format", "sql")
    assert code == 0, err
    return out


def _statements(sql: str) -> list[str]:
    return [line.split("  -- ")[0] for line in sql.splitlines()
            if line and not line.startswith("--")]


def _expected(sql: str, catalog) -> dict[str, object]:
    """Every value the output sets, statement or my.cnf line, as the catalog's base value."""
    values = {}
    for line in sql.splitlines():
        body = line.removeprefix("-- ") if line.startswith("-- ") else line
        m = SETTING.match(body)
        if m:
            text = body[m.end():].split(";")[0].strip().strip("'")
            values[m.group(1)] = text
        elif " = " in body and re.match(r"^\w+ = ", body) and line.startswith("-- "):
            name, _, text = body.partition(" = ")
            values[name] = text.split("  #")[0].strip()
    return {name: catalog.get(name).parse(text) for name, text in values.items()}


def test_postgresql_15_takes_every_alter_system(run_cli, tmp_path):
    binary = find_server("pg-debian")
    if not str(binary.version).startswith("15"):
        pytest.skip(f"the Debian server here is PostgreSQL {binary.version}, not 15")
    sql = _recommend_sql(run_cli, tmp_path, "postgres", "15")
    assert "ALTER SYSTEM SET shared_buffers" in sql and "restart applies it" in sql
    assert "reload applies it" in sql and "SELECT pg_reload_conf();" in sql
    catalog = load_catalog("postgres", "postgresql", "15")
    expected = _expected(sql, catalog)
    assert len(expected) >= 10
    with create_instance(binary) as inst:
        inst.initialize()
        inst.start()
        for statement in _statements(sql):
            inst.query(statement)
        inst.restart()
        got = inst.settings()
    wrong = {n: (got.get(n), v) for n, v in expected.items()
             if not catalog.get(n).same(catalog.get(n).parse(got[n], check_range=False), v)}
    assert not wrong, wrong


def test_mariadb_10_11_takes_every_set_global_and_my_cnf_line(run_cli, tmp_path):
    binary = find_server("mariadb")
    sql = _recommend_sql(run_cli, tmp_path, "mariadb", str(binary.version))
    assert "SET GLOBAL innodb_buffer_pool_size" in sql and "SET PERSIST" not in sql
    assert "restart-only" in sql and "-- [mysqld]" in sql
    catalog = load_catalog("mysql", "mariadb", str(binary.version))
    expected = _expected(sql, catalog)
    cnf = [line.removeprefix("-- ").split("  #")[0] for line in sql.splitlines()
           if line.startswith("-- ") and re.match(r"^\w+ = ", line[3:])]
    with create_instance(binary) as inst:
        inst.initialize()
        inst.start()
        for statement in _statements(sql):
            inst.query(statement)
        live = inst.settings()  # what SET GLOBAL did, before any restart
        inst.restart("[mysqld]\n" + "\n".join(cnf) + "\n")  # the printed my.cnf lines
        after = inst.settings()

    def wrong(got: dict, names) -> dict:
        return {n: (got.get(n), expected[n]) for n in names
                if not catalog.get(n).same(catalog.get(n).parse(got[n], check_range=False),
                                           expected[n])}

    dynamic = [SETTING.match(s).group(1) for s in _statements(sql)]
    assert dynamic and not wrong(live, dynamic)
    assert not wrong(after, expected)
