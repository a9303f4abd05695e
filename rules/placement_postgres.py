"""PostgreSQL's side of ``place`` (issue 52): the counters per object and the SQL that moves
them; the plan, the tiers and the solver are rules/placement.py's, shared with MariaDB.

Counters: pg_statio_user_tables (heap + TOAST + TOAST index blocks read and hit),
pg_statio_user_indexes, pg_stat_user_tables (tuple changes), sizes from pg_table_size /
pg_relation_size, tablespaces from pg_tablespace; the WAL (bytes written, from the LSN) and
temporary files (pg_stat_database.temp_bytes).

What the counters are and are not: a PostgreSQL "block read" is a miss in shared_buffers, which
the OS page cache may still serve; it is the upper bound of what the medium saw. Writes are
estimated from tuple changes (a change dirties a page), capped at one write of every page per
checkpoint, since a page dirtied twice between checkpoints is written once.
"""

from __future__ import annotations

import re
import time

from pmem_advisor.errors import EnvironmentProblem
from pmem_advisor.rules.placement import (
    LOCK_TIMEOUT,
    Obj,
    Plan,
    Reading,
    duration,
    server_can_write,
    sql_comment,
)

NAME = "postgres"  # Plan.engine
SERVER = "postgres"  # instances.live.read_server's engine
BLOCK = 8192  # PostgreSQL's block: the unit of its statio counters
COUNTERS = ("block reads are misses in shared_buffers (the OS cache may have served "
            "some); table and index writes are estimated from tuple changes")


def check_dsn(dsn: str) -> None:
    from pmem_advisor.connection import parse_dsn

    parse_dsn(dsn)


def read(dsn: str, server: dict, fast_path: str, *, interval: float | None, tablespace: str,
         sleep=time.sleep) -> Reading:
    """The candidates over the window; the fast path checked before the window starts."""
    import psycopg

    from pmem_advisor.connection import redact_dsn, scrub

    try:
        with psycopg.connect(dsn, connect_timeout=5, autocommit=True) as conn:
            existing = conn.execute("SELECT spcname FROM pg_tablespace WHERE "
                                    "pg_tablespace_location(oid) = %s", (fast_path,)).fetchone()
            # before the window: a bad path must not cost the user the interval first
            server_can_write(fast_path, server["pid"],
                             tablespace=existing[0] if existing else None)
            first = pg_snapshot(conn)
            if interval:
                sleep(interval)
                second = pg_snapshot(conn)
    except psycopg.Error as e:
        raise EnvironmentProblem(f"cannot read the statistics at {redact_dsn(dsn)}: "
                                 f"{scrub(str(e).strip().splitlines()[0], dsn)}") from None
    notes = []
    if interval:
        objects, window = pg_objects(first, second), f"interval {interval:g} s"
    else:
        age = first["stats_age_s"]
        objects = pg_objects(None, first)
        window = ("lifetime counters" + (f" (since the statistics reset {age / 3600:.1f} h ago)"
                                          if age else " (since the server's statistics began)"))
        notes.append("counters since the last reset, not the current load: give --interval "
                     "SECONDS to plan on what the server does now")
    return Reading(objects, window, notes, existing[0] if existing else None, tablespace,
                   COUNTERS)


# -- the counters ---------------------------------------------------------------------------
_PG_DEFAULT_SPC = ("(SELECT spcname FROM pg_tablespace WHERE oid = (SELECT dattablespace "
                   "FROM pg_database WHERE datname = current_database()))")
_PG_OBJECTS = f"""
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), 'table', pg_table_size(c.oid),
       coalesce(t.spcname, {_PG_DEFAULT_SPC}),
       coalesce(s.heap_blks_read, 0) + coalesce(s.toast_blks_read, 0)
         + coalesce(s.tidx_blks_read, 0),
       coalesce(s.heap_blks_hit, 0) + coalesce(s.toast_blks_hit, 0)
         + coalesce(s.tidx_blks_hit, 0),
       u.n_tup_ins + u.n_tup_upd + u.n_tup_del
FROM pg_statio_user_tables s JOIN pg_stat_user_tables u USING (relid)
JOIN pg_class c ON c.oid = s.relid JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace
UNION ALL
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), 'index',
       pg_relation_size(c.oid), coalesce(t.spcname, {_PG_DEFAULT_SPC}),
       coalesce(i.idx_blks_read, 0), coalesce(i.idx_blks_hit, 0),
       u.n_tup_ins + u.n_tup_upd - u.n_tup_hot_upd
FROM pg_statio_user_indexes i JOIN pg_stat_user_tables u ON u.relid = i.relid
JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace
"""


def pg_snapshot(conn) -> dict:
    """Every counter the plan needs, read in one go (one transaction: one consistent view)."""
    version = int(conn.execute("SHOW server_version_num").fetchone()[0])
    rows = conn.execute(_PG_OBJECTS).fetchall()
    wal_lsn, temp_files, temp_bytes, max_wal, reset = conn.execute(
        "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0'), d.temp_files, d.temp_bytes,"
        " pg_size_bytes(current_setting('max_wal_size')), extract(epoch FROM now() -"
        " d.stats_reset) FROM pg_stat_database d WHERE d.datname = current_database()"
    ).fetchone()
    ckpt = ("SELECT num_timed + num_requested FROM pg_stat_checkpointer" if version >= 170000
            else "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")
    checkpoints = conn.execute(ckpt).fetchone()[0]
    return {"at": time.time(), "objects": [list(r) for r in rows],
            "wal_bytes": float(wal_lsn), "temp_files": float(temp_files or 0),
            "temp_bytes": float(temp_bytes or 0), "max_wal_size": int(max_wal),
            "checkpoints": float(checkpoints or 0),
            "stats_age_s": float(reset) if reset is not None else None}


