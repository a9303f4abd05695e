"""MySQL 8's side of ``place`` (issue 52): the counters per InnoDB table and the SQL that moves
a table into a general tablespace on the fast tier; the plan, the tiers and the solver are
rules/placement.py's, the catalogs MySQL shares with MariaDB are read by placement_mariadb's
readers (information_schema.TABLES, performance_schema's file and table I/O summaries).

Not met a live MySQL server: no MySQL 8 is installable on the machine this was written on.
Every statement and catalog below is taken from MySQL's own recorded test output and manual
(tests/placement/data/mysql_recorded.txt names the files and commits; docs/placement.md).

What differs from MariaDB, each from the recorded source:
- **General tablespaces move a table by ALTER** (create_tablespace.result):
  ``CREATE TABLESPACE ts ADD DATAFILE '/fast/ts.ibd' ENGINE=InnoDB`` then
  ``ALTER TABLE t TABLESPACE=`ts``` (and ``TABLESPACE=`innodb_file_per_table``` back to the
  data directory; DATA DIRECTORY on an ALTER is "option ignored"). The manual: "ALTER TABLE
  ... TABLESPACE operations cause a full table rebuild"; place asks for ALGORITHM=COPY, under
  which other sessions read the table and their writes wait for the copy.
- **The directory must be known to InnoDB**: a datafile outside the data directory must lie in
  ``innodb_directories`` (or innodb_data_home_dir / innodb_undo_directory), a read-only
  startup option ("CREATE TABLESPACE data file must be in one of these directories"), and
  never under the data directory ("The DATAFILE location cannot be under the datadir").
  place checks this before it reads anything and never pretends SQL could change it.
- **Catalogs renamed**: INNODB_SYS_TABLESPACES (MariaDB, MySQL 5.7) is INNODB_TABLESPACES on
  MySQL 8, with the path in INNODB_DATAFILES and the table-to-space map in INNODB_TABLES;
  information_schema.GLOBAL_STATUS is gone (SHOW GLOBAL STATUS, which both servers answer).
  information_schema.TABLES sizes are cached for information_schema_stats_expiry (a day by
  default): the session sets it to 0 before reading them.
- **One file, many tables**: a general tablespace's file counters are split over its tables by
  their share of row operations (table_io_waits_summary_by_table; by size when none): an
  estimate, said in the notes. Tables in the system tablespace have no file of their own.
- **Redo log**: 8.0.30 and later keep it in ``#innodb_redo`` under innodb_log_group_home_dir,
  sized by innodb_redo_log_capacity; earlier 8.0 in ib_logfile0..N-1, innodb_log_file_size x
  innodb_log_files_in_group. **Temp**: session temporary tablespaces (*.ibt) in
  innodb_temp_tablespaces_dir, the global ibtmp1 (innodb_temp_data_file_path), tmpdir. Both
  move by a config line and a restart, not by SQL.
"""

from __future__ import annotations

import os
import re
import time

from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.rules import placement_mariadb as maria
from pmem_advisor.rules.placement import (
    Obj,
    Plan,
    Reading,
    duration,
    server_can_write,
    sql_comment,
)

NAME = "mysql"  # Plan.engine
SERVER = "mysql"  # instances.live.read_server's engine
LOCK_WAIT_S = maria.LOCK_WAIT_S
FILE_PER_TABLE = "innodb_file_per_table"  # the tablespace name that sends a table back
REDO_CAPACITY_SINCE = (8, 0, 30)  # innodb_redo_log_capacity and #innodb_redo
check_dsn = maria.check_dsn

# MySQL 8's catalogs (the recorded test includes show_i_s_tablespaces.inc and the
# "innodb_tables and innodb_tablespaces" listing of create_tablespace.result)
Q_SPACES = ("SELECT t.NAME, s.NAME, s.SPACE_TYPE, d.PATH, s.FILE_SIZE FROM "
            "information_schema.INNODB_TABLES t LEFT JOIN information_schema.INNODB_TABLESPACES"
            " s ON s.SPACE = t.SPACE LEFT JOIN information_schema.INNODB_DATAFILES d ON "
            "d.SPACE = t.SPACE")
