"""Every managed instance is registered on disk so nothing outlives the run that made it.

A record (``<state dir>/<id>.json``) names the server's process group, its directories and the
owning process. Within a run, live instances are destroyed on exceptions (context manager),
at exit (atexit) and on SIGTERM/SIGHUP; a later run's reaper stops the servers of owners that
died (SIGKILL, power loss of the shell, ...) and removes their files. The reaper never touches
instances whose owner is still alive: parallel runs on one machine are normal.

The reaper runs as root, so it trusts nothing it did not make (issue 17): records are read only
from a trusted state directory (ours, writable by nobody else; see ``trust``), only when they
are regular files of ours with the expected fields; a path is removed or emptied only when it
still carries the marker file naming that record's instance; and a server pid is signalled only
when the process runs that record's binary as that record's server user. Anything else is left
alone and said.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil

from pmem_advisor.errors import UsageError
from pmem_advisor.fileio import (
    fd_path,
    held_dir,
    make_dir,
    make_temp_dir,
    open_dir,
    remove_tree,
    unlink_at,
    write_file_safely,
)
from pmem_advisor.instances import privileges
from pmem_advisor.instances.privileges import CACHE_ROOT
from pmem_advisor.instances.trust import trusted_dir, why_untrusted

MARKER = ".pmem-advisor-instance"  # names the owning record inside every directory we remove
_MAX_RECORD = 256 * 1024

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
    kind: str = "instance"  # instance | scratch (a tuner's golden copy, logs: no server)
    server_uid: int | None = None  # the server user: only its processes are signalled
    what: str = ""  # for scratch records: what the directories hold
    kept: str = ""  # why the files were kept for inspection (a planted file): reaped later

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Record:
        """A record from JSON; ValueError unless every field has the type we write."""
        if not isinstance(d, dict):
            raise ValueError("not a JSON object")
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        for name in ("id", "engine", "flavour", "version", "bindir", "workdir", "data_dir",
                     "socket_dir"):
            if not isinstance(known.get(name), str):
                raise ValueError(f"field {name!r} missing or not a string")
        if not _is_int(known.get("owner_pid")) or known["owner_pid"] <= 0:
            raise ValueError("bad owner_pid")
        for name in ("server_pid", "server_uid"):
            v = known.get(name)
            if v is not None and (not _is_int(v) or v <= 0 and name == "server_pid"):
                raise ValueError(f"bad {name}")
        for name in ("remove", "empty"):
            v = known.get(name, [])
            if not isinstance(v, list) or not all(isinstance(x, str) and os.path.isabs(x)
                                                  for x in v):
                raise ValueError(f"field {name!r} is not a list of absolute paths")
        for name in ("owner_started", "created"):
            if name in known and not isinstance(known[name], (int, float)):
                raise ValueError(f"bad {name}")
        if known.get("wal_dir") is not None and not isinstance(known["wal_dir"], str):
            raise ValueError("bad wal_dir")
        if "/" in known["id"] or known["id"].startswith("."):
            raise ValueError("bad id")
        return cls(**known)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _process_started(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def new_record(**kw: Any) -> Record:
    rec = Record(**kw)
    rec.owner_started = _process_started(rec.owner_pid) or 0.0
    return rec


def uids_with_trees() -> set[int]:
    """Server uids named by a record of the state directory: a record is dropped only when
    all of its files are gone, so that uid may still own a tree (kept for inspection, left by
    a killed run): the uid pool leases none of them (privileges.lease_server_user)."""
    return {r.server_uid for r in load_all() if r.server_uid}


privileges.set_tree_uids(uids_with_trees)


def trusted_state_dir() -> Path:
    """The state directory, created private (700) or checked: UntrustedPath otherwise."""
    return trusted_dir(state_dir(), "instance state directory", mode=0o700)


def save(rec: Record) -> None:
    d = trusted_state_dir()
    write_file_safely(d / f"{rec.id}.json", json.dumps(rec.to_dict(), indent=1),
                      backup=False, mode=0o600)


def forget(rec_id: str) -> None:
    try:
        with held_dir(state_dir()) as dfd:
            unlink_at(dfd, f"{rec_id}.json")
    except (OSError, UsageError):
        pass


def load_all() -> list[Record]:
    """The valid records of the (trusted) state directory; foreign files are skipped."""
    return scan()[0]


def scan() -> tuple[list[Record], list[tuple[Path, str]]]:
    """(records, [(file, why it was skipped)]); UntrustedPath if another user could have
    written the state directory (its records would be theirs)."""
    d = state_dir()
    if not os.path.lexists(d):
        return [], []
    d = trusted_state_dir()
    out, skipped = [], []
    for p in sorted(d.glob("*.json")):
        try:
            out.append(_read_record(p))
        except (OSError, ValueError, TypeError, UnicodeDecodeError) as e:
            skipped.append((p, str(e) or type(e).__name__))
    return out, skipped


def _read_record(p: Path) -> Record:
    fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise ValueError(f"not written by us (uid {st.st_uid}, mode "
                             f"{stat.S_IMODE(st.st_mode):o})")
        raw = f.read(_MAX_RECORD + 1)
    if len(raw) > _MAX_RECORD:
        raise ValueError("too large for a record")
    rec = Record.from_dict(json.loads(raw.decode("utf-8")))
    if p.name != f"{rec.id}.json":
        raise ValueError(f"names instance {rec.id!r}")
    return rec


def owner_alive(rec: Record) -> bool:
    started = _process_started(rec.owner_pid)
    return started is not None and (not rec.owner_started or abs(started - rec.owner_started) < 1)


def server_processes(rec: Record) -> list[psutil.Process]:
    """Live processes of the instance's server: its process group and the leader's
    descendants (PostgreSQL's children each lead a group of their own: InitPostmasterChild
    calls setsid), checked against the recorded binary directory so that a recycled pid is
    never taken for ours."""
    if not rec.server_pid:
        return []
    bindir = Path(rec.bindir).resolve()
    try:
        family = {c.pid for c in psutil.Process(rec.server_pid).children(recursive=True)}
    except psutil.Error:
        family = set()
    procs = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) != rec.server_pid and p.pid not in family:
                continue
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            uid = p.uids().real
            if uid != (rec.server_uid if rec.server_uid is not None else uid) or uid == 0:
                continue  # servers refuse to run as root: a root process is never ours
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
    for p in procs:  # a run killed while it had the server paused (Instance.pause)
        try:
            p.resume()
        except psutil.Error:
            pass
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


def write_marker(directory: Path, rec_id: str) -> None:
    """Mark ``directory`` as belonging to record ``rec_id``: the reaper's permission slip."""
    write_file_safely(Path(directory) / MARKER, rec_id + "\n", backup=False, mode=0o644)


