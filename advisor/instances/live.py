"""Reading a running server (``check --dsn``, ``tune --target-dsn``): its settings, status
counters, data/WAL directories, version and pid, and where it may run (CPUs, memory nodes).
The DSN's password is never printed."""

from __future__ import annotations

import os
import re

from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.fileio import read_text_nofollow


def read_server(dsn: str, engine: str) -> dict:
    """Settings, status counters, data/WAL directories, version and pid of a running server.
    A DSN that cannot be parsed is bad input (2); a server that cannot be reached is an
    environment problem (3); the password is never printed."""
    from pmem_advisor.connection import mysql_connect_kwargs, parse_dsn, redact_dsn, scrub

    # InputError (exit 2, redacted) for a malformed DSN, before any connection attempt
    mysql_connect_kwargs(dsn) if engine == "mysql" else parse_dsn(dsn)
    try:
        return _read_pg(dsn) if engine == "postgres" else _read_mysql(dsn)
    except (UsageError, EnvironmentProblem):
        raise
    except Exception as e:  # the drivers' errors, scrubbed of the password
        lines = str(e).strip().splitlines()
        first = lines[0] if lines else type(e).__name__
        raise EnvironmentProblem(f"cannot read the server at {redact_dsn(dsn)}: "
                                 f"{scrub(first, dsn)}") from None


def is_local(dsn: str, engine: str) -> bool:
    """Whether the DSN reaches a server on this host (a unix socket or a loopback address)."""
    from pmem_advisor.connection import mysql_connect_kwargs, parse_dsn

    params = mysql_connect_kwargs(dsn) if engine == "mysql" else parse_dsn(dsn)
    if params.get("unix_socket"):
        return True
    hosts = [h.strip() for h in str(params.get("host") or "").split(",")]
    return all(not h or h.startswith("/") or h in ("localhost", "127.0.0.1", "::1")
               for h in hosts)


def _read_pg(dsn: str) -> dict:
    import psycopg

    notes: list[str] = []
    with psycopg.connect(dsn, connect_timeout=5, autocommit=True) as conn:
        rows = conn.execute("SELECT name, setting FROM pg_settings").fetchall()
        settings = {n.lower(): v for n, v in rows}
        status = _pg_status(conn, int(settings.get("server_version_num") or 0))
        data = settings.get("data_directory")
        pid_file = os.path.join(data, "postmaster.pid") if data else None
        pid = _pid_file(pid_file) if pid_file else None  # the postmaster: our own backend
        # (pg_backend_pid) is gone once we disconnect
        if pid is None and pid_file and is_local(dsn, "postgres"):
            # an ordinary user cannot enter the data directory (0700): the postmaster is the
            # parent of our backend, which the kernel tells while we are connected
            backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            pid = _server_process(int(backend), "PPid", data)
            notes.append(_pid_note(pid_file, pid, f"the parent of our backend {backend}"))
    wal = os.path.join(data, "pg_wal") if data else None
    if wal and os.path.islink(wal):
        wal = os.path.realpath(wal)
    elif wal and not _can_enter(data):
        notes.append(f"{data} cannot be entered as uid {os.geteuid()}: pg_wal is taken to be "
                     "in it (a link elsewhere would not be seen); run as root or the server's "
                     "user, or pass --wal-dir")
    version = settings.get("server_version", "").split()[0] or None
    return {"engine": "postgres", "flavour": "postgresql", "version": version,
            "settings": settings, "status": status, "data_dir": data, "wal_dir": wal,
            "pid": pid, "notes": notes}