Q_GENERAL = ("SELECT s.NAME, d.PATH, s.FILE_SIZE FROM information_schema.INNODB_TABLESPACES s "
             "JOIN information_schema.INNODB_DATAFILES d ON d.SPACE = s.SPACE WHERE "
             "s.SPACE_TYPE = 'General'")
Q_STATUS = "SHOW GLOBAL STATUS WHERE Variable_name IN ('Uptime', 'Innodb_log_writes')"
Q_STATS_NOW = "SET SESSION information_schema_stats_expiry = 0"
COUNTERS = maria.COUNTERS + ("; a general tablespace's file counts are split over its tables "
                             "by their row operations (an estimate: one file, many tables)")


def version_of(server: dict) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", server.get("version") or "")[:3]) or (0,)


def check_server(server: dict) -> None:
    """MySQL 8 only: MariaDB answering is the other engine's module, 5.7 has the old catalogs."""
    if server.get("flavour") == "mariadb":
        raise UsageError(f"place mysql: this is MariaDB {server.get('version')}: use "
                         "place mariadb (it moves tables by DATA DIRECTORY, MySQL by general "
                         "tablespaces)")
    if version_of(server) < (8,):
        raise UsageError(f"place mysql reads MySQL 8.0 or later (INNODB_TABLESPACES, "
                         f"innodb_directories), not {server.get('version')}")


def check_tablespace_name(name: str) -> None:
    """InnoDB's own refusals for a general tablespace's name (create_tablespace.result)."""
    if not name or "/" in name or name.startswith("innodb_") or len(name) > 64:
        raise UsageError(f"--tablespace {name!r}: InnoDB refuses a general tablespace name "
                         "that is empty, has '/', starts with innodb_ or exceeds 64 characters")


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def _dirs(settings: dict, datadir: str) -> list[str]:
    """The directories InnoDB knows besides the data directory: innodb_directories (';'
    separated) and the data home and undo directories it appends to them."""
    raw = (settings.get("innodb_directories") or "").split(";")
    raw += [settings.get("innodb_data_home_dir") or "", settings.get("innodb_undo_directory")
            or ""]
    out = []
    for d in raw:
        d = d.strip().strip('"')
        if d:
            full = os.path.realpath(os.path.join(datadir, d))
            if full not in out:
                out.append(full)
    return out


def known_directory(fast_path: str, settings: dict, datadir: str) -> str:
    """The known directory the fast path lies in; one-line UsageError when it is under the data
    directory or in no directory InnoDB knows (innodb_directories needs a restart)."""
    fast, data = os.path.realpath(fast_path), os.path.realpath(datadir)
    if _under(fast, data):
        raise UsageError(f"--fast {fast_path} is inside the data directory {datadir}: MySQL "
                         "creates no general tablespace under the data directory")
    for d in _dirs(settings, datadir):
        if not _under(d, data) and _under(fast, d):
            return d
    current = settings.get("innodb_directories") or ""
    wanted = ";".join([x for x in current.split(";") if x.strip()] + [fast_path])
    raise UsageError(f"--fast {fast_path} is not in innodb_directories "
                     f"({current or 'empty'}): MySQL creates a general tablespace only in a "
                     "directory known to InnoDB, and innodb_directories is read-only (a restart, "
                     "not SQL)", hint=f'innodb_directories="{wanted}" under [mysqld], restart, '
                                      "then place again")


def _preconditions(cur, settings: dict) -> None:
    if (settings.get("performance_schema") or "ON").upper() not in ("ON", "1"):
        raise EnvironmentProblem("performance_schema is OFF: place reads its per-file I/O "
                                 "counters", hint="set performance_schema = ON under [mysqld] "
                                                  "and restart (MySQL 8's default is ON)")
    if not maria._instrument_on(cur):
        raise EnvironmentProblem(f"performance_schema's {maria.DATA} instrument is off: no "
                                 "per-file I/O counters to place by",
                                 hint="UPDATE performance_schema.setup_instruments SET "
                                      f"ENABLED = 'YES', TIMED = 'YES' WHERE NAME = '{maria.DATA}'")


