"""CK020 against the running services, the servers themselves the oracle: each account check
--dsn calls passwordless really logs in with an empty password, and each trust line really
lets a client in without one. This machine's services are set up that way (root with an empty
password on MariaDB, trust on PostgreSQL); where they are not, the test says so and skips."""

from __future__ import annotations

import json
import os

import pytest

from pmem_advisor.instances.live import read_server

MY_DSN = "mysql://root@127.0.0.1:3306/test"
PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"


def _reachable(dsn: str, engine: str) -> dict:
    try:
        return read_server(dsn, engine)
    except Exception as e:  # noqa: BLE001 - no service here: skip with its reason
        pytest.skip(f"no {engine} service at {dsn}: {e}")


def _check(run_cli, dsn: str, engine: str) -> list[dict]:
    code, out, err = run_cli("check", "--db", engine, "--dsn", dsn, "--format", "json")
    assert code in (0, 1), err
    return [f for f in json.loads(out)["findings"] if f["rule"] == "CK020"]


def test_mariadb_accounts_without_password_do_log_in_without_one(run_cli):
    import pymysql

    server = _reachable(MY_DSN, "mysql")
    accounts = server["status"].get("accounts_without_password")
    if not accounts:
        pytest.skip("the service has no account without a password (or hides its grants)")
    for account in accounts:
        user, host = account.rsplit("@", 1)
        if host not in ("127.0.0.1", "localhost"):
            continue
        kw = {"unix_socket": "/run/mysqld/mysqld.sock"} if host == "localhost" else {
            "host": "127.0.0.1", "port": 3306}
        if host == "localhost" and not os.path.exists(kw["unix_socket"]):
            continue
        pymysql.connect(user=user, password="", **kw).close()  # the server lets it in
    found = _check(run_cli, MY_DSN, "mysql")
    assert [f["severity"] for f in found] == ["warn"], found
    assert all(a in found[0]["message"] for a in accounts[:8]), found


def test_a_locked_account_with_an_empty_string_is_not_counted():
    """mariadb.sys has an empty authentication string but is locked: the server refuses it."""
    server = _reachable(MY_DSN, "mysql")
    accounts = server["status"].get("accounts_without_password") or []
    assert not any(a.startswith("mariadb.sys@") for a in accounts), accounts


def test_postgres_trust_lines_do_let_a_client_in_without_a_password(run_cli):
    import psycopg

    server = _reachable(PG_DSN, "postgres")
    rules = server["status"].get("hba_trust")
    if not rules:
        pytest.skip("the service has no trust line (or this role may not read pg_hba)")
    if any(r.startswith("host") and "127.0.0.1" in r for r in rules):
        psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test password=''",
                        connect_timeout=5).close()
    found = {f["severity"]: f for f in _check(run_cli, PG_DSN, "postgres")}
    if any(r.startswith("host") for r in rules):
        assert "network lines" in found["warn"]["message"]
    if any(r.startswith("local") for r in rules):
        assert "local lines" in found["info"]["message"]
