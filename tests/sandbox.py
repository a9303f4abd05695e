"""The test run's server sandbox: every managed instance any test starts lives under one
temporary base (its registry and work dirs), and at the end nothing may remain there:
no server process, no instance record, no instance directory. Also: a signal landing while a
child is started (``signal_after_fork``), and whether a child was waited for (``reaped``)."""

from __future__ import annotations

import importlib.util
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
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


# ------------------------------------------------------------ running as another user
# Root runs the suite; a test that needs an unprivileged process (no write access, an
# attacker) runs it as ``nobody``. ``nobody`` may be unable to reach the checkout, its venv or
# the venv's interpreter (a clone in /root or ``mktemp -d``: mode 700), so what it runs is
# staged into a 0755 directory under /var/tmp and run with a system Python of the same
# version. Where that is impossible the test is skipped, with the reason, never failed.
OTHER_USER = "nobody"
SYSTEM_PYTHONS = (f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}",
                  "/usr/bin/python3", "/usr/local/bin/python3")


def other_user_entry(name: str = OTHER_USER) -> pwd.struct_passwd | None:
    """The other user's passwd entry, or None where there is no such user."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def other_uid(name: str = OTHER_USER) -> int:
    """The uid to give files "another user" owns (65534 where ``name`` does not exist)."""
    entry = other_user_entry(name)
    return entry.pw_uid if entry else 65534


def required_tops(distribution: str) -> set[Path]:
    """Top-level files and directories of the distributions ``distribution`` requires,
    recursively, leaving out extras."""
    from importlib import metadata

    seen: set[str] = set()
    todo = [distribution]
    tops: set[Path] = set()
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if name != re.sub(r"[-_.]+", "-", distribution).lower():
            base = Path(dist.locate_file("")).absolute()
            for f in dist.files or ():
                first = f.parts[0]
                if first not in ("..", "__pycache__") and not first.endswith(".pth"):
                    tops.add(base / first)
        for req in dist.requires or ():
            if "extra ==" not in req:
                todo.append(re.match(r"[A-Za-z0-9._-]+", req).group())
    return {t for t in tops if t.exists()}


def require_root(why: str) -> None:
    """Skip the running test unless root, saying ``needs root: why``: the one way a test that
    needs root says so (the ``needs_root(why)`` marker calls it; issue 56)."""
    if os.geteuid() != 0:
        pytest.skip(f"needs root: {why}")


class OtherUser:
    """Runs Python as ``name`` from code staged where that user can read it."""

    def __init__(self, name: str = OTHER_USER) -> None:
        require_root(f"running as {name}")
        pw = other_user_entry(name)
        if pw is None:
            pytest.skip(f"no user {name!r} to run as")
        self.pw = pw
        self.base = Path(tempfile.mkdtemp(prefix="pmem-advisor-other-user-", dir="/var/tmp"))
        self.base.chmod(0o755)
        self.python = self._find_python()

    def _find_python(self) -> str:
        want = f"{sys.version_info.major}.{sys.version_info.minor}"
        for cand in SYSTEM_PYTHONS:
            if not os.path.exists(cand):
                continue
            r = self.run([cand, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
            if r.returncode == 0 and r.stdout.strip() == want:
                return cand
        self.close()
        pytest.skip(f"no Python {want} that {self.pw.pw_name} can run "
                    f"({', '.join(SYSTEM_PYTHONS)})")

    def stage(self, *paths: Path) -> Path:
        """Copies files and directories into one fresh readable directory, returned."""
        dest = Path(tempfile.mkdtemp(prefix="staged-", dir=self.base))
        for p in paths:
            if p.is_dir():
                shutil.copytree(p, dest / p.name, symlinks=False, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(p, dest / p.name)
        for d, _dirs, files in os.walk(dest):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o755 if f.endswith(".so") else 0o644)
        return dest

    def stage_imports(self, *modules: str, distribution: str = "") -> Path:
        """Stages the top-level packages (and dist-info) these imports load from this run's
        interpreter, and those of ``distribution``'s required (not extra) dependencies, as
        they may be imported lazily: the project and what it needs, not the whole venv."""
        code = ("import sys, importlib\n"
                f"for m in {list(modules)!r}: importlib.import_module(m)\n"
                "for m in list(sys.modules.values()):\n"
                "    f = getattr(m, '__file__', None)\n"
                "    if f: print(f)\n")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0:
            pytest.skip(f"cannot import {modules} to stage them: {r.stderr.strip()[-200:]}")
        # as imported, not resolved: an editable install maps the package onto symlinks
        roots = [Path(p).absolute() for p in sys.path if p and "site-packages" in p]
        roots.insert(0, Path(importlib.util.find_spec(modules[0].split(".")[0]).origin
                             ).absolute().parents[1])
        tops: set[Path] = set()
        for line in r.stdout.splitlines():
            f = Path(line).absolute()
            for root in roots:
                if f.is_relative_to(root) and f != root:
                    tops.add(root / f.relative_to(root).parts[0])
                    break
        for top in required_tops(distribution) if distribution else ():
            tops.add(top)
        for top in list(tops):
            libs = top.parent / f"{top.name}.libs"  # binary wheels' bundled libraries
            if libs.is_dir():
                tops.add(libs)
        for root in roots:
            tops.update(root.glob("*.dist-info"))
        return self.stage(*sorted(tops))

    def run(self, args: list[str], *, pythonpath: tuple[Path, ...] = (), cwd: Path | None = None,
            env: dict[str, str] | None = None, timeout: float = 120
            ) -> subprocess.CompletedProcess:
        """``args`` as the other user (no extra groups), output captured as text."""
        full = {k: v for k, v in os.environ.items()
                if k not in ("PYTHONHOME", "VIRTUAL_ENV", "PYTHONPATH")}
        full.update(HOME=str(cwd or self.base), PYTHONDONTWRITEBYTECODE="1")
        if pythonpath:
            full["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
        full.update(env or {})
        return subprocess.run(args, user=self.pw.pw_uid, group=self.pw.pw_gid, extra_groups=[],
                              cwd=cwd or self.base, env=full, capture_output=True, text=True,
                              errors="replace", timeout=timeout, stdin=subprocess.DEVNULL)

    def tmpdir(self) -> Path:
        """A fresh root-owned 0755 directory the other user can enter but not write."""
        d = Path(tempfile.mkdtemp(prefix="work-", dir=self.base))
        d.chmod(0o755)
        return d

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)