def redo_facts(settings: dict, datadir: str, version: tuple[int, ...]) -> dict:
    """Where the redo log is and how much it takes, by the server's version."""
    home = os.path.normpath(os.path.join(datadir, settings.get("innodb_log_group_home_dir")
                                         or "./"))
    if version >= REDO_CAPACITY_SINCE and settings.get("innodb_redo_log_capacity"):
        return {"size": int(settings["innodb_redo_log_capacity"]), "home": home,
                "files": os.path.join(home, "#innodb_redo"), "capacity": True}
    size = int(settings.get("innodb_log_file_size") or 0) * int(
        settings.get("innodb_log_files_in_group") or 2)
    return {"size": size, "home": home, "files": home, "capacity": False}


def _decode(name: str) -> str:
    """InnoDB's file-safe names (``@0023`` for ``#``) back to the SQL name."""
    return re.sub(r"@([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), name)


def snapshot(cur, server: dict) -> dict:
    """Every counter the plan needs, read in one go."""
    settings, datadir = server["settings"], server["data_dir"]
    db, tables = maria._tables(cur)
    status = dict(maria._rows(cur, Q_STATUS))
    temp_dir = settings.get("innodb_temp_tablespaces_dir") or "./#innodb_temp/"
    return {"at": time.time(), "db": db, "datadir": datadir, "tables": tables,
            "spaces": maria._rows(cur, Q_SPACES), "general": maria._rows(cur, Q_GENERAL),
            "files": maria._files(cur), "row_io": maria._row_io(cur),
            "uptime_s": float(status.get("Uptime") or 0),
            "log_writes": float(status.get("Innodb_log_writes") or 0),
            "redo": redo_facts(settings, datadir, version_of(server)),
            "temp_path": settings.get("innodb_temp_data_file_path") or "ibtmp1:12M:autoextend",
            "temp_dir": os.path.normpath(os.path.join(datadir, temp_dir))}


def _where(snap: dict) -> tuple[dict, dict, dict]:
    """Each table (``db.t``) -> (space name, type, absolute path, file size); each general
    tablespace's absolute path -> its name; each file of one table (partitions: several a
    table) -> the table."""
    tables, own = {}, {}
    for tname, sname, stype, path, size in snap["spaces"]:
        if not tname or "/" not in tname:
            continue
        key = maria._table_of(_decode(tname))
        full = os.path.normpath(os.path.join(snap["datadir"], path)) if path else ""
        # FILE_SIZE is 2^32-1 (or 2^64-1) when the server cannot stat the file: unknown
        size = 0 if int(size or 0) in (2**32 - 1, 2**64 - 1) else int(size or 0)
        if full and stype != "General":
            own[full] = key
        old = tables.get(key)
        if old and stype != "General":  # partitions: one table, several files
            size += old[3]
        tables[key] = (sname or "innodb_system", stype or "System", full, size)
    general = {os.path.normpath(os.path.join(snap["datadir"], p)): n
               for n, p, _s in snap["general"] if p}
    return tables, general, own


def _counts(snap: dict) -> dict:
    """[reads, writes] in file operations per table file (``db.t``), per general tablespace
    (``("ts", name)``), ``redo`` and ``temp``."""
    _tables, general, by_path = _where(snap)
    temp_file = os.path.basename((snap["temp_path"] or "ibtmp1").split(":")[0])
    out: dict = {}
    for fname, event, reads, writes, _br, _bw in snap["files"]:
        path = os.path.normpath(os.path.join(snap["datadir"], fname))
        key = ({maria.LOG: "redo", maria.TEMP: "temp"}.get(event)
               or ("temp" if os.path.basename(path) == temp_file
                   or _under(path, snap["temp_dir"]) else None)
               or by_path.get(path) or (("ts", general[path]) if path in general else None))
        if key:
            c = out.setdefault(key, [0.0, 0.0])
            c[0] += float(reads or 0)
            c[1] += float(writes or 0)
    if "redo" not in out:  # no file instrument for it: the server's count of log writes
        out["redo"] = [0.0, snap["log_writes"]]
    return out


def objects(before: dict | None, after: dict) -> tuple[list[Obj], dict, list[str]]:
    """The candidates from one snapshot (lifetime) or the difference of two (the window), each
    table's facts the SQL needs, and the notes on what was estimated."""
    now, old = _counts(after), _counts(before) if before else {}
    rows_now, rows_old = after["row_io"], (before or {}).get("row_io", {})

    def delta(key, i: int) -> float:
        a, b = now.get(key, [0.0, 0.0])[i], old.get(key, [0.0, 0.0])[i]
        return a - b if a >= b else a  # a file rebuilt in the window: its counters began anew

    where = _where(after)[0]
    rows = []
    for schema, table, size, options in after["tables"]:
        key = f"{schema}.{table}"
        space, stype, path, file_size = where.get(key, ("innodb_system", "System", "", 0))
        hits = max(0.0, rows_now.get(key, 0.0) - rows_old.get(key, 0.0))
        size = max(int(size or 0), file_size if stype != "General" else 0)
        rows.append((schema, table, key, space, stype, path, size, hits, options))
    # a general tablespace's file I/O over its tables, by row operations (else by size)
    shares: dict[str, float] = {}
    for space in {r[3] for r in rows if r[4] == "General"}:
        members = [r for r in rows if r[3] == space and r[4] == "General"]
        weight = sum(r[7] for r in members) or sum(r[6] for r in members) or 1
        for r in members:
            shares[r[2]] = (r[7] if any(m[7] for m in members) else r[6]) / weight
    out, facts, notes = [], {}, []
    for schema, table, key, space, stype, path, size, hits, options in rows:
        if stype == "General":
            reads, writes = (delta(("ts", space), i) * shares[key] for i in (0, 1))
            shown = f"{space} ({os.path.dirname(path)})"
        else:
            reads, writes = delta(key, 0), delta(key, 1)
            shown = os.path.dirname(os.path.dirname(path)) if path else space
        name = f"`{schema}`.`{table}`"
        partitioned = "partitioned" in (options or "").lower()
        out.append(Obj(name, "table", size, shown, reads=reads, hits=hits, writes=writes,
                       movable=not partitioned))
        facts[name] = {"schema": schema, "table": table, "space": space, "space_type": stype,
                       "path": path, "blocked": "partitions" if partitioned else None}
        if stype == "System":
            notes.append(f"{name} is in the system tablespace: its I/O is not told apart from "
                         "ibdata1's (counted as none); ALTER TABLE ... TABLESPACE can still "
                         "move it")
    if any(r[4] == "General" for r in rows):
        notes.append("tables in a general tablespace share one file: their reads and writes are "
                     "its file's, split by their row operations (an estimate)")
    redo = after["redo"]
    out.append(Obj("redo log", "wal", redo["size"], redo["home"],
                   reads=delta("redo", 0), writes=delta("redo", 1), movable=False))
    t_reads, t_writes = delta("temp", 0), delta("temp", 1)
    if t_reads or t_writes:
        out.append(Obj("temp files (ibtmp1, #innodb_temp)", "temp",
                       maria._temp_size(after["temp_path"]), after["temp_dir"],
                       reads=t_reads, writes=t_writes, movable=False))
    return out, facts, notes


def existing_tablespace(snap: dict, fast_path: str, tablespace: str) -> str | None:
    """The general tablespace whose file is already under the fast path (a plan applied before);
    a one-line UsageError when the wanted name is taken by a tablespace elsewhere."""
    fast = os.path.realpath(fast_path)
    at_fast = None
    for name, path, _size in snap["general"]:
        full = os.path.realpath(os.path.join(snap["datadir"], path)) if path else ""
        if full and _under(os.path.dirname(full), fast):
            at_fast = at_fast or name
        elif name == tablespace:
            raise UsageError(f"--tablespace {tablespace}: a general tablespace of that name "
                             f"already has its file at {full}, not under {fast_path}",
                             hint="give another --tablespace NAME")
    return at_fast


def read(dsn: str, server: dict, fast_path: str, *, interval: float | None, tablespace: str,
         sleep=time.sleep) -> Reading:
    """The candidates over the window; the server, the name and the fast path checked first
    (no connection is worth opening for a path MySQL would refuse)."""
    check_server(server)
    check_tablespace_name(tablespace)
    known = known_directory(fast_path, server["settings"], server["data_dir"])
    try:
        conn = maria._connect(dsn)
    except Exception as e:  # noqa: BLE001 - the driver's errors, scrubbed of the password
        raise maria._error(dsn, e, "cannot connect") from None
    try:
        cur = conn.cursor()
        try:
            _preconditions(cur, server["settings"])
            cur.execute(Q_STATS_NOW)
            first = snapshot(cur, server)
            existing = existing_tablespace(first, fast_path, tablespace)
            server_can_write(fast_path, server["pid"], tablespace=existing)
            second = None
            if interval:
                sleep(interval)
                second = snapshot(cur, server)
        finally:
            cur.close()
    except (UsageError, EnvironmentProblem):
        raise
    except Exception as e:  # noqa: BLE001 - the driver's errors, scrubbed of the password
        raise maria._error(dsn, e, "cannot read the statistics") from None
    finally:
        conn.close()
    objs, facts, notes = objects(first, second) if interval else objects(None, first)
    return reading(objs, facts, notes, first, interval, existing or tablespace, existing, known)


def reading(objs, facts, notes, first, interval, tablespace, existing, known) -> Reading:
    """The Reading for ``plan``: window, notes and what render_sql needs in ``extra``."""
    notes = list(notes) + [f"{n}: not moved by SQL (partitions: MySQL 8.0.13+ keeps no "
                           "partition in a general tablespace)" for n, f in facts.items()
                           if f["blocked"]]
    window = maria._window(interval, first["uptime_s"], notes)
    return Reading(objs, window, notes, existing, tablespace, COUNTERS,
                   {"tables": facts, "known_dir": known, "redo": first["redo"],
                    "temp_dir": first["temp_dir"]})


# -- SQL --------------------------------------------------------------------------------------
_ident, _qualified, _literal = maria._ident, maria._qualified, maria._literal


def _alter(f: dict, dest: str) -> str:
    return (f"ALTER TABLE {_qualified(f['schema'], f['table'])} TABLESPACE={_ident(dest)}, "
            "ALGORITHM=COPY")


def moves(p: Plan) -> list[tuple[str, str, str]]:
    """Per statement: (object, comment, statement); the CREATE TABLESPACE first when a table
    goes to a tablespace not there yet."""
    facts, ts = p.extra.get("tables", {}), p.tablespace
    datafile = os.path.join(p.fast.path.rstrip("/"), f"{ts}.ibd")
    out, into_fast = [], False
    for o in p.objects:
        f = facts.get(o.name)
        if o.kind != "table" or not o.movable or not f:
            continue
        here = f["space"] == ts
        if o.on_fast == here:
            continue
        dest = ts if o.on_fast else FILE_PER_TABLE
        into_fast = into_fast or o.on_fast
        where = (f"the fast tier ({ts}, {datafile})" if o.on_fast else
                 "its own file in the data directory (innodb_file_per_table)")
        out.append((o.name, f"{o.name} to {where}: a full table rebuild (ALGORITHM=COPY); "
                    f"lock: other sessions read {o.name} during the copy, their writes wait for "
                    f"it (an exclusive metadata lock at its end); {duration(o.size, p)} "
                    f"({o.size} bytes at the measured "
                    f"{min(p.fast.bandwidth, p.slow.bandwidth) / 1e6:.0f} MB/s); needs the "
                    "table's size free on the target during the copy"
                    + ("" if o.on_fast else f"; {ts}'s file keeps the freed space (a general "
                       "tablespace never shrinks)"),
                    _alter(f, dest)))
    if p.existing_tablespace is None and into_fast:
        out.insert(0, (ts, f"the general tablespace {ts} on the fast tier: a new file, no "
                       "table locked", f"CREATE TABLESPACE {_ident(ts)} ADD DATAFILE "
                       f"{_literal(datafile)} ENGINE=InnoDB"))
    return out


def render_sql(p: Plan) -> str:
    known = p.extra.get("known_dir", "")
    lines = [sql_comment(f"pmem-advisor place mysql: {p.window}; {p.fast_share:.0%} of I/O "
                         f"expected on {p.fast.path}"),
             sql_comment(f"innodb_directories: {p.fast.path} lies in {known}, a directory "
                         "InnoDB knows; that list is a read-only startup option, which no "
                         "statement here changes"),
             "-- backups and replicas: the statements replicate (a replica needs the same "
             "directory in its innodb_directories; set sql_log_bin = 0 to keep them local); "
             "a backup restores the tablespace file to its path, which must exist there",
             "-- online DDL would not block writes, but ALTER TABLE ... TABLESPACE is a full "
             "rebuild: no in-place move of an InnoDB table's file"]
    lines += [sql_comment(n) for n in p.notes if n.startswith("UNSAFE")]
    lines.append(f"SET SESSION lock_wait_timeout = {LOCK_WAIT_S};")
    for _name, comment, stmt in moves(p):
        lines += [sql_comment(comment), stmt + ";"]
    redo = p.extra.get("redo") or {}
    for o in p.objects:
        if o.on_fast and o.kind == "wal":
            lines.append(sql_comment(
                f"the redo log moves by innodb_log_group_home_dir = {p.fast.path} in my.cnf and "
                "a restart after a clean shutdown, moving "
                + ("its #innodb_redo directory (innodb_redo_log_capacity "
                   f"{redo.get('size')} bytes)" if redo.get("capacity") else
                   "ib_logfile0..N-1") + " there with the server stopped; not by SQL"))
        elif o.on_fast and o.kind == "temp":
            lines.append(sql_comment(
                "temporary files move by innodb_temp_tablespaces_dir = "
                f"{p.fast.path}/#innodb_temp (session temporary tablespaces), "
                "innodb_temp_data_file_path (ibtmp1, relative to innodb_data_home_dir) and "
                "tmpdir (sort files), in my.cnf and a restart; not by SQL"))
    return "\n".join(lines) + "\n"


def apply(dsn: str, p: Plan) -> list[str]:
    """Run the statements with lock_wait_timeout and innodb_lock_wait_timeout at LOCK_WAIT_S:
    a busy table fails its ALTER instead of queueing the load behind it. MySQL 8's DDL is
    atomic: a failed ALTER leaves the table where it was. The error is one line, exit 3."""
    done: list[str] = []
    try:
        conn = maria._connect(dsn)
    except Exception as e:  # noqa: BLE001
        raise maria._error(dsn, e, "cannot connect") from None
    try:
        cur = conn.cursor()
        cur.execute(f"SET SESSION lock_wait_timeout = {LOCK_WAIT_S}")
        cur.execute(f"SET SESSION innodb_lock_wait_timeout = {LOCK_WAIT_S}")
        for name, _comment, stmt in moves(p):
            try:
                cur.execute(stmt)
            except Exception as e:  # noqa: BLE001 - the driver's error, worded below
                raise maria._error(dsn, e, f"{stmt[:80]} failed after {len(done)} statements "
                                   f"({name} left as it was)") from None
            done.append(stmt)
        cur.close()
    finally:
        conn.close()
    return done
