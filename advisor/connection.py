"""How to reach a database server: the one value passed between instances, workloads and check."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pmem_advisor.errors import InputError


@dataclass(frozen=True)
class ConnInfo:
    """Connection parameters for a PostgreSQL or MySQL/MariaDB server.

    ``socket_dir`` (PostgreSQL: the directory holding ``.s.PGSQL.<port>``) or
    ``socket_path`` (MySQL/MariaDB: the socket file) is preferred over ``host``/``port``.
    ``bindir`` names the server's own client tools (pgbench, psql) when they came with it.
    """

    engine: str  # "postgres" | "mysql"
    flavour: str  # "postgresql" | "mysql" | "mariadb"
    version: str  # e.g. "18.6", "10.11.19"
    user: str
    dbname: str
    password: str | None = None
    host: str | None = None  # 127.0.0.1 only when loopback TCP was asked for
    port: int | None = None
    socket_dir: str | None = None
    socket_path: str | None = None
    bindir: str | None = None
    extra: dict = field(default_factory=dict)

    def redacted(self) -> str:
        """A printable description that never contains the password."""
        where = self.socket_path or self.socket_dir or f"{self.host}:{self.port}"
        return f"{self.flavour} {self.version} {self.user}@{where}/{self.dbname}"


# --- DSNs and storage URLs: parsed by the drivers' own parsers, printed only redacted ---------

_MYSQL_SCHEMES = ("mysql", "mariadb")
_PG_SCHEMES = ("postgresql", "postgres")
_KNOWN_SCHEMES = (*_MYSQL_SCHEMES, *_PG_SCHEMES, "sqlite", "oracle", "mssql")
_SECRET_KEYS = r"password|passwd|pwd|sslpassword"
# The fallback for text no driver parses: a value runs to an unescaped space, as in libpq
# (``password=a\ b`` is "a b"), or is quoted.
_KEYWORD_SECRET = re.compile(
    rf"\b((?:{_SECRET_KEYS})\s*=\s*)('(?:[^'\\]|\\.)*'?|(?:\\.|\\$|\S)+)", re.IGNORECASE
)
_SCHEME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9+.\-]*):(/*)(.*)$", re.DOTALL)
ENV_VAR = "PMEM_ADVISOR_DSN"
_MAX_DSN_FILE = 64 * 1024


def _scheme(text: str) -> str | None:
    m = _SCHEME.match(text)
    if not m or "=" in m.group(1):
        return None
    return m.group(1).split("+", 1)[0].lower()


def dsn_engine(text: str) -> str:
    """``postgres`` or ``mysql`` for a DSN (libpq keywords are PostgreSQL's unless they name a
    MySQL socket)."""
    scheme = _scheme(text)
    if scheme in _MYSQL_SCHEMES:
        return "mysql"
    if scheme in _PG_SCHEMES:
        return "postgres"
    if re.search(r"\b(unix_socket|socket)\s*=", text):
        return "mysql"
    return "postgres"


def parse_dsn(text: str) -> dict[str, Any]:
    """The connection parameters of a DSN, with libpq's key names (host, port, user, password,
    dbname, ...; ``unix_socket`` for MySQL sockets).

    PostgreSQL URIs and ``key=value`` strings are parsed by psycopg's conninfo (what libpq will
    do with them), ``mysql://``/``mariadb://`` URLs by SQLAlchemy's URL. ``InputError`` with
    the DSN redacted when it cannot be parsed.
    """
    if not isinstance(text, str) or not text.strip():
        raise InputError("empty DSN", hint="give e.g. 'host=/run/postgresql dbname=postgres'")
    scheme = _scheme(text)
    try:
        if scheme in _MYSQL_SCHEMES:
            return _parse_mysql_url(text.strip())
        if scheme is not None and scheme not in _PG_SCHEMES:
            raise ValueError(f"unknown scheme {scheme!r}: use postgresql:// or mysql://")
        from psycopg.conninfo import conninfo_to_dict

        parsed = {k: v for k, v in conninfo_to_dict(text.strip()).items() if v is not None}
        _refuse_split_password(parsed, text)
        return parsed
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - psycopg/SQLAlchemy/int() errors quote the input
        raise InputError(f"cannot parse the DSN {redact_dsn(text)}: {scrub(_first_line(e), text)}",
                         hint="e.g. postgresql://user@host:5432/db, 'host=/run/postgresql "
                         "dbname=db' or mysql://user@host:3306/db") from None


def _parse_mysql_url(text: str) -> dict[str, Any]:
    from sqlalchemy.engine import make_url

    url = make_url(text)
    out: dict[str, Any] = {"user": url.username or "root", "password": url.password,
                           "host": url.host, "port": url.port, "dbname": url.database}
    query = {k: (v[0] if isinstance(v, tuple) else v) for k, v in url.query.items()}
    sock = query.pop("unix_socket", None) or query.pop("socket", None)
    if sock:
        out["unix_socket"] = sock
    out.update(query)
    out = {k: v for k, v in out.items() if v is not None}
    _refuse_split_password(out, text)
    return out


def _refuse_split_password(parsed: dict[str, Any], text: str) -> None:
    """A password with a raw ``@`` makes the parsers cut it short and take the rest for the
    host: say so instead of connecting to a host named after half the password."""
    if "@" in str(parsed.get("host", "")):
        raise InputError(f"the DSN {redact_dsn(text)} has an '@' in its password or host",
                         hint="percent-encode '@' in a password as %40")


def mysql_connect_kwargs(text: str) -> dict[str, Any]:
    """Arguments for ``pymysql.connect`` from a ``mysql://`` URL or ``key=value`` string."""
    if _scheme(text) in _MYSQL_SCHEMES:
        d = parse_dsn(text)
    else:
        d = parse_dsn(re.sub(r"\b(unix_)?socket\s*=", "host=", text))  # libpq-style keywords
        if str(d.get("host", "")).startswith("/"):
            d["unix_socket"] = d.pop("host")
    kw: dict[str, Any] = {"user": d.get("user", "root"), "password": d.get("password", ""),
                          "host": d.get("host", "localhost"),
                          "database": d.get("dbname") or d.get("database")}
    try:
        kw["port"] = int(d.get("port", 3306))
    except (TypeError, ValueError):
        raise InputError(f"bad port {d.get('port')!r} in the DSN {redact_dsn(text)}") from None
    if d.get("unix_socket"):
        kw["unix_socket"] = d["unix_socket"]
    return kw


