"""Where the study lives: a SQLite file in the output directory, or any SQLAlchemy URL.

Heartbeats let several workers share one study: the trial of a worker that died (no heartbeat
for ``grace`` seconds) is failed by the next worker and queued again with the same parameters.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import optuna
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from pmem_advisor.connection import parse_dsn, redact_dsn, scrub
from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.fileio import private_db_file
from pmem_advisor.mysql_driver import storage_url as mysql_storage_url

STUDY_FILE = "study.db"
HEARTBEAT_S = 10
GRACE_FACTOR = 3
MAX_RETRY = 2


def default_url(out_dir: str | Path) -> str:
    return f"sqlite:///{Path(out_dir).resolve() / STUDY_FILE}"


def redact(url: str) -> str:
    """The URL without its password, for messages (also when it is malformed)."""
    return redact_dsn(url)


_PG_SCHEMES = ("postgresql", "postgres")
_MYSQL_SCHEMES = ("mysql", "mariadb")


def engine_url(url: str) -> str:
    """The SQLAlchemy URL for a study-storage URL, checked like ``check --dsn``: a server URL
    goes through ``connection.parse_dsn`` first (``InputError``, redacted, for a raw '@' in
    the password or a URL the driver would misread), then gets the driver we have:
    ``postgresql://`` -> ``postgresql+psycopg://`` (psycopg 3), ``mysql://``/``mariadb://``
    -> ``mysql_driver.storage_url`` (mysql-connector or PyMySQL; SQLAlchemy's default,
    MySQLdb, is not installed). A URL that names its driver keeps it."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    dialect, _, driver = scheme.lower().partition("+")
    if dialect in _PG_SCHEMES:
        parse_dsn(f"postgresql://{rest}")  # libpq's reading of the same URL
        return f"postgresql+{driver or 'psycopg'}://{rest}"
    if dialect in _MYSQL_SCHEMES:
        parse_dsn(url)
        return url if driver else mysql_storage_url(f"{dialect}://{rest}")
    return url


def open_storage(url: str, *, heartbeat_s: int = HEARTBEAT_S) -> RDBStorage:
    """An Optuna RDB storage with heartbeats; ``UsageError`` if it cannot be reached."""
    given, url = url, engine_url(url)
    if url.startswith("sqlite:///"):
        # SQLite opens the study and its journals by name: their directory must be root's
        # (made 0700 when missing), nothing planted there, the study file 0600 (its journals
        # take its mode): fileio.private_db_file
        db = url[len("sqlite:///"):].partition("?")[0]
        if db and db != ":memory:":
            private_db_file(db)
    try:
        with warnings.catch_warnings():  # heartbeat arguments are flagged experimental
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return RDBStorage(
                url,
                engine_kwargs={"pool_pre_ping": True},
                heartbeat_interval=heartbeat_s,
                grace_period=heartbeat_s * GRACE_FACTOR,
                heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(
                    max_retry=MAX_RETRY
                ),
            )
    except Exception as e:  # driver errors carry the URL, password included: never show them
        raise storage_error(e, given, "cannot open") from None


def storage_error(e: Exception, url: str, verb: str) -> UsageError | EnvironmentProblem:
    """The one-line error for a storage failure: a URL that cannot be meant is bad input (2);
    a full, read-only or unreachable storage is an environment problem (3), never a bug."""
    cause = getattr(e, "orig", None) or e.__cause__ or e.__context__ or e
    reason = _short_reason(cause if isinstance(cause, Exception) else e, url)
    name = type(cause).__name__
    message = f"{verb} study storage {redact(url)}: {name}{reason}"
    if isinstance(e, (ValueError, ArgumentError, NoSuchModuleError)) and not isinstance(
            cause, OSError):
        return UsageError(message, hint="give a SQLAlchemy URL such as "
                          "postgresql://user@host/db or sqlite:////path/study.db")
    return EnvironmentProblem(message, hint=_storage_hint(reason))


def _storage_hint(reason: str) -> str:
    low = reason.lower()
    if "full" in low or "no space" in low:
        return "the filesystem holding the study is full: free space and use --resume"
    if "readonly" in low or "read-only" in low or "permission" in low:
        return "the study's directory is not writable: choose another --out or --storage"
    return "check that the storage is reachable and writable"


def _short_reason(e: Exception, url: str) -> str:
    reason = str(getattr(e, "orig", None) or e).strip().splitlines()
    text = scrub(reason[0], url) if reason else ""
    return f" ({text[:200]})" if text else ""
