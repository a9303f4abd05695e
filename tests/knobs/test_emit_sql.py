"""The SQL emitter: the statement per server and scope, and a comment on each line saying
what applies it (its real-server counterpart is test_emit_sql_servers.py)."""

from __future__ import annotations

import json

import pytest

from pmem_advisor.errors import EXIT_USAGE, UsageError
from pmem_advisor.knobs.emit import Header, Setting, emit_sql
from tests.rules.machines import make_profile


def _sql(engine, flavour, version, *settings):
    header = Header(flavour=flavour, version=version)
    return emit_sql(engine, [Setting(n, v, "why") for n, v in settings], header).text


def test_postgresql_alter_system_says_reload_or_restart():
    text = _sql("postgres", "postgresql", "15", ("work_mem", "64MB"), ("shared_buffers", "1GB"))
    lines = text.splitlines()
    assert "ALTER SYSTEM SET work_mem = '64MB';  -- reload applies it" in "\n".join(lines)
    assert any(ln.startswith("ALTER SYSTEM SET shared_buffers = '1GB';  -- restart applies it")
               for ln in lines)
    assert "SELECT pg_reload_conf();" in text and "restart the server for: shared_buffers" in text


def test_mysql_8_persists_and_persist_only_for_restart_variables():
    text = _sql("mysql", "mysql", "8.4", ("sort_buffer_size", "1M"),
                ("innodb_flush_method", "O_DIRECT"))
    assert "SET PERSIST sort_buffer_size = 1048576;  -- applies now, kept across restarts" in text
    assert "SET PERSIST_ONLY innodb_flush_method = 'O_DIRECT';  -- restart applies it" in text
    assert "SET GLOBAL" not in text and "[mysqld]" not in text


def test_mariadb_set_global_and_my_cnf_lines_for_after_a_restart():
    text = _sql("mysql", "mariadb", "10.11", ("sort_buffer_size", "1M"),
                ("innodb_log_buffer_size", "64M"), ("innodb_flush_method", "O_DIRECT"))
    assert "SET GLOBAL sort_buffer_size = 1048576;  -- applies now; lost at restart" in text
    assert "-- innodb_log_buffer_size: restart-only" in text
    assert "SET PERSIST" not in text
    cnf = text[text.index("-- [mysqld]"):].splitlines()
    assert "-- sort_buffer_size = 1M" in cnf
    assert "-- innodb_flush_method = O_DIRECT  # restart-only" in cnf
    assert "then restart the server for: innodb_log_buffer_size, innodb_flush_method" in text


def test_every_statement_line_is_a_statement_or_a_comment():
    text = _sql("mysql", "mariadb", "10.11", ("innodb_flush_method", "O_DIRECT"),
                ("max_connections", 300))
    for line in text.splitlines():
        assert not line or line.startswith("--") or line.rstrip().split("  -- ")[0].endswith(";")


def test_sql_for_an_engine_without_sql_settings_is_bad_usage():
    with pytest.raises(UsageError):
        emit_sql("duckdb", [], Header())


def test_recommend_format_sql_conf_and_an_unsupported_format(run_cli, tmp_path):
    profile = tmp_path / "probe.json"
    profile.write_text(json.dumps(make_profile("ssd")))
    base = ("recommend", "postgres", "--profile", str(profile), "--version", "15")
    code, out, err = run_cli(*base, "--format", "sql")
    assert code == 0 and out.startswith("-- SQL written by pmem-advisor"), err
    code, conf, _ = run_cli(*base, "--format", "conf")
    assert code == 0 and "shared_buffers = " in conf and "ALTER SYSTEM" not in conf
    code, out, err = run_cli(*base, "--format", "junit")
    assert code == EXIT_USAGE and out == ""
    assert "table, tsv, conf, sql, json" in err