def redact_dsn(text: str) -> str:
    """``text`` with every password replaced by ``***``; safe on malformed input.

    Handles URIs (the user info up to the *last* ``@`` of the authority, so a password that
    itself contains ``@`` is hidden whole), ``password=`` keywords (quoted or not) and query
    parameters. A text this cannot make sense of but that has an ``@`` loses everything before
    the last ``@``: a printed host is worth less than a leaked password.
    """
    if not isinstance(text, str):
        return "***"
    by_driver = _redacted_by_driver(text)
    if by_driver is not None:
        return by_driver
    out = _KEYWORD_SECRET.sub(r"\1***", text)
    m = _SCHEME.match(out)
    if m and "=" not in m.group(1) and (m.group(2) or _scheme(out) in _KNOWN_SCHEMES):
        rest = m.group(3)
        query_at = rest.find("?")
        authority = rest if query_at < 0 else rest[:query_at]
        at = authority.rfind("@")
        if at < 0 and query_at >= 0:
            at = rest.rfind("@")
        if at >= 0:
            userinfo = rest[:at]
            user = userinfo.split(":", 1)[0]
            hidden = f"{user}:***" if ":" in userinfo else user
            out = f"{m.group(1)}:{m.group(2)}{hidden}{rest[at:]}"
    elif "@" in out and "=" not in out:
        out = "***" + out[out.rfind("@"):]
    return out


