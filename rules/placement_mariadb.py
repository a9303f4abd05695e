"""MariaDB's side of ``place`` (issue 52): the counters per InnoDB table and the SQL that moves
a table's file; the plan, the tiers and the solver are rules/placement.py's, shared with
PostgreSQL.

Counters, all from the server:
- sizes: information_schema.TABLES (data_length + index_length: InnoDB keeps a table's
  indexes in its own .ibd) and INNODB_SYS_TABLESPACES (the file, its size on disk, its path);
- I/O: performance_schema.file_summary_by_instance per .ibd file (read and write operations
  and their bytes: what the medium saw, past the buffer pool), and the logical row operations
  of table_io_waits_summary_by_table as "hits" when that instrument is on;
- the redo log (writes: performance_schema's innodb_log_file where the server has that
  instrument, else SHOW GLOBAL STATUS Innodb_log_writes, as on MariaDB 10.11; size
  innodb_log_file_size) and InnoDB's temporary tablespace ibtmp1 (its file's counters) as
  candidates too; both move by a setting and a restart, not by SQL.
performance_schema is OFF by default in MariaDB and cannot be switched on without a restart:
without it there is nothing to place by (exit 3).

The move, verified on MariaDB 10.11: ``ALTER TABLE t DATA DIRECTORY='...'`` is accepted and
silently ignored (no warning; the .ibd stays where it was, with or without ALGORITHM=COPY or
ENGINE=InnoDB), since InnoDB takes DATA DIRECTORY only when it creates a table. So a table is
moved by a rebuild: a copy of its SHOW CREATE TABLE with DATA DIRECTORY, filled under
LOCK TABLES ... WRITE (other sessions' reads and writes of the table wait for the copy), then
two ALTER TABLE ... RENAME (allowed under LOCK TABLES, unlike RENAME TABLE) and the old table
dropped. innodb_file_per_table must be ON. Tables with foreign keys (either side), triggers
or partitions are left out of the SQL: the rename would leave their keys and triggers on the
old table; they need a dump and reload.
"""

from __future__ import annotations

import os
import re
import time

from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.rules.placement import (
    Obj,
    Plan,
    Reading,
    duration,
    server_can_write,
    sql_comment,
)

NAME = "mariadb"  # Plan.engine
SERVER = "mysql"  # instances.live.read_server's engine
LOCK_WAIT_S = 10  # --apply: lock_wait_timeout and innodb_lock_wait_timeout, seconds
NEW, OLD = "__pmem_new", "__pmem_old"  # the rebuild's scratch names
SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
DATA, LOG, TEMP = ("wait/io/file/innodb/innodb_data_file", "wait/io/file/innodb/innodb_log_file",
                   "wait/io/file/innodb/innodb_temp_file")
COUNTERS = ("reads and writes are file operations on each table's .ibd "
            "(performance_schema.file_summary_by_instance: past the buffer pool, though the OS "
            "cache may have served some reads); hits are row operations "
            "(table_io_waits_summary_by_table)")
_DATA_DIR_RE = re.compile(r"\s*\bDATA DIRECTORY\s*=\s*'(?:[^'\\]|\\.|'')*'", re.IGNORECASE)


def check_dsn(dsn: str) -> None:
    from pmem_advisor.connection import mysql_connect_kwargs

    mysql_connect_kwargs(dsn)


def _connect(dsn: str):
    from pmem_advisor.connection import mysql_connect_kwargs
    from pmem_advisor.mysql_driver import connect

    return connect(**mysql_connect_kwargs(dsn), connect_timeout=5)


def _error(dsn: str, e: Exception, what: str) -> EnvironmentProblem:
    from pmem_advisor.connection import redact_dsn, scrub

    lines = str(e).strip().splitlines()
    return EnvironmentProblem(f"{what} at {redact_dsn(dsn)}: "
                              f"{scrub(lines[0] if lines else type(e).__name__, dsn)}")


