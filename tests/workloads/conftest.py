"""Fixtures for workload tests: managed servers (skipped with a reason when absent), started
once per module in an isolated work directory; nothing may remain at the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandbox import find_server as find_installed_server

DATA = Path(__file__).resolve().parent / "data"
SERVERS = {
    "pg18-embedded": ("postgres", "embedded", None),
    "pg15-debian": ("postgres", "debian", "15"),
    "mariadb-10.11": ("mysql", "path", "10.11"),
}


def find_server(key: str):
    return find_installed_server(*SERVERS[key])


@pytest.fixture(scope="session")
def workload_sandbox(sandbox):
    """The run's server sandbox (tests/conftest.py): checked empty at the end."""
    return sandbox


@pytest.fixture(scope="module", params=list(SERVERS))
def server(request, workload_sandbox):
    """A started managed instance of each server, shared by a module's tests."""
    from pmem_advisor.instances import create_instance

    binary = find_server(request.param)
    inst = create_instance(binary)
    request.addfinalizer(inst.destroy)
    inst.initialize()
    inst.start("")
    return inst