def _redacted_by_driver(text: str) -> str | None:
    """The DSN re-rendered by its driver's own parser with the password hidden: libpq's
    conninfo parser (psycopg) for ``key=value`` strings, SQLAlchemy's URL for URLs of other
    schemes; None when the driver cannot parse it (the fallback below then redacts)."""
    scheme = _scheme(text)
    try:
        if scheme is None and "=" in text:
            from psycopg.conninfo import conninfo_to_dict, make_conninfo

            parsed = conninfo_to_dict(text.strip())
            hidden = {k: ("***" if re.fullmatch(_SECRET_KEYS, k) else v)
                      for k, v in parsed.items() if v is not None}
            return make_conninfo("", **hidden)
        if scheme in _MYSQL_SCHEMES or scheme in ("sqlite", "oracle", "mssql"):
            if text.split("?", 1)[0].count("@") > 1:
                return None  # a raw '@' in the password: the URL parser cuts it short
            from sqlalchemy.engine import make_url

            url = make_url(text.strip())
            query = {k: ("***" if re.fullmatch(_SECRET_KEYS, k, re.IGNORECASE) else v)
                     for k, v in url.query.items()}
            return url.set(query=query).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - malformed: the fallback redacts more bluntly
        return None
    return None


def scrub(message: str, dsn: str) -> str:
    """A driver's message with the DSN's password (and any quoted copy of the DSN) removed."""
    text = " ".join(str(message).split())
    text = re.sub(r'"([^"]*)"', lambda m: '"' + redact_dsn(m.group(1)) + '"', text)
    text = text.replace(dsn.strip(), redact_dsn(dsn.strip())) if dsn.strip() else text
    for secret in _secrets(dsn):  # a safety net: short ones only as whole words
        if len(secret) >= 6:
            text = text.replace(secret, "***")
        else:
            text = re.sub(rf"(?<![\w*]){re.escape(secret)}(?![\w*])", "***", text)
    return _KEYWORD_SECRET.sub(r"\1***", text)


def _secrets(dsn: str) -> list[str]:
    """Every string that could be the password, parsed or guessed, longest first."""
    found = {m.group(2).strip("'") for m in _KEYWORD_SECRET.finditer(dsn)}
    m = _SCHEME.match(dsn)
    if m:
        rest = m.group(3)
        at = rest.rfind("@")
        if at >= 0 and ":" in rest[:at]:
            pw = rest[:at].split(":", 1)[1]
            found.update({pw, *pw.split("@")})  # a raw '@' splits it anywhere
            try:
                from urllib.parse import unquote

                found.add(unquote(pw))
            except Exception:  # noqa: BLE001
                pass
    return sorted((s for s in found if s and s != "***"), key=len, reverse=True)


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def resolve_dsn(dsn: str | None = None, dsn_file: str | Path | None = None, *,
                notes: list[str] | None = None) -> str | None:
    """The DSN to use: ``--dsn``, else the first line of ``--dsn-file``, else the
    ``PMEM_ADVISOR_DSN`` environment variable, else None.

    libpq's own sources (``PGPASSFILE``/``~/.pgpass``, ``PGSERVICEFILE`` services, ``PG*``
    variables) keep working because psycopg hands the DSN to libpq. A ``--dsn-file`` readable
    or writable by group or others is refused as libpq refuses such a password file; a
    password on the command line (visible to every user in /proc) earns a note in ``notes``.
    """
    if dsn and dsn_file:
        raise InputError("give either --dsn or --dsn-file, not both")
    if dsn_file:
        return _read_dsn_file(Path(dsn_file))
    if dsn:
        if notes is not None and _secrets(dsn):
            notes.append("the password in --dsn is visible to every local user (ps, /proc); "
                         f"prefer --dsn-file (mode 600), {ENV_VAR} or ~/.pgpass")
        return dsn
    return os.environ.get(ENV_VAR) or None


def _read_dsn_file(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise InputError(f"cannot read --dsn-file {path}: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"--dsn-file {path} is not a regular file")
        if st.st_mode & 0o077:
            raise InputError(
                f"--dsn-file {path} is accessible by group or others "
                f"(mode {stat.S_IMODE(st.st_mode):o}); refusing to read a password from it",
                hint=f"chmod 600 {path}")
        if st.st_uid not in (os.geteuid(), 0):
            raise InputError(f"--dsn-file {path} belongs to another user (uid {st.st_uid})",
                             hint=f"chown it to yourself and chmod 600 {path}")
        raw = f.read(_MAX_DSN_FILE + 1)
    if len(raw) > _MAX_DSN_FILE:
        raise InputError(f"--dsn-file {path} is larger than {_MAX_DSN_FILE // 1024} KiB")
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    raise InputError(f"--dsn-file {path} holds no DSN")
