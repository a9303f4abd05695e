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