def pg_objects(before: dict | None, after: dict) -> list[Obj]:
    """The candidates from one snapshot (lifetime) or the difference of two (the window)."""
    old = {(r[0], r[1]): r for r in (before or {}).get("objects", [])}
    zero = [None, None, 0, None, 0, 0, 0]
    ckpts = after["checkpoints"] - (before["checkpoints"] if before else 0)
    out = []
    for r in after["objects"]:
        o = old.get((r[0], r[1]), zero) if before else zero
        size = int(r[2])
        changes = max(0.0, float(r[6]) - float(o[6]))
        # a page dirtied again before the next checkpoint is written once
        writes = min(changes, (size / BLOCK) * (ckpts + 1))
        out.append(Obj(r[0], r[1], size, r[3], reads=max(0.0, float(r[4]) - float(o[4])),
                       hits=max(0.0, float(r[5]) - float(o[5])), writes=writes))
    wal = after["wal_bytes"] - (before["wal_bytes"] if before else 0)
    out.append(Obj("WAL", "wal", after["max_wal_size"], "pg_wal", writes=wal / BLOCK,
                   movable=False))
    files = after["temp_files"] - (before["temp_files"] if before else 0)
    tbytes = after["temp_bytes"] - (before["temp_bytes"] if before else 0)
    if files > 0 and tbytes > 0:
        # temp files are written once and read back once; the mean file is what must fit
        out.append(Obj("temp files", "temp", int(tbytes / files), "temp_tablespaces",
                       reads=tbytes / BLOCK, writes=tbytes / BLOCK))
    return out


# -- SQL --------------------------------------------------------------------------------------
def statements(p: Plan) -> list[tuple[str, str]]:
    """(comment, statement) pairs; a statement of "" is advice only (the WAL)."""
    spc = p.existing_tablespace or p.tablespace
    out: list[tuple[str, str]] = []
    moves = [o for o in p.objects if o.movable and o.kind in ("table", "index")
             and (o.on_fast != (o.tablespace == spc))]
    temp = next((o for o in p.objects if o.kind == "temp" and o.on_fast), None)
    if p.existing_tablespace is None and (any(o.on_fast for o in moves) or temp):
        out.append(("the fast tier as a tablespace (the directory must be empty and owned by "
                    "the server's user)",
                    f"CREATE TABLESPACE {_ident(spc)} LOCATION {_literal(p.fast.path)}"))
    for o in moves:
        dest = spc if o.on_fast else "pg_default"
        out.append((f"lock: ACCESS EXCLUSIVE on {o.name} (reads and writes wait) for "
                    f"{duration(o.size, p)} ({o.size} bytes at the measured "
                    f"{min(p.fast.bandwidth, p.slow.bandwidth) / 1e6:.0f} MB/s); pg_repack "
                    "--tablespace moves it holding the lock only briefly",
                    f"ALTER {o.kind.upper()} {o.name} SET TABLESPACE {_ident(dest)}"))
    if temp:
        out.append(("temporary files on the fast tier (no lock; new sessions)",
                    f"ALTER SYSTEM SET temp_tablespaces = {_literal(spc)}"))
        out.append(("", "SELECT pg_reload_conf()"))
    wal = next((o for o in p.objects if o.kind == "wal" and o.on_fast), None)
    if wal:
        out.append(("the WAL moves with the server stopped, not by SQL: stop it, move pg_wal "
                    "to the fast tier and leave a symlink (initdb --waldir does it at init)", ""))
    return out


def render_sql(p: Plan) -> str:
    lines = [sql_comment(f"pmem-advisor place: {p.window}; {p.fast_share:.0%} of I/O expected "
                         f"on {p.fast.path}"),
             "-- backups and replicas: a tablespace is a path on every standby too "
             "(pg_basebackup maps it with --tablespace-mapping)"]
    lines += [sql_comment(n) for n in p.notes if n.startswith("UNSAFE")]
    for comment, stmt in statements(p):
        if comment:
            lines.append(sql_comment(comment))
        if stmt:
            lines.append(stmt + ";")
    return "\n".join(lines) + "\n"


def apply(dsn: str, p: Plan) -> list[str]:
    """Run the plan's statements one by one, each waiting at most LOCK_TIMEOUT for its lock
    (the server's own locking: a busy table makes it fail, it never blocks the load behind a
    queued ACCESS EXCLUSIVE). Returns the statements run; a failure is one line, exit 3."""
    import psycopg

    from pmem_advisor.connection import scrub

    done = []
    with psycopg.connect(dsn, connect_timeout=5, autocommit=True) as conn:
        conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        for _comment, stmt in statements(p):
            if not stmt:
                continue
            try:
                conn.execute(stmt)
            except psycopg.Error as e:
                raise EnvironmentProblem(f"{stmt} failed after {len(done)} statements: "
                                         f"{scrub(str(e).strip().splitlines()[0], dsn)}"
                                         ) from None
            done.append(stmt)
    return done


def _ident(name: str) -> str:
    return name if re.fullmatch(r"[a-z_][a-z0-9_]*", name) else '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
