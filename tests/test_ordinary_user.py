"""What an ordinary user gets from the local servers and disks (issue 56): the attach reads the
server's pid from /proc through what SQL tells when the pid file is the server's alone, and the
medium of a path the user cannot write beside is measured in a writable directory of the same
filesystem. Run as root, the same code is driven as the other user (tests/sandbox.py), so CI
guards the ordinary user's path without a second clone."""

from __future__ import annotations

import json
import os
import re
import stat

import pytest

PG_SOCKET = "/var/run/postgresql/.s.PGSQL.5432"
PG_DSN = "host=/var/run/postgresql user=postgres dbname=postgres"
MY_SOCKET = "/run/mysqld/mysqld.sock"

needs_pg = pytest.mark.skipif(not os.path.exists(PG_SOCKET),
                              reason="no PostgreSQL service on this machine")
needs_mariadb = pytest.mark.skipif(not os.path.exists(MY_SOCKET),
                                   reason="no MariaDB service on this machine")


def _pg(sql: str):
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        return conn.execute(sql).fetchone()[0]


def _pid_file_or_skip(path: str) -> int:
    try:
        return int(open(path, encoding="utf-8").readline())
    except PermissionError:
        pytest.skip(f"{path} is the server's alone: the pid it holds cannot be compared")


@needs_pg
def test_postgres_backend_parent_is_the_postmaster_of_the_pid_file():
    import psycopg

    from pmem_advisor.instances.live import _server_process

    data = _pg("SELECT current_setting('data_directory')")
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        found = _server_process(backend, "PPid", data)
    assert found == _pid_file_or_skip(os.path.join(data, "postmaster.pid"))
    # a process that does not run as the data directory's owner (our own parent: a pid from
    # another pid namespace would name such a one) is refused, not taken for the server
    if os.stat(data).st_uid != os.getuid():
        assert _server_process(os.getpid(), "PPid", data) is None


@needs_mariadb
def test_mariadb_thread_group_is_the_server_of_the_pid_file():
    from pmem_advisor.instances.live import _mysql_thread_id, _server_process
    from pmem_advisor.mysql_driver import connect

    conn = connect(unix_socket=MY_SOCKET, user="root")
    try:
        cur = conn.cursor()
        cur.execute("SELECT @@datadir, @@pid_file")
        data, pid_file = (str(v) for v in cur.fetchone())
        tid = _mysql_thread_id(cur)
        assert tid is not None, "MariaDB 10.5+ names the connection's thread"
        found = _server_process(tid, "Tgid", data.rstrip("/"))
    finally:
        conn.close()
    assert found == _pid_file_or_skip(pid_file)


@needs_pg
def test_check_dsn_as_the_other_user_finds_the_postmaster(other_user, cli_as_other_user):
    """The whole attach as a user who cannot enter the data directory: findings, and the
    postmaster's pid told by /proc in a note (the binding is read from it)."""
    data = _pg("SELECT current_setting('data_directory')")
    if os.access(data, os.X_OK, effective_ids=False) and os.getuid() != 0:
        pytest.skip("this user can enter the data directory: nothing to fall back from")
    r = cli_as_other_user("-m", "pmem_advisor", "check", "--dsn", PG_DSN, "--no-measure",
                          "--format", "json", cwd=other_user.tmpdir())
    assert r.returncode in (0, 1), r.stderr
    assert json.loads(r.stdout)["target"]["flavour"] == "postgresql"
    said = re.search(r"the server's pid (\d+) is the parent of our backend \d+ \(/proc\)",
                     r.stderr)
    assert said, r.stderr
    if os.getuid() == 0:
        assert int(said.group(1)) == _pid_file_or_skip(os.path.join(data, "postmaster.pid"))
    assert "pass --wal-dir" in r.stderr


def _writable_dirs_on_root_fs() -> list[str]:
    dev = os.stat("/").st_dev
    return [d for d in ("/tmp", "/var/tmp") if os.path.isdir(d) and os.stat(d).st_dev == dev
            and os.stat(d).st_mode & stat.S_IWOTH and os.stat(d).st_mode & stat.S_ISVTX]


def test_medium_of_root_is_measured_by_the_other_user(other_user, cli_as_other_user):
    """The other user cannot write in /: the medium under / is still measured, in a writable
    directory on the same filesystem, and the note says where."""
    if not _writable_dirs_on_root_fs():
        pytest.skip("no world-writable temporary directory on the root filesystem")
    r = cli_as_other_user("-m", "pmem_advisor", "probe", "--json", "--path", "/",
                          cwd=other_user.tmpdir(),
                          env={"PMEM_ADVISOR_CACHE": str(other_user.tmpdir() / "cache")})
    assert r.returncode == 0, r.stderr
    root = json.loads(r.stdout)["paths"][0]
    if root["medium_source"] in ("kernel", "filesystem"):
        pytest.skip(f"the kernel's word on / is trusted here ({root['medium_note']})")
    assert root["medium_source"] == "measured", root["medium_note"]
    where = root["measured"]["directory"]
    assert where != "/" and os.stat(where).st_dev == os.stat("/").st_dev
    assert f"in {where} on the same filesystem" in root["medium_note"]
