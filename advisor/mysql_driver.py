"""The Python driver that talks to MySQL and MariaDB servers we do not manage.

MySQL's own connector (``mysql-connector-python``, the ``[mysql]`` extra) comes first: it is
the driver MySQL 8 is developed and tested with (caching_sha2_password over TLS or a socket,
MySQL's error codes). PyMySQL, pure Python and in the base install, is the fallback, and
what managed instances use. ``PMEM_ADVISOR_MYSQL_DRIVER=pymysql`` forces the fallback.

- ``connect(**kwargs)``: a DB-API connection from ``connection.mysql_connect_kwargs(dsn)``.
- ``storage_url(url)``: a ``mysql://`` study-storage URL with the driver SQLAlchemy should use
  (``mysql+mysqlconnector://`` or ``mysql+pymysql://``); explicit drivers are kept.
"""

from __future__ import annotations

import os
from typing import Any

from pmem_advisor.capabilities import install_hint, missing_modules
from pmem_advisor.errors import CapabilityMissing, UsageError

CONNECTOR = "mysql.connector"  # mysql-connector-python
FALLBACK = "pymysql"
_SQLALCHEMY = {CONNECTOR: "mysqlconnector", FALLBACK: "pymysql"}
ENV = "PMEM_ADVISOR_MYSQL_DRIVER"


def _has(module: str) -> bool:
    return module == FALLBACK or not missing_modules("mysql")


def driver_name() -> str:
    """``mysql.connector`` when installed (and not overridden), else ``pymysql``."""
    wanted = os.environ.get(ENV, "").strip().lower()
    if wanted in ("pymysql", "mysql.connector", "mysqlconnector", "mysql-connector"):
        choice = FALLBACK if wanted == "pymysql" else CONNECTOR
        if choice == CONNECTOR and not _has(CONNECTOR):
            raise CapabilityMissing(f"{ENV}={wanted} but mysql-connector-python is not "
                                    "installed", hint=install_hint("mysql"))
        return choice
    if wanted:
        raise UsageError(f"{ENV}={wanted!r}: use mysql.connector or pymysql")
    return CONNECTOR if _has(CONNECTOR) else FALLBACK


def connect(*, user: str = "root", password: str | None = "", host: str | None = "localhost",
            port: int = 3306, database: str | None = None, unix_socket: str | None = None,
            connect_timeout: float = 5, driver: str | None = None) -> Any:
    """An autocommit DB-API connection through the preferred driver; the arguments are those
    of ``connection.mysql_connect_kwargs``. Driver errors propagate (the caller words them)."""
    driver = driver or driver_name()
    if driver == CONNECTOR:
        import mysql.connector

        kw: dict[str, Any] = {"user": user, "password": password or "",
                              "connection_timeout": int(max(1, connect_timeout)),
                              "autocommit": True, "use_pure": True}
        if unix_socket:
            kw["unix_socket"] = unix_socket
        else:
            kw.update(host=host or "localhost", port=int(port))
        if database:
            kw["database"] = database
        return mysql.connector.connect(**kw)
    import pymysql

    kw = {"user": user, "password": password or "", "connect_timeout": connect_timeout,
          "autocommit": True}
    if unix_socket:
        kw["unix_socket"] = unix_socket
    else:
        kw.update(host=host or "localhost", port=int(port))
    if database:
        kw["database"] = database
    return pymysql.connect(**kw)


def connect_errors() -> tuple[type[BaseException], ...]:
    """The exception classes a failed ``connect`` raises with either driver (exit 3)."""
    errors: list[type[BaseException]] = [OSError]
    try:
        import pymysql

        errors.append(pymysql.err.Error)
    except ImportError:
        pass
    if _has(CONNECTOR):
        import mysql.connector

        errors.append(mysql.connector.Error)
    return tuple(errors)


def storage_url(url: str) -> str:
    """``mysql://u@h/db`` -> ``mysql+mysqlconnector://u@h/db`` (or ``+pymysql``); a URL that
    names its driver (``mysql+pymysql://``) or another database is returned unchanged."""
    for scheme in ("mysql://", "mariadb://"):
        if url.startswith(scheme):
            return f"mysql+{_SQLALCHEMY[driver_name()]}://" + url[len(scheme):]
    return url
