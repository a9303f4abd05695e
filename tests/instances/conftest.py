"""Fixtures for managed-instance tests: server binaries (skip with a reason when absent), an
isolated registry and work directory, and a session-end check that nothing was left behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.sandbox import find_server as find_installed_server

SERVERS = {
    "pg-embedded": ("postgres", "embedded"),
    "pg-debian": ("postgres", "debian"),
    "mariadb": ("mysql", "path"),
}


def find_server(key: str):
    return find_installed_server(*SERVERS[key])


@pytest.fixture(scope="session")
def isolated_instances(sandbox):
    """The run's server sandbox (tests/conftest.py): checked empty at the end."""
    return sandbox


@pytest.fixture(scope="module")
def shm_dir():
    """A directory on another filesystem (/dev/shm) for WAL/redo; removed afterwards."""
    d = Path(tempfile.mkdtemp(prefix="pmem-advisor-test-", dir="/dev/shm"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


# -- the attacks on a managed server's trees (test_untrusted_*.py) ---------------------------
CANARY_TEXT = b"root's canary: nobody may change, chown or read this\n"


@pytest.fixture
def as_server_user(other_user, monkeypatch):
    """Managed servers run as the other user for this test (its pw entry is returned)."""
    from pmem_advisor.instances import privileges

    monkeypatch.setattr(privileges, "SERVER_USER", other_user.pw.pw_name)
    return other_user


@pytest.fixture
def canary():
    """A root-owned 0600 file in a 0755 root directory the attacker can name but not write."""
    d = Path(tempfile.mkdtemp(prefix="pmem-advisor-canary-", dir="/var/tmp"))
    d.chmod(0o755)
    f = d / "canary"
    f.write_bytes(CANARY_TEXT)
    f.chmod(0o600)
    yield f
    shutil.rmtree(d)
