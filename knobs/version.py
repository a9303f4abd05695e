"""Server version strings as comparable tuples: "18.6", "10.11.19-MariaDB-0+deb12u1", "8.0.36"."""

from __future__ import annotations

import re

from pmem_advisor.errors import UsageError

_VERSION = re.compile(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?")
# A series without a patch level ("8.0", "18") stands for its newest release when compared.
LATEST_PATCH = 9999


def parse_version(text: str | tuple, *, pad: bool = False) -> tuple[int, ...]:
    """The leading dotted number of ``text`` as a tuple of ints.

    ``pad=True`` fills missing minor/patch parts with the newest possible patch, so that
    "8.0" compares as the latest 8.0 release (a knob "since 8.0.30" exists in "8.0"),
    and "18" as the latest PostgreSQL 18 minor.
    """
    if isinstance(text, tuple):
        parts = tuple(int(p) for p in text)
    else:
        m = _VERSION.search(str(text).strip())
        if not m or not str(text).strip()[:1].isdigit():
            raise UsageError(f"not a version: {text!r} (expected something like 18.6 or 8.0.36)")
        parts = tuple(int(p) for p in m.groups() if p is not None)
    if pad:
        parts = parts + (LATEST_PATCH,) * max(0, 3 - len(parts))
    return parts


def series(text: str | tuple, parts: int = 2) -> str:
    """The release series: "10.11" for "10.11.19-MariaDB", "8.0" for "8.0.36"."""
    return ".".join(str(p) for p in parse_version(text)[:parts])


def version_in(version: str | tuple, since: str | None, until: str | None) -> bool:
    """True when ``since <= version < until`` (either bound may be None)."""
    v = parse_version(version, pad=True)
    if since is not None and v < parse_version(since):
        return False
    return until is None or v < parse_version(until)
