"""`check --diff` statements: ALTER SYSTEM (PostgreSQL), SET PERSIST / PERSIST_ONLY (MySQL 8),
SET GLOBAL + my.cnf (MariaDB), restart needs from the catalog's scope; built from what
`recommend` sets for the same facts (no copy of its logic)."""

from __future__ import annotations

from pmem_advisor.gate.diff import server_diff
from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.rules import build_facts, recommend
from tests.rules.machines import make_profile


def _diff(engine: str, flavour: str, version: str, running: dict) -> dict:
    facts = build_facts(make_profile("ssd"), engine=engine, flavour=flavour, version=version)
    catalog = load_catalog(engine, flavour, version)
    rows = server_diff(recommend(facts, catalog=catalog), running, catalog, flavour, version)
    return {r["name"]: r for r in rows}


def test_postgres_alter_system_and_restart_scope():
    rows = _diff("postgres", "postgresql", "16", {"shared_buffers": "16384", "work_mem": "4096",
                                                  "max_connections": "100"})
    sb = rows["shared_buffers"]
    assert sb["running"] == "128MB" and sb["restart"] and sb["then"] == "restart the server"
    assert sb["statement"] == f"ALTER SYSTEM SET shared_buffers = '{sb['recommended']}';"
    wm = rows["work_mem"]
    assert not wm["restart"] and wm["then"] == "SELECT pg_reload_conf();"


def test_settings_already_as_recommended_are_not_listed():
    facts = build_facts(make_profile("ssd"), engine="postgres", version="16")
    catalog = load_catalog("postgres", "postgresql", "16")
    rec = recommend(facts, catalog=catalog)
    same = {s.name: catalog.get(s.name).render(s.value) for s in rec.settings}
    assert server_diff(rec, same, catalog, "postgresql", "16") == []


def test_mysql8_set_persist_and_persist_only():
    rows = _diff("mysql", "mysql", "8.4", {"innodb_buffer_pool_size": "134217728",
                                           "innodb_log_buffer_size": "1048576"})
    bp = rows["innodb_buffer_pool_size"]
    assert bp["statement"].startswith("SET PERSIST innodb_buffer_pool_size = ")
    assert bp["statement"].rstrip(";").split("= ")[1].isdigit()  # bytes, no suffix in SET
    lb = rows["innodb_log_buffer_size"]
    if lb["restart"]:
        assert lb["statement"].startswith("SET PERSIST_ONLY ")


def test_mariadb_set_global_with_my_cnf_line_and_restart_only_knobs():
    rows = _diff("mysql", "mariadb", "10.11", {"innodb_buffer_pool_size": "134217728",
                                               "innodb_log_buffer_size": "1048576"})
    bp = rows["innodb_buffer_pool_size"]
    assert bp["statement"].startswith("SET GLOBAL innodb_buffer_pool_size = ")
    assert "[mysqld] innodb_buffer_pool_size = " in bp["then"]
    lb = rows["innodb_log_buffer_size"]
    assert lb["restart"] and lb["statement"] is None and "restart" in lb["then"]


def test_only_a_local_server_lends_its_paths_to_the_host_checks():
    from pmem_advisor.instances.live import is_local

    assert is_local("postgresql:///postgres?host=/var/run/postgresql", "postgres")
    assert is_local("dbname=x", "postgres")  # libpq's default: the local socket
    assert is_local("socket=/run/mysqld/mysqld.sock user=root", "mysql")
    assert is_local("mysql://root@127.0.0.1:3306/x", "mysql")
    assert not is_local("host=db1.example dbname=x", "postgres")
    assert not is_local("postgresql://u@10.0.0.5/db", "postgres")
    assert not is_local("mysql://root@db2:3306/x", "mysql")
