"""Every managed instance is registered on disk so nothing outlives the run that made it.

A record (``<state dir>/<id>.json``) names the server's process group, its directories and the
owning process. Within a run, live instances are destroyed on exceptions (context manager),
at exit (atexit) and on SIGTERM/SIGHUP; a later run's reaper stops the servers of owners that
died (SIGKILL, power loss of the shell, ...) and removes their files. The reaper never touches
instances whose owner is still alive: parallel runs on one machine are normal.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil

from pmem_advisor.instances.privileges import CACHE_ROOT

STOP_SIGNAL = {"postgres": signal.SIGINT, "mysql": signal.SIGTERM}  # fast, clean shutdown


def state_dir() -> Path:
    """Where records live (``PMEM_ADVISOR_STATE_DIR`` overrides; read on every call)."""
    return Path(os.environ.get("PMEM_ADVISOR_STATE_DIR", str(CACHE_ROOT / "instances")))


@dataclass
class Record:
    id: str
    engine: str
    flavour: str
    version: str
    bindir: str
    workdir: str
    data_dir: str
    wal_dir: str | None
    socket_dir: str
    owner_pid: int = field(default_factory=os.getpid)
    owner_started: float = 0.0
    server_pid: int | None = None  # also the process group id (started in a new session)
    remove: list[str] = field(default_factory=list)  # directories we created: removed
    empty: list[str] = field(default_factory=list)  # the user's empty dirs: emptied, kept
    created: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Record:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def _process_started(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def new_record(**kw: Any) -> Record:
    rec = Record(**kw)
    rec.owner_started = _process_started(rec.owner_pid) or 0.0
    return rec


def save(rec: Record) -> None:
    d = state_dir()
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{rec.id}.tmp"
    tmp.write_text(json.dumps(rec.to_dict(), indent=1))
    os.replace(tmp, d / f"{rec.id}.json")


def forget(rec_id: str) -> None:
    try:
        (state_dir() / f"{rec_id}.json").unlink()
    except FileNotFoundError:
        pass


def load_all() -> list[Record]:
    d = state_dir()
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.glob("*.json")):
        try:
            out.append(Record.from_dict(json.loads(p.read_text())))
        except (OSError, ValueError, TypeError):
            continue  # half-written or foreign file: not ours to judge
    return out


def owner_alive(rec: Record) -> bool:
    started = _process_started(rec.owner_pid)
    return started is not None and (not rec.owner_started or abs(started - rec.owner_started) < 1)


def server_processes(rec: Record) -> list[psutil.Process]:
    """Live processes of the instance's server: its process group, checked against the
    recorded binary directory so that a recycled pid is never taken for ours."""
    if not rec.server_pid:
        return []
    bindir = Path(rec.bindir).resolve()
    procs = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) != rec.server_pid or p.status() == psutil.STATUS_ZOMBIE:
                continue
            if Path(p.exe()).resolve().parent == bindir:
                procs.append(p)
        except (OSError, psutil.Error):
            continue
    return procs


def kill_server(rec: Record, timeout: float = 60.0) -> None:
    """Stop a server we may not be the parent of: clean shutdown, then SIGKILL the group."""
    procs = server_processes(rec)
    if not procs:
        return
    leader = next((p for p in procs if p.pid == rec.server_pid), None)
    if leader is not None:
        try:
            leader.send_signal(STOP_SIGNAL.get(rec.engine, signal.SIGTERM))
        except psutil.Error:
            pass
        psutil.wait_procs([leader], timeout=timeout)
    for p in server_processes(rec):
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=10)


def remove_files(rec: Record) -> None:
    for d in rec.remove:
        shutil.rmtree(d, ignore_errors=True)
    for d in rec.empty:
        empty_dir(Path(d))


def empty_dir(path: Path) -> None:
    """Remove a directory's contents, keeping the directory (it was the user's)."""
    if not path.is_dir():
        return
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def reap(rec: Record) -> None:
    """Stop the instance's server and remove its files and record."""
    kill_server(rec)
    remove_files(rec)
    forget(rec.id)


def reap_stale() -> list[Record]:
    """Reap every instance whose owning process is gone; returns what was reaped."""
    reaped = []
    for rec in load_all():
        if rec.owner_pid == os.getpid() and rec.id in _live:
            continue
        if rec.owner_pid != os.getpid() and owner_alive(rec):
            continue
        reap(rec)
        reaped.append(rec)
    return reaped


# --- this process's live instances ---------------------------------------------------------


class _Destroyable(Protocol):
    id: str

    def destroy(self) -> None: ...


_live: dict[str, _Destroyable] = {}
_lock = threading.RLock()
_hooks_installed = False
_HANDLED = (signal.SIGTERM, signal.SIGHUP)


def track(inst: _Destroyable) -> None:
    with _lock:
        _install_hooks()
        _live[inst.id] = inst


def untrack(inst: _Destroyable) -> None:
    with _lock:
        _live.pop(inst.id, None)


def destroy_all() -> None:
    """Destroy every live instance of this process (atexit and signal handlers)."""
    with _lock:
        live = list(_live.values())
    for inst in live:
        try:
            inst.destroy()
        except Exception:  # noqa: BLE001 - cleanup must go on for the others
            pass


def _on_signal(signum: int, frame: object) -> None:
    destroy_all()
    # Die the way the signal meant us to, so the parent sees the right status.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_hooks() -> None:
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(destroy_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in _HANDLED:
        # Only where nobody else handles the signal: never override a host's handler.
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _on_signal)
