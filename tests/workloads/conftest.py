"""Fixtures for workload tests: managed servers (skipped with a reason when absent), started
once per module in an isolated work directory; nothing may remain at the end."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import psutil
import pytest

DATA = Path(__file__).resolve().parent / "data"
SERVERS = {
    "pg18-embedded": ("postgres", "embedded", None),
    "pg15-debian": ("postgres", "debian", "15"),
    "mariadb-10.11": ("mysql", "path", "10.11"),
}


def find_server(key: str):
    from pmem_advisor.instances import discover_servers

    engine, source, version = SERVERS[key]
    for s in discover_servers(engine):
        if s.source == source and (version is None or s.version.startswith(version)):
            return s
    pytest.skip(f"no {key} server installed")


def _processes_under(base: Path) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline", "cwd"]):
        try:
            text = " ".join(p.info["cmdline"] or []) + " " + (p.info["cwd"] or "")
        except (psutil.Error, OSError):
            continue
        if str(base) in text:
            found.append(p)
    return found


@pytest.fixture(scope="session")
def workload_sandbox():
    """Instance records and work dirs of these tests live apart; at the end none remain."""
    base = Path(tempfile.mkdtemp(prefix="pmem-advisor-wl-tests-", dir="/var/tmp"))
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
    leftovers = _processes_under(base)
    files = list((base / "run").iterdir()) if (base / "run").exists() else []
    for p in leftovers:
        p.kill()
    shutil.rmtree(base, ignore_errors=True)
    assert not leftovers, f"server processes left running: {leftovers}"
    assert not files, f"instance directories left: {files}"


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