def _rows(cur, sql: str, args=()) -> list[tuple]:
    cur.execute(sql, args)
    return [tuple(v.decode("utf-8", "replace") if isinstance(v, bytes | bytearray) else v
                  for v in r) for r in cur.fetchall()]


def _preconditions(cur, server: dict) -> None:
    """performance_schema on and its InnoDB file instrument enabled, innodb_file_per_table ON:
    one-line refusals otherwise (before the window)."""
    if server.get("flavour") != "mariadb":
        raise UsageError(f"place mariadb: the server is {server.get('flavour')} "
                         f"{server.get('version')}, not MariaDB: use place mysql")
    ps, fpt = _rows(cur, "SELECT @@performance_schema, @@innodb_file_per_table")[0]
    if not int(ps):
        raise EnvironmentProblem("performance_schema is OFF (MariaDB's default): place reads "
                                 "its per-file I/O counters",
                                 hint="set performance_schema = ON under [mysqld] and restart")
    if not _instrument_on(cur):
        raise EnvironmentProblem(f"performance_schema's {DATA} instrument is off: no per-file "
                                 "I/O counters to place by",
                                 hint="UPDATE performance_schema.setup_instruments SET "
                                      f"ENABLED = 'YES', TIMED = 'YES' WHERE NAME = '{DATA}'")
    if not int(fpt):
        raise UsageError("innodb_file_per_table is OFF: tables share ibdata1 and no table has a "
                         "file of its own to place", hint="SET GLOBAL innodb_file_per_table = ON"
                         " (tables then move one by one as they are rebuilt)")


def _tables(cur) -> tuple[str | None, list[tuple]]:
    """The DSN's database (None: every non-system schema) and its InnoDB base tables:
    (schema, table, data_length + index_length, create_options). The same
    information_schema.TABLES on MariaDB and MySQL 8 (place mysql shares it)."""
    db = _rows(cur, "SELECT DATABASE()")[0][0]
    where, args = ("t.TABLE_SCHEMA = %s", (db,)) if db else (
        "t.TABLE_SCHEMA NOT IN (" + ", ".join(["%s"] * len(SYSTEM_SCHEMAS)) + ")",
        SYSTEM_SCHEMAS)
    return db, _rows(cur, "SELECT t.TABLE_SCHEMA, t.TABLE_NAME, t.DATA_LENGTH + t.INDEX_LENGTH,"
                     " t.CREATE_OPTIONS FROM information_schema.TABLES t WHERE t.ENGINE = "
                     f"'InnoDB' AND t.TABLE_TYPE = 'BASE TABLE' AND {where}", args)


def _files(cur) -> list[tuple]:
    """performance_schema's per-file I/O of InnoDB's data, redo and temporary files (the same
    table and instrument names on MariaDB and MySQL 8)."""
    return _rows(cur, "SELECT FILE_NAME, EVENT_NAME, COUNT_READ, COUNT_WRITE, "
                 "SUM_NUMBER_OF_BYTES_READ, SUM_NUMBER_OF_BYTES_WRITE FROM "
                 "performance_schema.file_summary_by_instance WHERE EVENT_NAME IN (%s, %s, %s)",
                 (DATA, LOG, TEMP))


def _row_io(cur) -> dict[str, float]:
    """Logical row operations per table (``db.t``), {} when the table instrument is off."""
    row_io = {}
    try:
        for s, t, r, w in _rows(cur, "SELECT OBJECT_SCHEMA, OBJECT_NAME, COUNT_READ, COUNT_WRITE"
                                " FROM performance_schema.table_io_waits_summary_by_table WHERE "
                                "OBJECT_TYPE = 'TABLE'"):
            row_io[f"{s}.{t}"] = float(r or 0) + float(w or 0)
    except Exception:  # noqa: BLE001 - the driver's error: the table instrument is optional
        pass
    return row_io


