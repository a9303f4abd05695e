"""check --dsn speaks up without --diff: a running server's memory settings far below what its
budget holds (CK017), and --diff sizes for the server's own max_connections."""

from __future__ import annotations

import json
import os

import pytest

PG_SOCKET = "/var/run/postgresql/.s.PGSQL.5432"
PG_DSN = "host=/var/run/postgresql user=postgres dbname=postgres"
MY_SOCKET = "/run/mysqld/mysqld.sock"

needs_pg = pytest.mark.skipif(not os.path.exists(PG_SOCKET),
                              reason="no PostgreSQL service on this machine")


def _pg_setting(name: str) -> str:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        return conn.execute("SELECT current_setting(%s)", (name,)).fetchone()[0]


def _check(run_cli, *args):
    code, out, err = run_cli("check", *args, "--format", "json")
    assert code in (0, 1), err
    return json.loads(out)


@needs_pg
def test_packaged_shared_buffers_on_a_big_host_is_a_finding_without_diff(run_cli):
    if _pg_setting("shared_buffers") != "128MB":
        pytest.skip("the service's shared_buffers is not Debian's packaged 128MB")
    data = _check(run_cli, "--dsn", PG_DSN)
    found = {f["subject"]: f for f in data["findings"] if f["rule"] == "CK017"}
    assert "shared_buffers" in found, data["findings"]
    sb = found["shared_buffers"]
    assert sb["severity"] == "warn" and "shared_buffers = 128MB" in sb["message"]
    assert "budget holds" in sb["message"] and sb["fix"].startswith("shared_buffers = ")
    assert data["diff"] is None  # without --diff: findings only


@needs_pg
def test_diff_keeps_the_servers_max_connections_unless_clients_says(run_cli):
    running = int(_pg_setting("max_connections"))
    data = _check(run_cli, "--dsn", PG_DSN, "--diff")
    assert not [r for r in data["diff"] if r["name"] == "max_connections"], data["diff"]
    data = _check(run_cli, "--dsn", PG_DSN, "--diff", "--clients", str(running + 40))
    rows = {r["name"]: r for r in data["diff"]}
    assert rows["max_connections"]["recommended"] == str(running + 50)  # + 10 reserved


@pytest.mark.skipif(not os.path.exists(MY_SOCKET), reason="no MariaDB service on this machine")
def test_mariadb_pool_is_judged_against_its_data(run_cli):
    from pmem_advisor.mysql_driver import connect

    conn = connect(unix_socket=MY_SOCKET, user="root")
    try:
        cur = conn.cursor()
        cur.execute("SELECT @@innodb_buffer_pool_size, (SELECT COALESCE(SUM(data_length + "
                    "index_length), 0) FROM information_schema.tables WHERE engine = 'InnoDB')")
        pool, data_bytes = (int(v) for v in cur.fetchone())
    finally:
        conn.close()
    data = _check(run_cli, "--dsn", f"socket={MY_SOCKET} user=root")
    flagged = [f for f in data["findings"]
               if f["rule"] == "CK017" and f["subject"] == "innodb_buffer_pool_size"]
    if data_bytes <= pool:  # the whole data set is cached as it is: nothing to say
        assert not flagged, flagged
    else:
        assert flagged and "InnoDB data" in flagged[0]["message"]


@needs_pg
def test_diff_reads_the_servers_build_for_lz4(run_cli):
    """check --diff proposes what recommend would for the same build: lz4 where the installed
    server was built with it (Debian's 15 is), never pglz for want of looking."""
    from pmem_advisor.engines.registry import get_engine

    version = _pg_setting("server_version").split()[0]
    if "lz4" not in get_engine("postgres").build_features("postgresql", version):
        pytest.skip(f"the installed PostgreSQL {version} has no lz4 build to read")
    data = _check(run_cli, "--dsn", PG_DSN, "--diff", "--cpus", "8")  # wal_compression at >= 4
    rows = {r["name"]: r for r in data["diff"]}
    if _pg_setting("wal_compression") == "lz4":
        assert "wal_compression" not in rows
    else:
        assert rows["wal_compression"]["recommended"] == "lz4", rows.get("wal_compression")
