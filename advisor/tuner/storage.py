"""Where the study lives: a SQLite file in the output directory, or any SQLAlchemy URL.

Heartbeats let several workers share one study: the trial of a worker that died (no heartbeat
for ``grace`` seconds) is failed by the next worker and queued again with the same parameters.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import optuna
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

from pmem_advisor.errors import UsageError

STUDY_FILE = "study.db"
HEARTBEAT_S = 10
GRACE_FACTOR = 3
MAX_RETRY = 2


def default_url(out_dir: str | Path) -> str:
    return f"sqlite:///{Path(out_dir).resolve() / STUDY_FILE}"


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL: show only its scheme
        return url.split("://", 1)[0] + "://..."


def open_storage(url: str, *, heartbeat_s: int = HEARTBEAT_S) -> RDBStorage:
    """An Optuna RDB storage with heartbeats; ``UsageError`` if it cannot be reached."""
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]  # psycopg 3 is installed
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
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
        raise UsageError(
            f"cannot open study storage {redact(url)}: {type(e).__name__}"
            + _short_reason(e, url)
        ) from None


def _short_reason(e: Exception, url: str) -> str:
    reason = str(getattr(e, "orig", None) or e).strip().splitlines()
    text = reason[0] if reason else ""
    try:
        from sqlalchemy.engine import make_url

        password = make_url(url).password
    except Exception:
        password = None
    if password:
        text = text.replace(str(password), "***")
    return f" ({text[:200]})" if text else ""
