"""DB-API connections from a ConnInfo, for the steps that are not load generators
(creating the database, OLAP data generation and queries, setup scripts)."""

from __future__ import annotations

import re
from typing import Any

from pmem_advisor.connection import ConnInfo
from pmem_advisor.errors import EnvironmentProblem, UsageError

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def connect(conn: ConnInfo, *, dbname: str | None = None) -> Any:
    """An autocommit connection; ``dbname=""`` connects without choosing a database (MySQL)."""
    db = conn.dbname if dbname is None else dbname
    try:
        if conn.engine == "postgres":
            import psycopg

            kwargs: dict[str, Any] = {"user": conn.user, "dbname": db or "postgres"}
            if conn.socket_dir:
                kwargs["host"] = conn.socket_dir
            elif conn.host:
                kwargs["host"] = conn.host
            if conn.port:
                kwargs["port"] = conn.port
            if conn.password:
                kwargs["password"] = conn.password
            return psycopg.connect(autocommit=True, connect_timeout=10, **kwargs)
        import pymysql

        kwargs = {"user": conn.user, "password": conn.password or "", "autocommit": True,
                  "connect_timeout": 10}
        if conn.socket_path:
            kwargs["unix_socket"] = conn.socket_path
        else:
            kwargs["host"] = conn.host or "127.0.0.1"
            kwargs["port"] = conn.port or 3306
        if db:
            kwargs["database"] = db
        return pymysql.connect(**kwargs)
    except Exception as e:  # driver errors differ per engine; the message is what matters
        raise EnvironmentProblem(f"cannot connect to {conn.redacted()}: {_first_line(e)}") from e


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


def ensure_database(conn: ConnInfo) -> None:
    """Create the target database when the server does not have it yet."""
    if not _IDENT.match(conn.dbname):
        raise UsageError(f"database name {conn.dbname!r} is not a plain identifier")
    if conn.engine == "postgres":
        with connect(conn, dbname="postgres") as c:
            found = c.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (conn.dbname,)
            ).fetchone()
            if not found:
                c.execute(f'CREATE DATABASE "{conn.dbname}"')
        return
    c = connect(conn, dbname="")
    try:
        with c.cursor() as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{conn.dbname}`")
    finally:
        c.close()


def execute_all(conn: ConnInfo, statements: list[str], *, what: str) -> None:
    """Run statements in order on one connection; the first failure names the statement."""
    c = connect(conn)
    try:
        cur = c.cursor()
        for i, sql in enumerate(statements, 1):
            try:
                cur.execute(sql)
            except Exception as e:
                raise EnvironmentProblem(
                    f"{what}: statement {i} failed: {_first_line(e)}"
                ) from e
    finally:
        c.close()


def analyze_database(conn: ConnInfo) -> None:
    """Fresh planner statistics (and, on PostgreSQL, a vacuumed visibility map) after a load,
    so every trial restored from the golden copy starts from the same plans."""
    if conn.engine == "postgres":
        execute_all(conn, ["VACUUM ANALYZE"], what="analyze after load")
        return
    c = connect(conn)
    try:
        with c.cursor() as cur:
            cur.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = %s AND table_type = 'BASE TABLE'",
                (conn.dbname,),
            )
            for (table,) in cur.fetchall():
                cur.execute(f"ANALYZE TABLE `{table}`")
                cur.fetchall()
    finally:
        c.close()


def query_row(conn: ConnInfo, sql: str, *, missing_ok: bool = False) -> tuple | None:
    """The first row, or None when there is none (or, with ``missing_ok``, when the query
    fails, e.g. on a table that does not exist)."""
    c = connect(conn)
    try:
        cur = c.cursor()
        try:
            cur.execute(sql)
        except Exception as e:
            if missing_ok:
                return None
            raise EnvironmentProblem(f"query failed: {_first_line(e)}") from e
        row = cur.fetchone()
        return tuple(row) if row else None
    finally:
        c.close()
