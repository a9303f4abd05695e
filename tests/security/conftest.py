"""The attack suite's helpers: root runs the tool, the user ``nobody`` is the attacker.

``user_dir`` is a directory ``nobody`` owns (as a DBA's data directory or home would be);
``root_only`` a 0700 root directory with files the attacker must never have changed, read or
removed (``fingerprint`` before/after); ``attacker`` starts a script as ``nobody`` with the
system Python (the venv's interpreter lives under /root, which nobody cannot enter) that runs
until told to stop or for a bounded time; ``cli`` runs pmem-advisor with a timeout and returns
(exit code, stdout, stderr)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.sandbox import SYSTEM_PYTHONS, other_user_entry

ROOT = os.geteuid() == 0
NOBODY = other_user_entry()  # the shared "another user" of tests/sandbox.py
ATTACKER_PYTHON = next((p for p in SYSTEM_PYTHONS if os.path.exists(p)), SYSTEM_PYTHONS[0])
CLI_TIMEOUT = 120


def as_root_only(reason: str = "the attacks need root running the tool and nobody attacking"):
    return pytest.mark.skipif(not ROOT or NOBODY is None or not os.path.exists(ATTACKER_PYTHON),
                              reason=reason)


@pytest.fixture
def base():
    """A root-owned 0755 base under /var/tmp (disk-backed: O_DIRECT works), removed after."""
    d = Path(tempfile.mkdtemp(prefix="pmem-advisor-attack-", dir="/var/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def user_dir(base) -> Path:
    d = base / "user"
    d.mkdir()
    os.chown(d, NOBODY.pw_uid, NOBODY.pw_gid)
    d.chmod(0o755)
    return d


@pytest.fixture
def root_only(base) -> Path:
    d = base / "rootonly"
    d.mkdir(mode=0o700)
    for i in range(300):
        (d / f"f{i:03d}").write_text(f"root's file {i}\n")
        (d / f"f{i:03d}").chmod(0o600)
    (d / "probe.dat").write_text("root's precious data\n")
    (d / "probe.dat").chmod(0o600)
    return d


def fingerprint(d: Path) -> dict[str, tuple[int, int, str]]:
    """name -> (mode, uid, sha256) of every file below ``d``."""
    out = {}
    for p in sorted(d.rglob("*")):
        st = p.lstat()
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        out[str(p.relative_to(d))] = (st.st_mode, st.st_uid, digest)
    return out


def chown_nobody(*paths: Path) -> None:
    for p in paths:
        os.lchown(p, NOBODY.pw_uid, NOBODY.pw_gid)


class Attacker:
    """A script run as nobody; it loops until ``stop`` (a file) appears or its time is up."""

    def __init__(self, script: str, *args: str, seconds: float = 60) -> None:
        self.stop_file = Path(tempfile.mkdtemp(prefix="attacker-stop-", dir="/var/tmp")) / "stop"
        self.stop_file.parent.chmod(0o755)
        prologue = ("import os, sys, time\n"
                    f"STOP = {str(self.stop_file)!r}\n"
                    f"END = time.monotonic() + {seconds}\n"
                    "def running():\n"
                    "    return not os.path.exists(STOP) and time.monotonic() < END\n")
        self.proc = subprocess.Popen([ATTACKER_PYTHON, "-c", prologue + script, *args],
                                     user=NOBODY.pw_uid, group=NOBODY.pw_gid, extra_groups=[],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd="/")

    def stop(self) -> str:
        self.stop_file.touch()
        try:
            out, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        shutil.rmtree(self.stop_file.parent, ignore_errors=True)
        return out + err


@pytest.fixture
def attacker():
    started: list[Attacker] = []

    def start(script: str, *args: str, seconds: float = 60) -> Attacker:
        a = Attacker(script, *args, seconds=seconds)
        started.append(a)
        return a

    yield start
    for a in started:
        if a.proc.poll() is None:
            a.stop()


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = CLI_TIMEOUT
        ) -> tuple[int, str, str, float]:
    """(exit code, stdout, stderr, seconds) of one pmem-advisor run, bounded by ``timeout``."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pmem_advisor", *args], capture_output=True,
                          text=True, errors="replace", timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})
    return done.returncode, done.stdout, done.stderr, time.monotonic() - start


def one_line_refusal(code: int, err: str, expected: tuple[int, ...] = (2,)) -> str:
    """The single error line of a refused run (asserts the code and that there is one)."""
    errors = [line for line in err.splitlines() if line.startswith("pmem-advisor: error:")]
    assert code in expected, (code, err)
    assert len(errors) == 1, err
    assert "Traceback" not in err, err
    return errors[0]
