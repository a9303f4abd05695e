"""Fault injection at tiny scale: the CLI run as a subprocess, killed or starved at a phase
found by a condition (a record, a pid, a log line), never after a guessed delay.

Every test runs in its own base directory (records, work dirs, outputs) below the session's
sandbox, and asserts at the end: no process left under the base, no record, no instance
directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.sandbox import processes_under, require_root

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="fault injection runs as root")


def wait_for(pred, timeout: float, what: str):
    """The first truthy value of ``pred()`` within ``timeout`` seconds, else fail."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


class Cli:
    """A `pmem-advisor` subprocess whose stderr lines are collected as they come."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pmem_advisor", *args], env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        )
        self.err: list[str] = []
        self.out = ""
        self._outs: list[str] = []
        self._threads = [threading.Thread(target=self._read, args=(self.proc.stderr, self.err),
                                          daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stdout, self._outs),
                                          daemon=True)]
        for t in self._threads:
            t.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line)

    def saw(self, text: str) -> bool:
        return any(text in line for line in list(self.err))

    def finish(self, timeout: float = 120) -> int:
        self.proc.wait(timeout=timeout)
        for t in self._threads:
            t.join(timeout=30)
        self.out = "".join(self._outs)
        return self.proc.returncode

    @property
    def stderr(self) -> str:
        return "".join(self.err)


class Base:
    """One test's directories and environment."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "state"
        self.run = root / "run"
        self.env = {**os.environ, "PMEM_ADVISOR_STATE_DIR": str(self.state),
                    "PMEM_ADVISOR_WORKDIR": str(self.run), "PYTHONUNBUFFERED": "1"}

    def cli(self, *args: str) -> Cli:
        return Cli(list(args), self.env)

    def call(self, *args: str, timeout: float = 120) -> tuple[int, str, str]:
        c = self.cli(*args)
        code = c.finish(timeout)
        return code, c.out, c.stderr

    def records(self) -> list[dict]:
        out = []
        for p in sorted(self.state.glob("*.json")) if self.state.is_dir() else []:
            try:
                out.append(json.loads(p.read_text()))
            except (OSError, ValueError):
                continue  # being replaced right now
        return out

    def server_pid(self) -> int | None:
        for r in self.records():
            pid = r.get("server_pid")
            if pid and psutil.pid_exists(pid):
                return pid
        return None

    def assert_clean(self) -> None:
        left = [p for p in processes_under(self.root) if p.is_running()]
        assert not left, f"processes left: {left}"
        assert not list(self.state.glob("*.json")) if self.state.is_dir() else True
        assert not (self.run.is_dir() and any(self.run.iterdir())), list(self.run.iterdir())


@pytest.fixture
def base(sandbox):
    root = Path(tempfile.mkdtemp(prefix="faults-", dir=sandbox))
    os.chmod(root, 0o755)
    b = Base(root)
    yield b
    for p in processes_under(root):  # a failed test must not leak servers into the next
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass


@pytest.fixture
def tmpfs(tmp_path):
    """A small tmpfs mounted for the test (full disk, read-only remount); unmounted after."""
    mounted: list[Path] = []

    def mount(size: str = "1m") -> Path:
        require_root("mounting a tmpfs")
        d = tmp_path / f"tmpfs{len(mounted)}"
        d.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                            str(d)], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
        mounted.append(d)
        return d

    yield mount
    for d in mounted:
        subprocess.run(["umount", "-l", str(d)], check=False)