def _instrument_on(cur) -> bool:
    """performance_schema's InnoDB data file instrument is enabled."""
    on = _rows(cur, "SELECT ENABLED FROM performance_schema.setup_instruments WHERE NAME = %s",
               (DATA,))
    return bool(on) and on[0][0] == "YES"


def snapshot(cur, datadir: str) -> dict:
    """Every counter the plan needs, read in one go."""
    db, tables = _tables(cur)
    spaces = _rows(cur, "SELECT NAME, FILENAME, FILE_SIZE FROM "
                   "information_schema.INNODB_SYS_TABLESPACES")
    files = _files(cur)
    row_io = _row_io(cur)
    status = dict(_rows(cur, "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema."
                        "GLOBAL_STATUS WHERE VARIABLE_NAME IN ('UPTIME', 'INNODB_LOG_WRITES')"))
    log_size, log_home, temp_path = _rows(cur, "SELECT @@innodb_log_file_size, "
                                          "@@innodb_log_group_home_dir, "
                                          "@@innodb_temp_data_file_path")[0]
    return {"at": time.time(), "db": db, "datadir": datadir, "tables": tables,
            "spaces": spaces, "files": files, "row_io": row_io,
            "uptime_s": float(status.get("UPTIME") or 0),
            "log_writes": float(status.get("INNODB_LOG_WRITES") or 0),
            "log_size": int(log_size), "log_home": os.path.normpath(
                os.path.join(datadir, log_home or "./")), "temp_path": temp_path}


def _table_of(space_name: str) -> str:
    """``db/t`` or ``db/t#P#p0`` (a partition) -> ``db.t``: InnoDB's tablespace names."""
    db, _, rest = space_name.partition("/")
    return f"{db}.{re.split(r'#[Pp]#', rest)[0]}"


def _counts(snap: dict) -> dict[str, list[float]]:
    """Per table (``db.t``) and for ``redo`` / ``temp``: [reads, writes] in file operations."""
    where = {}
    for name, filename, _size in snap["spaces"]:
        if filename and "/" in name:
            where[os.path.normpath(os.path.join(snap["datadir"], filename))] = _table_of(name)
    temp_file = (snap["temp_path"] or "ibtmp1").split(":")[0]
    out: dict[str, list[float]] = {}
    for fname, event, reads, writes, _br, _bw in snap["files"]:
        # MariaDB 10.11 files ibtmp1 under innodb_data_file, and has no redo log instrument
        key = ({LOG: "redo", TEMP: "temp"}.get(event)
               or ("temp" if os.path.basename(fname) == temp_file else None)
               or where.get(os.path.normpath(fname)))
        if key:
            c = out.setdefault(key, [0.0, 0.0])
            c[0] += float(reads or 0)
            c[1] += float(writes or 0)
    if "redo" not in out:  # the server's own count of redo log writes (SHOW GLOBAL STATUS)
        out["redo"] = [0.0, snap["log_writes"]]
    return out


def objects(before: dict | None, after: dict) -> tuple[list[Obj], dict]:
    """The candidates from one snapshot (lifetime) or the difference of two (the window), and
    each table's facts the SQL needs."""
    now, old = _counts(after), _counts(before) if before else {}
    rows_now, rows_old = after["row_io"], (before or {}).get("row_io", {})

    def delta(key: str, i: int) -> float:
        a, b = now.get(key, [0.0, 0.0])[i], old.get(key, [0.0, 0.0])[i]
        return a - b if a >= b else a  # a file rebuilt in the window: its counters began anew

    # FILE_SIZE is 2^32-1 (or 2^64-1) when the server cannot stat the file: unknown, not huge
    paths = {_table_of(n): (os.path.normpath(os.path.join(after["datadir"], f)),
                            0 if int(s or 0) in (2**32 - 1, 2**64 - 1) else int(s or 0))
             for n, f, s in after["spaces"] if f and "/" in n}
    out, facts = [], {}
    for schema, table, size, options in after["tables"]:
        key = f"{schema}.{table}"
        if table.endswith((NEW, OLD)):
            continue  # a rebuild's scratch table
        path, file_size = paths.get(key, ("", 0))
        hits = max(0.0, rows_now.get(key, 0.0) - rows_old.get(key, 0.0))
        out.append(Obj(f"`{schema}`.`{table}`", "table", max(int(size or 0), file_size),
                       os.path.dirname(os.path.dirname(path)) if path else "ibdata1",
                       reads=delta(key, 0), hits=hits, writes=delta(key, 1),
                       movable="partitioned" not in (options or "").lower()))
        facts[out[-1].name] = {"schema": schema, "table": table, "path": path}
    out.append(Obj("redo log", "wal", after["log_size"], after["log_home"],
                   reads=delta("redo", 0), writes=delta("redo", 1), movable=False))
    t_reads, t_writes = delta("temp", 0), delta("temp", 1)
    if t_reads or t_writes:
        out.append(Obj("temp files (ibtmp1)", "temp", _temp_size(after["temp_path"]),
                       after["datadir"], reads=t_reads, writes=t_writes, movable=False))
    return out, facts


