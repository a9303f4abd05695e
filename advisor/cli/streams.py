"""A stdout whose reader went away (``| head -1``) is a success, not an error: what main()
does about it, and about click's wrapping of the streams."""

from __future__ import annotations

import sys


def stdout_closed() -> int:
    """The reader of stdout went away (``| head -1``): point stdout at /dev/null so that
    nothing (the interpreter's last flush included) fails on it again; a success, exit 0."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stdout without a descriptor (tests)
        pass
    return 0


def unwrap_pacified_streams() -> bool:
    """Whether click met a closed stdout (it then wraps both streams to silence their last
    flush and exits 1); the streams are unwrapped again."""
    pacified = False
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if type(stream).__name__ == "PacifyFlushWrapper":
            setattr(sys, name, stream.wrapped)
            pacified = True
    return pacified


def stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False
