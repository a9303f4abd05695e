"""One error root for the whole product; the CLI maps each class to an exit code.

Exit codes (stable, documented in the README):
  0 ok, 1 findings at or above the fail level, 2 bad usage or input,
  3 environment problem (a server, tool or device is missing or failed),
  70 internal error (a bug: please report), 130 interrupted.
"""

from __future__ import annotations

import errno
from pathlib import Path

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class AdvisorError(Exception):
    """Root of every error the product raises on purpose.

    ``message`` is one line meant for the user; ``hint`` optionally says how to fix it.
    """

    exit_code = EXIT_ENVIRONMENT

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = " ".join(str(message).split())  # always one line
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class UsageError(AdvisorError):
    """Bad arguments or bad input (a file, a profile, a value)."""

    exit_code = EXIT_USAGE


class InputError(UsageError):
    """An input file or snapshot that cannot be read or parsed (names file and line)."""


class UnknownKnobError(UsageError):
    """A knob name that is not in the catalog for the target flavour/version."""


class EnvironmentProblem(AdvisorError):
    """Something outside the input is missing or failed: a binary, a server, a device."""

    exit_code = EXIT_ENVIRONMENT


class ServerError(EnvironmentProblem):
    """A managed database server failed to initialise, start, or stay up.

    ``log_tail`` holds the last lines of the server's own log, shown to the user.
    """

    def __init__(self, message: str, *, hint: str | None = None, log_tail: str = "") -> None:
        super().__init__(message, hint=hint)
        self.log_tail = log_tail


class CapabilityMissing(EnvironmentProblem):
    """An optional capability (native kernel, libpmem, sysbench, ...) is not installed."""


class Interrupted(AdvisorError):
    """The user pressed Ctrl-C; everything started was cleaned up."""

    exit_code = EXIT_INTERRUPTED


# OSErrors that say something about the machine (exit 3), not about the path given (exit 2).
_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM,
                       errno.EIO, errno.EFBIG, errno.EMFILE, errno.ENFILE}


def as_error(e: OSError, path: str | Path, verb: str = "write") -> UsageError | EnvironmentProblem:
    """The one-line error for an OSError on ``path``: environment (3) or bad path (2)."""
    reason = e.strerror or str(e)
    if e.errno in _ENVIRONMENT_ERRNOS:
        hint = {errno.ENOSPC: "free some space or choose another --out directory",
                errno.EDQUOT: "free some space or choose another --out directory",
                errno.EROFS: "the filesystem is mounted read-only: choose another directory"
                }.get(e.errno, "check the permissions of the directory")
        return EnvironmentProblem(f"cannot {verb} {path}: {reason}", hint=hint)
    return UsageError(f"cannot {verb} {path}: {reason}")