def _pg_status(conn, version_num: int) -> dict:
    """Counters since the last statistics reset (pg_stat_database, checkpoints, backends)."""
    row = conn.execute(
        "SELECT coalesce(sum(blks_hit), 0), coalesce(sum(blks_read), 0),"
        " coalesce(sum(temp_files), 0), coalesce(sum(temp_bytes), 0),"
        " coalesce(sum(xact_commit), 0), coalesce(sum(xact_rollback), 0),"
        " coalesce(sum(deadlocks), 0),"
        " extract(epoch FROM now() - min(stats_reset)),"
        " extract(epoch FROM now() - pg_postmaster_start_time())"
        " FROM pg_stat_database").fetchone()
    keys = ("blks_hit", "blks_read", "temp_files", "temp_bytes", "xact_commit",
            "xact_rollback", "deadlocks", "stats_age_s", "uptime_s")
    status = {k: (float(v) if v is not None else None) for k, v in zip(keys, row, strict=True)}
    if version_num >= 170000:  # PostgreSQL 17 moved the counters to pg_stat_checkpointer
        sql = ("SELECT num_timed, num_requested, extract(epoch FROM now() - stats_reset)"
               " FROM pg_stat_checkpointer")
    else:
        sql = ("SELECT checkpoints_timed, checkpoints_req, extract(epoch FROM now() -"
               " stats_reset) FROM pg_stat_bgwriter")
    timed, req, age = conn.execute(sql).fetchone()
    status.update(checkpoints_timed=float(timed), checkpoints_req=float(req),
                  checkpoint_stats_age_s=float(age) if age is not None else None)
    status["backends"] = float(conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
    ).fetchone()[0])
    trust = _pg_trust_rules(conn)
    if trust is not None:
        status["hba_trust"] = trust
    return status


def _read_mysql(dsn: str) -> dict:
    from pmem_advisor.connection import mysql_connect_kwargs
    from pmem_advisor.mysql_driver import connect

    conn = connect(**mysql_connect_kwargs(dsn), connect_timeout=5)
    try:
        cur = conn.cursor()  # mysql-connector's cursor is no context manager
        cur.execute("SHOW GLOBAL VARIABLES")
        settings = {_text(n).lower(): _text(v) for n, v in cur.fetchall()}
        cur.execute("SHOW GLOBAL STATUS")
        status = {_text(n): _text(v) for n, v in cur.fetchall()}
        # what the buffer pool could cache (MySQLTuner's yardstick for its size)
        cur.execute("SELECT COALESCE(SUM(data_length + index_length), 0) FROM "
                    "information_schema.tables WHERE engine = 'InnoDB'")
        status["innodb_data_bytes"] = _text(cur.fetchone()[0])
        no_password = _mysql_accounts_without_password(
            cur, "mariadb" in settings.get("version", "").lower())
        if no_password is not None:
            status["accounts_without_password"] = no_password
        data = settings.get("datadir", "").rstrip("/") or None
        pid_file = settings.get("pid_file", "")
        pid = _pid_file(pid_file)
        notes: list[str] = []
        if pid is None and pid_file and is_local(dsn, "mysql"):
            # an ordinary user cannot read the pid file (0660): MariaDB names the kernel
            # thread of our connection (PROCESSLIST.TID), whose thread group is the server
            tid = _mysql_thread_id(cur)
            if tid is not None:
                pid = _server_process(tid, "Tgid", data)
                notes.append(_pid_note(pid_file, pid, f"the process of our connection's "
                                                      f"thread {tid}"))
        cur.close()
    finally:
        conn.close()
    ver = settings.get("version", "")
    home = settings.get("innodb_log_group_home_dir") or "./"
    wal = os.path.normpath(os.path.join(data, home)) if data else None
    return {"engine": "mysql", "flavour": "mariadb" if "mariadb" in ver.lower() else "mysql",
            "version": re.split(r"[-+]", ver)[0] or None, "settings": settings,
            "status": status, "data_dir": data, "wal_dir": wal, "pid": pid, "notes": notes}