def _temp_size(spec: str) -> int:
    """The initial size of ``innodb_temp_data_file_path`` (``ibtmp1:12M:autoextend``)."""
    m = re.search(r":(\d+)([KMG])", spec or "", re.IGNORECASE)
    return int(m.group(1)) * 1024 ** ("KMG".index(m.group(2).upper()) + 1) if m else 12 << 20


def _not_movable(cur, facts: dict) -> dict[str, str]:
    """Tables the rebuild would break: foreign keys on either side, triggers."""
    why = {}
    names = {(f["schema"], f["table"]): n for n, f in facts.items()}
    for s, t, rs, rt in _rows(cur, "SELECT CONSTRAINT_SCHEMA, TABLE_NAME, "
                              "UNIQUE_CONSTRAINT_SCHEMA, REFERENCED_TABLE_NAME FROM "
                              "information_schema.REFERENTIAL_CONSTRAINTS"):
        for k in ((s, t), (rs, rt)):
            if k in names:
                why[names[k]] = "a foreign key"
    for s, t in _rows(cur, "SELECT EVENT_OBJECT_SCHEMA, EVENT_OBJECT_TABLE FROM "
                      "information_schema.TRIGGERS"):
        if (s, t) in names:
            why[names[(s, t)]] = "a trigger"
    return why


def _only_empty_dirs(path: str) -> bool:
    """``path`` holds something, and nothing but empty schema directories InnoDB made."""
    try:
        with os.scandir(path) as it:
            entries = list(it)
        return bool(entries) and all(e.is_dir(follow_symlinks=False)
                                     and not os.listdir(e.path) for e in entries)
    except OSError:
        return False