def _write_marker_at(dfd: int, rec_id: str) -> None:
    """The marker in a directory we just made and hold (no name to swap)."""
    fd = os.open(MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644, dir_fd=dfd)
    try:
        os.write(fd, (rec_id + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def marker_of(directory: str | Path) -> str | None:
    """The record id in ``directory``'s marker, or None (no marker, a link, not a dir...)."""
    try:
        dfd = open_dir(directory)
    except (OSError, UsageError):
        return None
    try:
        return _marker_at(dfd)
    finally:
        os.close(dfd)


def _marker_at(dfd: int) -> str | None:
    """The record id in the marker of the held directory ``dfd``."""
    try:
        fd = os.open(MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dfd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        return f.read(256).decode("utf-8", "replace").strip() or None


def _marker_check(path: str, rec: Record):
    """The check ``remove_tree`` runs on the held directory: it must carry ``rec``'s marker."""
    def check(dfd: int) -> str | None:
        found = _marker_at(dfd)
        if found != rec.id:
            return (f"{path} does not carry the marker of instance {rec.id}"
                    + (f" (it names {found})" if found else ""))
        return None
    return check


def why_not_ours(path: str | Path, rec: Record) -> str | None:
    """Why the reaper must leave ``path`` alone, or None when it carries ``rec``'s marker
    (a report only: removal re-checks on the descriptor it removes through)."""
    path = str(path)
    try:
        dfd = open_dir(path)
    except FileNotFoundError:
        return None  # nothing left to do
    except (OSError, UsageError) as e:
        return f"{path}: {getattr(e, 'message', None) or e.strerror}"
    try:
        return _marker_check(path, rec)(dfd)
    finally:
        os.close(dfd)


def remove_files(rec: Record) -> list[str]:
    """Remove (``remove``) or empty (``empty``) the record's directories that still carry its
    marker; returns what was left alone and why. The marker is read and the entries removed
    through one held descriptor (fileio.remove_tree): a directory swapped for a link between
    the check and the removal is never followed."""
    left = []
    for d in rec.remove:
        why = remove_tree(d, check=_marker_check(d, rec), last=MARKER)
        if why:
            left.append(why)
    for d in rec.empty:
        why = remove_tree(d, check=_marker_check(d, rec), keep_dir=True, last=MARKER)
        if why:
            left.append(why)
    return [w for w in left if not w.endswith("does not exist")]


def empty_dir(path: Path, keep: tuple[str, ...] = ()) -> str | None:
    """Remove a directory's contents, keeping the directory (it was the user's) and the
    entries named in ``keep``; the marker goes last, and only once nothing else is left, so a
    SIGKILL halfway (or a writer we did not stop) leaves a directory still provably ours.
    Returns what was left and why, or None."""
    return remove_tree(path, keep_dir=True, keep=keep, last=MARKER)


def reap(rec: Record) -> list[str]:
    """Stop the instance's server and remove its marked files and record; returns what was
    left alone and why."""
    kill_server(rec)
    left = remove_files(rec)
    forget(rec.id)
    return left


def reap_stale(notes: list[str] | None = None) -> list[Record]:
    """Reap every instance whose owning process is gone; returns what was reaped. Paths the
    reaper left alone and foreign files in the state directory are appended to ``notes``."""
    reaped = []
    records, skipped = scan()
    if notes is not None:
        notes += [f"ignored {p} in the instance state directory: {why}" for p, why in skipped]
    for rec in records:
        if rec.owner_pid == os.getpid() or owner_alive(rec):
            continue  # a live run's (ours included: its scratch is in use even if untracked)
        left = reap(rec)
        if notes is not None:
            notes += [f"left alone while reaping {rec.id}: {why}" for why in left]
        reaped.append(rec)
    from pmem_advisor.instances.cgroup import reap_stale_cgroups

    gone = reap_stale_cgroups()  # a SIGKILLed `tune --memory` run's group
    if notes is not None:
        notes += [f"removed the memory cgroup {p} of a dead run" for p in gone]
    return reaped


# --- scratch directories of a run (a tuner's golden copy, workload logs) ---------------------


def register_scratch(path: str | Path | None = None, *, what: str,
                     parent: str | Path | None = None, mode: int = 0o755,
                     server_uid: int | None = None) -> Record:
    """Create a scratch directory (``path``, which must not exist, or a fresh one in
    ``parent``/$TMPDIR) with our marker, and record it so that the next reaper removes it if
    this process dies without ``release_scratch`` (SIGKILL, power loss). ``server_uid``: the
    pool uid the scratch is handed to (the uid pool skips it while the record stays)."""
    import tempfile
    import uuid

    rec_id = f"scratch-{uuid.uuid4().hex[:12]}"
    if path is None:
        with held_dir(parent or tempfile.gettempdir()) as pfd:
            fd, name = make_temp_dir(pfd, "pmem-advisor-", mode)
        made_at = fd_path(fd)
    else:
        fd = make_dir(path, mode)
        made_at = fd_path(fd)
    made = Path(made_at)
    try:
        _write_marker_at(fd, rec_id)
        rec = new_record(id=rec_id, engine="", flavour="", version="", bindir="",
                         workdir=str(made), data_dir=str(made), wal_dir=None,
                         socket_dir=str(made), remove=[str(made)], kind="scratch", what=what,
                         server_uid=server_uid)
        save(rec)
    except BaseException:
        os.close(fd)
        remove_tree(made)
        raise
    os.close(fd)
    track(_ScratchRelease(rec))  # removed at exit and on SIGTERM/SIGHUP like an instance
    return rec


class _ScratchRelease:
    def __init__(self, rec: Record) -> None:
        self.id = rec.id
        self.rec = rec

    def destroy(self) -> None:
        untrack(self)
        release_scratch(self.rec)


class RunScratch:
    """A run's scratch directory (golden and trial copies of an evaluator): registered, so the
    next reaper removes it after a SIGKILL; ``close`` (idempotent), exit, SIGTERM and SIGHUP
    remove it."""

    def __init__(self, parent: str | Path | None, what: str, mode: int = 0o700, *,
                 server_uid: int | None = None) -> None:
        self.record = register_scratch(what=what, parent=parent, mode=mode,
                                       server_uid=server_uid)
        self.path = Path(self.record.workdir)
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            release_scratch(self.record)


def add_scratch(rec: Record, path: str | Path) -> Path:
    """Put one more directory we created (it must exist and be ours) in ``rec``'s care: it is
    marked and removed by the reaper if the owner dies. Returns the resolved path."""
    path = Path(os.path.realpath(path))
    why = why_untrusted(path)
    if why:
        from pmem_advisor.instances.trust import UntrustedPath

        raise UntrustedPath(f"refusing to record {path} as scratch: {why}")
    write_marker(path, rec.id)
    if str(path) not in rec.remove:
        rec.remove.append(str(path))
        save(rec)
    return path


def release_scratch(rec: Record) -> None:
    """Remove a scratch record's directories (those still marked as its) and the record."""
    with _lock:
        _live.pop(rec.id, None)
    remove_files(rec)
    forget(rec.id)


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


# --- children started and ended so that none outlives an interrupt unowned ---------------
#
# A Ctrl-C (or SIGTERM, SIGHUP) unwinds the run through ``finally`` blocks that stop what it
# started and remove its directories. That works only for a child whose ``Popen`` the
# interrupted code already holds: a signal that lands while ``subprocess.Popen`` starts it
# (after the fork, before the constructor returns; a loaded machine stretches that to
# milliseconds) raises inside the constructor, which neither kills nor waits for the child it
# made. A golden copy's ``cp -a`` then went on writing into the data directory after the
# cleanup had emptied it and dropped its record, and the next ``tune --resume`` refused the
# unmarked, non-empty --data-dir. So children are started with these signals held, and a
# held signal is acted on once the starter owns the child, inside its ``try``.

DEFERRED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def deferred_signals(signals: tuple[int, ...] = DEFERRED) -> Iterator[None]:
    """Hold ``signals`` while the body runs (keep it short: a child's start), then act on
    those that arrived as their handlers would have on arrival (``KeyboardInterrupt`` for
    SIGINT, the run's own handlers for SIGTERM and SIGHUP). Only the main thread runs Python
    signal handlers, so elsewhere this holds nothing; an ignored signal stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def hold(signum: int, frame: object) -> None:
        arrived.append(signum)

    previous: list[tuple[int, Any]] = []
    try:
        for sig in signals:
            handler = signal.getsignal(sig)
            if handler in (signal.SIG_IGN, None):  # ignored, or not set from Python
                continue
            previous.append((sig, handler))
            signal.signal(sig, hold)
        yield
    finally:
        _restore_handlers(previous)
        _raise_signals(list(dict.fromkeys(arrived)))  # now, through the handlers put back


def _raise_signals(signums: list[int]) -> None:
    """Raise each signal in turn, also when an earlier one's handler raises (the last
    exception goes on, the earlier ones as its context)."""
    if signums:
        try:
            signal.raise_signal(signums[0])
        finally:
            _raise_signals(signums[1:])


def _restore_handlers(previous: list[tuple[int, Any]]) -> None:
    """Put every handler back, even when a signal whose handler is back already raises
    meanwhile (an entry leaves the list only once its handler is in place)."""
    try:
        while previous:
            sig, handler = previous[-1]
            signal.signal(sig, handler)
            previous.pop()
    finally:
        if previous:
            _restore_handlers(previous)


def run_child(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True, **kwargs)`` whose child never
    outlives it: started with the signals held, killed and waited for on any exception
    (``subprocess.run`` waits at most 0.25 s after a Ctrl-C, then leaves it running)."""
    proc: subprocess.Popen | None = None
    try:
        with deferred_signals():
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, **kwargs)
        out, err = proc.communicate()
    except BaseException:
        if proc is not None:
            end_child(proc)
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def end_child(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc`` and wait until it has exited: whatever it was writing, it writes no
    more once this returns. A signal during that (short) wait is held until it is over."""
    with deferred_signals():
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        proc.wait()
