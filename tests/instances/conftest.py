"""Fixtures for managed-instance tests: server binaries (skip with a reason when absent), an
isolated registry and work directory, and a session-end check that nothing was left behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import psutil
import pytest
from pmem_advisor.instances import discover_servers

SERVERS = {
    "pg-embedded": ("postgres", "embedded"),
    "pg-debian": ("postgres", "debian"),
    "mariadb": ("mysql", "path"),
}


def find_server(key: str):
    engine, source = SERVERS[key]
    for s in discover_servers(engine):
        if s.source == source and (engine == "postgres" or s.flavour == "mariadb"):
            return s
    pytest.skip(f"no {key} server installed")


@pytest.fixture(scope="session", autouse=True)
def isolated_instances():
    """Records and work dirs of these tests live apart from other runs; at the end nothing
    of them may remain: no record, no file, no server process."""
    base = Path(tempfile.mkdtemp(prefix="pmem-advisor-tests-", dir="/var/tmp"))
    os.chmod(base, 0o755)  # the unprivileged server user must traverse it
    saved = {k: os.environ.get(k) for k in ("PMEM_ADVISOR_STATE_DIR", "PMEM_ADVISOR_WORKDIR")}
    os.environ["PMEM_ADVISOR_STATE_DIR"] = str(base / "state")
    os.environ["PMEM_ADVISOR_WORKDIR"] = str(base / "run")
    yield base
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    leftovers = _server_processes_under(base)
    records = list((base / "state").glob("*.json")) if (base / "state").exists() else []
    files = list((base / "run").iterdir()) if (base / "run").exists() else []
    for p in leftovers:
        p.kill()
    shutil.rmtree(base, ignore_errors=True)
    assert not leftovers, f"server processes left running: {leftovers}"
    assert not records, f"instance records left: {records}"
    assert not files, f"instance directories left: {files}"


def _server_processes_under(base: Path) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline", "cwd"]):
        try:
            text = " ".join(p.info["cmdline"] or []) + " " + (p.info["cwd"] or "")
        except (psutil.Error, TypeError):
            continue
        if str(base) in text and p.pid != os.getpid():
            found.append(p)
    return found


@pytest.fixture(scope="module")
def shm_dir():
    """A directory on another filesystem (/dev/shm) for WAL/redo; removed afterwards."""
    d = Path(tempfile.mkdtemp(prefix="pmem-advisor-test-", dir="/dev/shm"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)