def read(dsn: str, server: dict, fast_path: str, *, interval: float | None, tablespace: str,
         sleep=time.sleep) -> Reading:
    """The candidates over the window; the server and the fast path checked before it."""
    datadir = server["data_dir"]
    try:
        conn = _connect(dsn)
    except Exception as e:  # noqa: BLE001 - the driver's errors, scrubbed of the password
        raise _error(dsn, e, "cannot connect") from None
    try:
        cur = conn.cursor()
        try:
            _preconditions(cur, server)
            first = snapshot(cur, datadir)
            # the server keeps tables at the fast path already (a plan applied before)
            existing = fast_path if any(
                os.path.normpath(os.path.join(datadir, f)).startswith(fast_path + os.sep)
                for _n, f, _s in first["spaces"] if f) else None
            if existing is None and _only_empty_dirs(fast_path):
                existing = fast_path  # left by a rebuild that failed or moved tables back
            server_can_write(fast_path, server["pid"], tablespace=existing)
            if interval:
                sleep(interval)
                second = snapshot(cur, datadir)
            objs, facts = objects(first, second) if interval else objects(None, first)
            blocked = _not_movable(cur, facts)
            for name, f in facts.items():
                f["ddl"] = cur_ddl = _rows(cur, "SHOW CREATE TABLE "
                                           f"{_qualified(f['schema'], f['table'])}")[0][1]
                f["columns"] = [c for (c,) in _rows(
                    cur, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE "
                    "TABLE_SCHEMA = %s AND TABLE_NAME = %s AND IS_GENERATED = 'NEVER' ORDER BY "
                    "ORDINAL_POSITION", (f["schema"], f["table"]))]
                f["blocked"] = blocked.get(name) or (
                    "partitions" if "PARTITION BY" in cur_ddl else
                    None if cur_ddl.startswith(f"CREATE TABLE {_ident(f['table'])} ") else
                    "SHOW CREATE TABLE not in the backtick form the rebuild copies")
        finally:
            cur.close()
    except (UsageError, EnvironmentProblem):
        raise
    except Exception as e:  # noqa: BLE001 - the driver's errors, scrubbed of the password
        raise _error(dsn, e, "cannot read the statistics") from None
    finally:
        conn.close()
    for o in objs:
        if o.name in facts and facts[o.name]["blocked"]:
            o.movable = False
    notes = [f"{n}: not moved by SQL ({f['blocked']}"
             + (": the rebuild's rename would leave it on the old table" if f["blocked"] in
                ("a foreign key", "a trigger") else "")
             + "); dump and reload it into a table created with DATA DIRECTORY"
             for n, f in facts.items() if f["blocked"]]
    window = _window(interval, first["uptime_s"], notes)
    return Reading(objs, window, notes, existing, "DATA DIRECTORY", COUNTERS, {"tables": facts})


def _window(interval: float | None, uptime_s: float, notes: list[str]) -> str:
    """What the counters cover; without an interval a note that they are the lifetime's."""
    if interval:
        return f"interval {interval:g} s"
    notes.append("counters since the server started, not the current load: give "
                 "--interval SECONDS to plan on what the server does now")
    return f"lifetime counters ({since_start(uptime_s)}, or performance_schema was truncated)"


def since_start(uptime_s: float) -> str:
    """'since the server started 2.0 h ago' (CK030 says it of the same counters)."""
    ago = f"{uptime_s / 3600:.1f} h" if uptime_s >= 3600 else f"{uptime_s:.0f} s"
    return f"since the server started {ago} ago"


# -- SQL --------------------------------------------------------------------------------------
def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _qualified(schema: str, table: str) -> str:
    return f"{_ident(schema)}.{_ident(table)}"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def moves(p: Plan) -> list[tuple[str, str, list[str], str]]:
    """Per table to move: (name, comment, statements, scratch table's qualified name)."""
    facts = p.extra.get("tables", {})
    fast = p.fast.path.rstrip("/")
    out = []
    for o in p.objects:
        f = facts.get(o.name)
        if o.kind != "table" or not o.movable or not f:
            continue
        on_fast_now = bool(f["path"]) and f["path"].startswith(fast + os.sep)
        if o.on_fast == on_fast_now:
            continue
        s, t = f["schema"], f["table"]
        ddl = _DATA_DIR_RE.sub("", f["ddl"])
        head = f"CREATE TABLE {_ident(t)}"
        if not ddl.startswith(head):
            continue  # SHOW CREATE TABLE as we never saw it: no rebuild guessed
        new, old, cur = _qualified(s, t + NEW), _qualified(s, t + OLD), _qualified(s, t)
        create = f"CREATE TABLE {new}" + ddl[len(head):]
        if o.on_fast:
            create += f" DATA DIRECTORY={_literal(fast)}"
        cols = ", ".join(_ident(c) for c in f["columns"])
        dest = f"the fast tier {fast}" if o.on_fast else "the data directory"
        comment = (f"{o.name} to {dest}: a rebuild (ALTER TABLE ... DATA DIRECTORY is ignored "
                   f"for an existing InnoDB table); lock: LOCK TABLES ... WRITE, other "
                   f"sessions' reads and writes of {o.name} wait for the copy, "
                   f"{duration(o.size, p)} ({o.size} bytes at the measured "
                   f"{min(p.fast.bandwidth, p.slow.bandwidth) / 1e6:.0f} MB/s); needs "
                   "innodb_file_per_table=ON and twice the table's space during the copy")
        out.append((o.name, comment, [
            create,
            f"LOCK TABLES {cur} WRITE, {new} WRITE",
            f"INSERT INTO {new} ({cols}) SELECT {cols} FROM {cur}",
            f"ALTER TABLE {cur} RENAME TO {old}",
            f"ALTER TABLE {new} RENAME TO {cur}",
            "UNLOCK TABLES",
            f"DROP TABLE {old}"], new))
    return out