def _mysql_thread_id(cur) -> int | None:
    """The kernel thread serving this connection (MariaDB 10.5+); None elsewhere (MySQL)."""
    try:
        cur.execute("SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
        row = cur.fetchone()
        return int(_text(row[0])) if row and row[0] is not None else None
    except Exception:  # noqa: BLE001 - no TID column (MySQL): the pid stays unknown
        return None


# Accounts that log in with an empty password (MySQLTuner's first security check), locked
# accounts left out (MariaDB's mariadb.sys has an empty string but cannot log in), as are
# socket and external plugins, where no password is the design (unix_socket, auth_socket, pam).
_MARIADB_NO_PASSWORD = (
    "SELECT user, host FROM mysql.global_priv"
    " WHERE COALESCE(JSON_VALUE(priv, '$.authentication_string'), '') = ''"
    " AND COALESCE(JSON_VALUE(priv, '$.account_locked'), '0') NOT IN ('1', 'true')"
    " AND COALESCE(JSON_VALUE(priv, '$.plugin'), 'mysql_native_password')"
    " IN ('mysql_native_password', 'mysql_old_password', 'ed25519', '')")
_MYSQL_NO_PASSWORD = (
    "SELECT user, host FROM mysql.user WHERE authentication_string = ''"
    " AND account_locked = 'N' AND plugin IN"
    " ('mysql_native_password', 'caching_sha2_password', 'sha256_password')")


def _mysql_accounts_without_password(cur, mariadb: bool) -> list[str] | None:
    """'user@host' of each account that logs in without a password; None when the account we
    connect as may not read the grant tables (then nothing is claimed either way)."""
    try:
        cur.execute(_MARIADB_NO_PASSWORD if mariadb else _MYSQL_NO_PASSWORD)
        return sorted(f"{_text(u) or '(anonymous)'}@{_text(h)}" for u, h in cur.fetchall())
    except Exception:  # noqa: BLE001 - no SELECT on mysql.*: the driver's error, not ours
        return None


def _pg_trust_rules(conn) -> list[str] | None:
    """pg_hba.conf lines that let a client in without any password (auth method trust), as
    'type database user address (line N)'; None when this role may not read pg_hba_file_rules
    (superuser or pg_read_all_settings... only superusers by default)."""
    try:
        rows = conn.execute(
            "SELECT type, array_to_string(database, ','), array_to_string(user_name, ','),"
            " coalesce(address, ''), line_number FROM pg_hba_file_rules"
            " WHERE auth_method = 'trust' ORDER BY line_number").fetchall()
    except Exception:  # noqa: BLE001 - psycopg's permission error: nothing is claimed
        return None
    return [" ".join(str(p) for p in (t, d, u, a) if p) + f" (line {n})"
            for t, d, u, a, n in rows]


def _pid_file(path: str) -> int | None:
    """The pid on the first line of a server's pid file (None when unreadable: another host,
    or a directory an ordinary user may not enter)."""
    # The server's user writes it: read without following a link or blocking on a FIFO
    try:
        return int(read_text_nofollow(path, limit=4096).splitlines()[0].strip())
    except (OSError, ValueError, IndexError, UsageError, EnvironmentProblem):
        return None


def _can_enter(directory: str) -> bool:
    return os.access(directory, os.X_OK)


def _proc_fields(pid: int) -> dict[str, str]:
    """/proc/PID/status as {key: value} (readable by every user); {} when it is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:  # by-name-safe: procfs
            for line in f:
                key, _, value = line.partition(":")
                out[key] = value.strip()
    except OSError:
        return {}
    return out


def _server_process(pid: int, field: str, data_dir: str | None) -> int | None:
    """The server's pid from a process of ours the server told us of (``field``: PPid of a
    PostgreSQL backend, Tgid of a MariaDB thread), accepted only when that process runs as
    the owner of the server's data directory: a server in another pid namespace (a
    container) names a pid that is not its own here."""
    found = _proc_fields(pid).get(field)
    if not found or not found.isdigit() or not data_dir:
        return None
    try:
        owner = os.stat(data_dir).st_uid
    except OSError:
        return None
    server = int(found)
    uid = _proc_fields(server).get("Uid", "").split()
    return server if uid and uid[0].isdigit() and int(uid[0]) == owner else None


def _pid_note(pid_file: str, pid: int | None, how: str) -> str:
    who = f"uid {os.geteuid()}"
    if pid is None:
        return (f"{pid_file} is not readable as {who} and the server's process could not be "
                "told otherwise: its CPU and memory-node binding is not read")
    return f"{pid_file} is not readable as {who}: the server's pid {pid} is {how} (/proc)"


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes | bytearray) else str(value)


def server_binding(pid: int | None) -> tuple[tuple[int, ...] | None, list[int] | None]:
    """The CPUs and memory nodes a server process may use (/proc/PID/status)."""
    if not pid:
        return None, None
    from pmem_advisor.probes.reading import parse_cpulist

    found = {}
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:  # by-name-safe: procfs
            for line in f:
                key, _, value = line.partition(":")
                if key in ("Cpus_allowed_list", "Mems_allowed_list"):
                    found[key] = parse_cpulist(value.strip())
    except OSError:
        return None, None
    cpus = found.get("Cpus_allowed_list")
    return (tuple(cpus) if cpus else None), found.get("Mems_allowed_list")
