"""The test run's server sandbox: every managed instance any test starts lives under one
temporary base (its registry and work dirs), and at the end nothing may remain there:
no server process, no instance record, no instance directory. Also: a signal landing while a
child is started (``signal_after_fork``), and whether a child was waited for (``reaped``)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

ENV_KEYS = ("PMEM_ADVISOR_STATE_DIR", "PMEM_ADVISOR_WORKDIR")


def processes_under(base: Path) -> list[psutil.Process]:
    """Processes whose command line or working directory lies under ``base``."""
    found = []
    for p in psutil.process_iter(["cmdline", "cwd"]):
        try:
            text = " ".join(p.info["cmdline"] or []) + " " + (p.info["cwd"] or "")
        except (psutil.Error, TypeError, OSError):
            continue
        if str(base) in text and p.pid != os.getpid():
            found.append(p)
    return found


@contextmanager
def server_sandbox(prefix: str = "pmem-advisor-tests-") -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    os.chmod(base, 0o755)  # the unprivileged server user must traverse it
    saved = {k: os.environ.get(k) for k in ENV_KEYS}
    os.environ["PMEM_ADVISOR_STATE_DIR"] = str(base / "state")
    os.environ["PMEM_ADVISOR_WORKDIR"] = str(base / "run")
    try:
        yield base
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    leftovers = processes_under(base)
    records = list((base / "state").glob("*.json")) if (base / "state").exists() else []
    files = list((base / "run").iterdir()) if (base / "run").exists() else []
    for p in leftovers:
        p.kill()
    shutil.rmtree(base, ignore_errors=True)
    assert not leftovers, f"server processes left running: {leftovers}"
    assert not records, f"instance records left: {records}"
    assert not files, f"instance directories left: {files}"


def find_server(engine: str, source: str, version: str | None = None):
    """The installed server of that engine and source (embedded|debian|path), or skip."""
    from pmem_advisor.instances import discover_servers

    for s in discover_servers(engine):
        if s.source != source or (engine == "mysql" and s.flavour != "mariadb"):
            continue
        if version is None or s.version.startswith(version):
            return s
    pytest.skip(f"no {engine} server from {source} {version or ''} installed".replace("  ", " "))


@contextmanager
def signal_after_fork(program: str, to: str = "", sig: int = signal.SIGINT
                      ) -> Iterator[list[int]]:
    """Send ``sig`` to this process right after ``program`` (its last argument starting with
    ``to``) is forked, before ``subprocess.Popen`` returns: where a Ctrl-C lands on a loaded
    machine, which stretches the fork and exec to milliseconds. Python's handler runs at the
    next bytecode boundary, inside Popen. Yields the list the child's pid goes in (once)."""
    real = subprocess.Popen._execute_child
    started: list[int] = []

    def execute_child(self, args, *rest, **kw):
        real(self, args, *rest, **kw)
        if not started and args[0] == program and str(args[-1]).startswith(to):
            started.append(self.pid)
            os.kill(os.getpid(), sig)

    # raised as KeyboardInterrupt also where the suite was started with SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    subprocess.Popen._execute_child = execute_child
    try:
        yield started
    finally:
        subprocess.Popen._execute_child = real
        signal.signal(signal.SIGINT, previous)


def reaped(pid: int) -> bool:
    """Whether the child ``pid`` was waited for already (it writes nothing any more). A child
    still running or unreaped is ended here, so that it outlives no test."""
    try:
        got, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    if got == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return False