def render_sql(p: Plan) -> str:
    lines = [sql_comment(f"pmem-advisor place mariadb: {p.window}; {p.fast_share:.0%} of I/O "
                         f"expected on {p.fast.path}"),
             "-- backups and replicas: mariadb-backup restores a DATA DIRECTORY table to its "
             "path (which must exist there); a replica rebuilds nothing unless the statements "
             "replicate (set sql_log_bin = 0 to keep them local)",
             "-- online DDL would not block writes, but no online ALTER moves an InnoDB file"]
    lines += [sql_comment(n) for n in p.notes if n.startswith("UNSAFE")]
    lines.append(f"SET SESSION lock_wait_timeout = {LOCK_WAIT_S};")
    for _name, comment, stmts, _new in moves(p):
        lines.append(sql_comment(comment))
        lines += [s + ";" for s in stmts]
    for o in p.objects:
        if o.on_fast and o.kind == "wal":
            lines.append(sql_comment(
                f"the redo log moves by innodb_log_group_home_dir = {p.fast.path} in my.cnf "
                "and a restart after a clean shutdown (move ib_logfile0 there with the server "
                "stopped), not by SQL"))
        elif o.on_fast and o.kind == "temp":
            lines.append(sql_comment(
                "InnoDB's temporary tablespace moves by innodb_temp_data_file_path = "
                f"../..{p.fast.path}/ibtmp1:12M:autoextend (relative to innodb_data_home_dir) "
                "or tmpdir for other temporary files, in my.cnf and a restart, not by SQL"))
    return "\n".join(lines) + "\n"


def apply(dsn: str, p: Plan) -> list[str]:
    """Run each table's rebuild with lock_wait_timeout and innodb_lock_wait_timeout at
    LOCK_WAIT_S (a busy table fails the statement, the load is not queued behind it). A
    failure before the renames drops the scratch copy and leaves the table as it was; the
    error is one line, exit 3."""
    done: list[str] = []
    try:
        conn = _connect(dsn)
    except Exception as e:  # noqa: BLE001
        raise _error(dsn, e, "cannot connect") from None
    try:
        cur = conn.cursor()
        cur.execute(f"SET SESSION lock_wait_timeout = {LOCK_WAIT_S}")
        cur.execute(f"SET SESSION innodb_lock_wait_timeout = {LOCK_WAIT_S}")
        for name, _comment, stmts, new in moves(p):
            for i, stmt in enumerate(stmts):
                try:
                    cur.execute(stmt)
                except Exception as e:  # noqa: BLE001 - the driver's error, worded below
                    if i < 4:  # before the first rename: the table is untouched
                        for undo in ("UNLOCK TABLES", f"DROP TABLE IF EXISTS {new}"):
                            try:
                                cur.execute(undo)
                            except Exception:  # noqa: BLE001, S110 - best effort, reported
                                pass
                    raise _error(dsn, e, f"{stmt.split(' (')[0][:80]} failed after "
                                 f"{len(done)} statements ({name} "
                                 f"{'left as it was' if i < 4 else 'half renamed: check it'})"
                                 ) from None
                done.append(stmt)
        cur.close()
    finally:
        conn.close()
    return done
