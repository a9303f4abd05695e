"""The engine-neutral lifecycle of a managed server: directories, start/stop, failure reasons.

An instance owns one private directory (``<workdir>/<id>``: config, log, sockets, default data
and golden copies) plus the data and WAL/redo directories it was given. It is registered at
creation, so an exception, Ctrl-C, a signal or a later run's reaper removes all of it.
Subclasses supply the engine specifics (init command, server command, readiness, settings).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from abc import ABC, abstractmethod
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import psutil

from pmem_advisor.connection import ConnInfo
from pmem_advisor.errors import AdvisorError, ServerError, UsageError
from pmem_advisor.fileio import (
    HeldLog,
    PlantedFile,
    held_dir,
    make_owned_dir,
    open_checked,
    remove_tree,
)
from pmem_advisor.instances import golden, registry
from pmem_advisor.instances.discovery import ServerBinary
from pmem_advisor.instances.privileges import (
    CACHE_ROOT,
    hand_over,
    lease_server_user,
    release_server_user,
    require_reachable,
    usable_bindir,
)
from pmem_advisor.instances.trust import trusted_dir

MARKER = registry.MARKER  # names the owning instance inside every directory it may remove
DB_NAME = "bench"  # the database every instance provides for workloads
_MAX_SOCKET_DIR = 80  # unix socket paths are limited to 107 bytes
# An interrupted init tool gets this long to exit on SIGTERM before its group is SIGKILLed:
# initdb's single-user postgres exits in well under a second once signalled.
TOOL_GRACE_S = 10.0
_DISK_FULL = re.compile(r"No space left on device|error 28\b|out of disk space|ENOSPC", re.I)


def default_workdir() -> Path:
    return Path(os.environ.get("PMEM_ADVISOR_WORKDIR", str(CACHE_ROOT / "run")))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _overlap(a: Path, b: Path) -> bool:
    a, b = Path(os.path.abspath(a)), Path(os.path.abspath(b))
    return a == b or a in b.parents or b in a.parents


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def refuse_control_characters(text: str, what: str) -> None:
    """Paths and values go into config files line by line: a newline would inject options."""
    m = _CONTROL.search(text)
    if m:
        raise UsageError(f"the {what} {text!r} contains a control character "
                         f"({m.group(0)!r}); it would break the generated config file",
                         hint="rename it without newlines, tabs or control characters")


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class Instance(ABC):
    """One managed server. Use as a context manager; ``__exit__`` is ``destroy()``."""

    engine: str = ""
    stop_signal = signal.SIGTERM
    start_timeout = 120.0
    stop_timeout = 120.0
    cgroup: Any = None  # instances.cgroup.MemoryCgroup holding the server to a memory budget

    def __init__(
        self,
        binary: ServerBinary,
        workdir: str | Path | None = None,
        *,
        data_dir: str | Path | None = None,
        wal_dir: str | Path | None = None,
        init_settings: dict[str, Any] | None = None,
        tcp: bool = False,
        golden_dir: str | Path | None = None,
    ) -> None:
        self.binary = binary
        self.id = f"{binary.flavour[:2]}{binary.major}-{uuid.uuid4().hex[:10]}"
        # a uid of this instance's own (privileges.lease_server_user): its server cannot reach
        # another instance's files; given back in destroy(), or here when setting up fails
        self.user = lease_server_user()
        try:
            self._set_up(binary, workdir, data_dir, wal_dir, init_settings, tcp, golden_dir)
        except BaseException:
            release_server_user(self.user)
            raise

    def _set_up(self, binary: ServerBinary, workdir: str | Path | None,
                data_dir: str | Path | None, wal_dir: str | Path | None,
                init_settings: dict[str, Any] | None, tcp: bool,
                golden_dir: str | Path | None) -> None:
        self.init_settings = self.normalize_init_settings(dict(init_settings or {}))
        self.tcp = tcp
        self.port = free_port()  # also without TCP: a stray TCP fallback must not hit 5432/3306
        self.password = uuid.uuid4().hex if tcp else None
        self.initialized = False
        self.config_text = ""
        self._proc: subprocess.Popen | None = None
        self._paused = False
        self._clean_stop = True
        self._destroyed = False
        self._destroying = False
        self._planted: str | None = None  # why the tree is kept for inspection (PlantedFile)
        self._remove: list[Path] = []
        self._empty: list[Path] = []
        self.bindir = usable_bindir(binary.bindir, binary.version, self.user)

        base = Path(workdir) if workdir is not None else default_workdir()
        base = Path(os.path.abspath(base))
        require_reachable(base, self.user, "work directory")
        base = Path(os.path.realpath(trusted_dir(base, "work directory")))
        self.home = base / self.id
        # The log lives beside the home, in a directory only we write: the server's user owns
        # the home and could put a link to /etc/passwd at any name in it (issue 50).
        self.log_dir = base / f"{self.id}-log"
        self._log: HeldLog | None = None
        with held_dir(base) as bfd:
            for d, owner in ((self.log_dir, None), (self.home, self._owner)):
                fd = make_owned_dir(bfd, d.name, None, 0o700, str(d))
                self._remove.append(d)
                try:
                    registry._write_marker_at(fd, self.id)  # before the user gets the home
                    if d == self.log_dir:
                        self._log = HeldLog.create(fd, "server.log", d / "server.log")
                    elif owner is not None:
                        os.fchown(fd, *owner)  # given by descriptor, once it is marked
                except BaseException:
                    self._remove_files()  # no record yet: the markers prove them ours
                    raise
                finally:
                    os.close(fd)
        try:
            # Recorded before anything else is made: a SIGKILL from here on leaves a record.
            self.record = registry.new_record(
                id=self.id, engine=self.engine, flavour=binary.flavour, version=binary.version,
                bindir=str(self.bindir), workdir=str(self.home), data_dir=str(self.home),
                wal_dir=None, socket_dir=str(self.home),
                remove=[str(self.home), str(self.log_dir)], server_uid=self.user.uid,
            )
            registry.save(self.record)
        except BaseException:
            self._remove_files()
            raise
        if data_dir and wal_dir and _overlap(Path(data_dir), Path(wal_dir)):
            self._drop_files_and_record()
            raise UsageError(f"the WAL/redo directory {wal_dir} must lie apart from the data "
                             f"directory {data_dir}")
        try:
            self.data_dir = self._claim(data_dir, self.home / "data", "data directory")
            self.wal_dir = self._claim(wal_dir, None, "WAL/redo directory") if wal_dir else None
            self.socket_dir = self._make_socket_dir()
            self.log_path = self._log.path
            self.golden_dir = Path(golden_dir) if golden_dir else self.home / "golden"
            self._sync_record()
            registry.track(self)
        except BaseException:
            self._drop_files_and_record()
            raise

    @property
    def _owner(self) -> tuple[int, int] | None:
        """(uid, gid) to give what we make for the server, or None (we are the server user)."""
        return (self.user.uid, self.user.gid) if self.user.privileged else None

    def home_fd(self) -> int:
        """A descriptor of the home (the caller closes it), opened ``O_NOFOLLOW`` relative to
        the work directory and checked to be the server user's directory or ours."""
        with held_dir(self.home.parent) as bfd:
            return open_checked(bfd, self.home.name, str(self.home), directory=True,
                                owners=(self.user.uid,))

    @contextlib.contextmanager
    def _refusing_planted(self):
        """A link, FIFO or foreign file where root expected its own (fileio.PlantedFile): the
        server is stopped, the refusal goes on as one line, and ``destroy`` keeps the tree
        (and the log) in place for inspection instead of removing what was planted."""
        try:
            yield
        except PlantedFile as e:
            self._planted = e.message
            with contextlib.suppress(Exception):
                self._kill()
            raise

    def _sync_record(self) -> None:
        rec = self.record
        for name in ("data_dir", "wal_dir", "socket_dir"):  # claimed one after the other
            if hasattr(self, name):
                value = getattr(self, name)
                setattr(rec, name, str(value) if value else None)
        rec.remove = [str(p) for p in self._remove]
        rec.empty = [str(p) for p in self._empty]
        registry.save(rec)

    def add_scratch(self, path: str | Path) -> Path:
        """Put a directory we created (a golden copy, a workload's log dir) in this instance's
        record: marked now, removed by the next reaper if this process dies."""
        resolved = registry.add_scratch(self.record, path)
        if resolved not in self._remove:
            self._remove.append(resolved)
        return resolved

    # --- directories -----------------------------------------------------------------------

    def _claim(self, given: str | Path | None, default: Path | None, what: str) -> Path:
        """Take a directory for the server: new (removed later), empty (emptied later) or a
        dead managed instance's (reaped first). Anything else is the user's data: refused."""
        if given is None:
            assert default is not None and default.parent == self.home
            self._make_in_home(default.name)
            return default
        refuse_control_characters(str(given), what)
        path = Path(os.path.realpath(given))
        if path.exists() and not path.is_dir():
            raise UsageError(f"the {what} {path} is not a directory")
        if path.exists() and any(path.iterdir()):
            self._take_over_managed(path, what)  # first: a live instance's is named as such
        # (another instance's tree is its own uid's, 0700: this instance's uid cannot reach it)
        require_reachable(path, self.user, what)
        if path.exists():
            self._empty.append(path)
        else:
            top = path
            while not top.parent.exists():
                top = top.parent
            path.mkdir(parents=True)
            registry.write_marker(top, self.id)
            self._remove.append(top)
            self._sync_record()
        hand_over(path, self.user, given=True)
        return path

    def _take_over_managed(self, path: Path, what: str) -> None:
        """Empty a non-empty directory only when a record of a dead instance names it and the
        directory still carries that instance's marker (item 4: a stale marker alone, next to
        the user's files, proves nothing)."""
        marker = registry.marker_of(path)
        for rec in registry.load_all():
            if str(path) not in (rec.data_dir, rec.wal_dir, *rec.empty, *rec.remove):
                continue
            if registry.owner_alive(rec):
                raise UsageError(
                    f"the {what} {path} belongs to the running instance {rec.id} "
                    f"(owner pid {rec.owner_pid})"
                )
            if marker == rec.id:
                registry.reap(rec)
                if path.exists():
                    registry.empty_dir(path)
                return
        found = f" (it holds a marker of instance {marker}, but no record of it)" if marker else ""
        raise UsageError(
            f"the {what} {path} is not empty and not a dead pmem-advisor instance's{found}; "
            "refusing to touch data that was not handed over",
            hint="point it at an empty or new directory, or remove its contents yourself",
        )

    def _make_socket_dir(self) -> Path:
        d = self.home / "sock"
        if len(str(d)) > _MAX_SOCKET_DIR:
            d = Path(tempfile.mkdtemp(prefix="pmemadv-", dir="/tmp"))
            registry.write_marker(d, self.id)
            self._remove.append(d)
            self._sync_record()
            hand_over(d, self.user)
        else:
            self._make_in_home(d.name)
        return d

    def _make_in_home(self, name: str, mode: int = 0o700) -> None:
        """A new directory in the (server-owned) home, made relative to a held descriptor of
        it and given to the server user by descriptor: no name in the home is used twice."""
        hfd = self.home_fd()
        try:
            os.close(make_owned_dir(hfd, name, self._owner, mode, str(self.home / name)))
        finally:
            os.close(hfd)

    def _mark(self) -> None:
        for d in (self.data_dir, self.wal_dir):
            if d is not None:
                registry.write_marker(d, self.id)

    # --- subclass hooks --------------------------------------------------------------------

    @abstractmethod
    def normalize_init_settings(self, settings: dict[str, Any]) -> dict[str, str]:
        """Validate init-time settings (UsageError for unknown ones)."""

    @abstractmethod
    def _init_datadir(self) -> None:
        """Run initdb / mariadb-install-db into ``data_dir`` (+ ``wal_dir``)."""

    @abstractmethod
    def _write_config(self, config_text: str) -> None:
        """Write the managed include file (included last) from ``config_text``."""

    @abstractmethod
    def _server_command(self) -> list[str]: ...

    @abstractmethod
    def _ready(self) -> bool:
        """True once the server accepts connections."""

    @abstractmethod
    def _after_start(self) -> None:
        """Create the workload database, set the TCP password, ..."""

    @abstractmethod
    def refusal_reason(self, log_text: str) -> str:
        """The server's own reason for failing, from its log (one line)."""

    def _after_crash(self) -> None:  # noqa: B027 - optional hook
        """Tidy what a killed server left that would stop the next start (stale files)."""

    def _release_crash_resources(self) -> None:  # noqa: B027 - optional hook
        """Free what a killed server still holds outside its directories (shared memory),
        before its data directory is removed or replaced."""

    def _after_restore(self) -> None:  # noqa: B027 - optional hook
        """Adapt a restored copy (which may come from another instance) to this one."""

    @property
    @abstractmethod
    def conninfo(self) -> ConnInfo: ...

    @abstractmethod
    def connect(self) -> Any:
        """A DB-API connection in autocommit mode."""

    @abstractmethod
    def settings(self) -> dict[str, str]: ...

    # --- lifecycle -------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        """A clean environment for server tools: no PG*/MYSQL_* variables from the caller."""
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "LC_ALL": "C"}
        if "TZ" in os.environ:
            env["TZ"] = os.environ["TZ"]
        return env

    def run_tool(self, cmd: list[str], what: str, timeout: float = 600) -> str:
        """Run an init tool as the server user; its output goes to the server log."""
        log = self._held_log()  # held open for the instance's life: no name opened here
        start = log.size()
        log.write(f"\n--- pmem-advisor: {' '.join(cmd)}\n".encode())
        proc: subprocess.Popen | None = None
        try:
            # Its own process group: initdb starts a bootstrap postgres that outlives a
            # killed initdb and would write on into the directory our cleanup is emptying.
            # Started with the signals held: a Ctrl-C in Popen would leave it unowned.
            with registry.deferred_signals():
                proc = subprocess.Popen(
                    cmd, stdout=log.fd, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    cwd=self.home, env=self.env(), start_new_session=True,
                    **self.user.popen_kwargs(),
                )
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as e:
            assert proc is not None
            _end_group(proc)
            raise ServerError(f"{what} timed out after {timeout:.0f} s",
                              log_tail=self.log_tail()) from e
        except BaseException:  # Ctrl-C, SIGTERM: nothing of the tool may run on
            if proc is not None:
                _end_group(proc)
            raise
        text = self._log_since(start)
        if returncode != 0:
            raise ServerError(
                f"{what} failed: {self.refusal_reason(text)}",
                hint=self._hint(text), log_tail=self.log_tail(),
            )
        return text

    def initialize(self) -> None:
        """Create a fresh data directory (+ WAL/redo directory) with the init-time settings."""
        with self._refusing_planted():
            self._check_alive_object()
            if self.is_running() or self._proc is not None:
                self.stop()
            for d in (self.data_dir, self.wal_dir):
                if d is not None:
                    registry.empty_dir(d, keep=(MARKER,))
            # Marked before the init tool runs, and the marker never leaves: a SIGKILL while it
            # runs leaves directories the next reaper can prove ours and empty (issue 17 item 7;
            # before, an unmarked half-initialised --data-dir made `tune --resume` refuse it).
            self._mark()
            self._init_datadir()
            self._mark()
            self.initialized = True

    def start(self, config_text: str = "") -> None:
        """Start with ``config_text`` as the managed include file; wait until ready."""
        with self._refusing_planted():
            self._check_alive_object()
            if self.is_running():
                raise UsageError(f"instance {self.id} is already running; use restart()")
            if not self.initialized:
                raise UsageError(
                    f"instance {self.id} has no data directory yet: initialize() first")
            if self._proc is not None:  # it died since the last start: tidy up first
                self.stop()
            self.config_text = config_text
            self._write_config(config_text)
            log = self._held_log()
            offset = log.size()
            births = self.cgroup.births() if self.cgroup is not None else nullcontext()
            _open_files_up_to_the_hard_limit()
            try:
                with births:  # the server is born in its cgroup
                    # Started with the signals held: a Ctrl-C in Popen would leave a server that
                    # nobody stops writing on into the data directory the cleanup empties.
                    with registry.deferred_signals():
                        self._proc = subprocess.Popen(
                            self._server_command(), stdout=log.fd, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, cwd=self.home, env=self.env(),
                            # Ctrl-C reaches us, not the server: we stop it cleanly
                            start_new_session=True, **self.user.popen_kwargs(),
                        )
                        self._clean_stop = False
                        self.record.server_pid = self._proc.pid
                registry.save(self.record)
                if self.cgroup is not None:  # before it forks: its children are born inside
                    self.cgroup.add(self._proc.pid)
                self._wait_ready(offset)
                self._after_start()
            except BaseException:
                if self._proc is not None:  # (not when Popen itself failed: nothing started)
                    self._kill()
                raise

    def _wait_ready(self, offset: int) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.start_timeout
        delay = 0.02
        while time.monotonic() < deadline:
            code = self._proc.poll()
            if code is not None:
                why = self.refusal_reason(self._log_since(offset))
                raise ServerError(
                    f"{self.binary.flavour} {self.binary.version} refused to start "
                    f"({self._describe_exit(code)}): {why}",
                    hint=self._hint(self._log_since(offset)), log_tail=self.log_tail(),
                )
            if self._ready():
                return
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)
        raise ServerError(
            f"{self.binary.flavour} did not become ready within {self.start_timeout:.0f} s",
            log_tail=self.log_tail(),
        )

    def pause(self) -> None:
        """Stop every process of the server (SIGSTOP), so that it takes no CPU while another
        server is measured; ``resume`` continues it. The leader first: stopped, it forks no
        more (a fork racing the signal is restarted by the kernel), so its descendants, listed
        after it, are all of them. Each descendant's own process group is signalled too:
        PostgreSQL's children each lead their own (InitPostmasterChild calls setsid), and a
        tool one of them runs shares it. Stopping, killing or destroying a paused server
        resumes it first."""
        if self._proc is None or self._proc.poll() is not None:
            return
        self._paused = True
        self._signal_tree(signal.SIGSTOP)

    def resume(self) -> None:
        if self._paused and self._proc is not None:
            self._signal_tree(signal.SIGCONT)
        self._paused = False

    def _signal_tree(self, sig: int) -> None:
        assert self._proc is not None
        leader = self._proc.pid
        try:
            os.killpg(leader, sig)
            children = psutil.Process(leader).children(recursive=True)
        except (ProcessLookupError, psutil.Error):
            return  # it died meanwhile: the next check says so
        for child in children:
            try:
                if os.getpgid(child.pid) == child.pid:
                    os.killpg(child.pid, sig)
                else:
                    os.kill(child.pid, sig)
            except ProcessLookupError:
                continue  # exited meanwhile

    @property
    def paused(self) -> bool:
        return self._paused

    def stop(self) -> None:
        """Shut the server down cleanly (SIGKILL only after ``stop_timeout``)."""
        self.resume()  # a stopped process would hold the shutdown signal until the timeout
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                try:
                    proc.send_signal(self.stop_signal)
                    proc.wait(timeout=self.stop_timeout)
                    self._clean_stop = proc.returncode == 0
                except subprocess.TimeoutExpired:
                    self._kill_group(proc)
                    self._clean_stop = False
            else:
                self._clean_stop = False  # it died on its own: crashed or killed
        self._reap_leftovers()

    def restart(self, config_text: str | None = None) -> None:
        """Stop and start again, with ``config_text`` or the previous config."""
        self.stop()
        self.start(self.config_text if config_text is None else config_text)

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def raise_if_dead(self) -> None:
        """ServerError with the log tail if the server exited since it was started."""
        if self._proc is not None and self._proc.poll() is not None:
            raise ServerError(
                f"{self.binary.flavour} server exited unexpectedly "
                f"({self._describe_exit(self._proc.returncode)})",
                log_tail=self.log_tail(),
            )

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.is_running() else None

    @property
    def stopped_cleanly(self) -> bool:
        return self._proc is None and self._clean_stop

    def _hint(self, log_text: str) -> str | None:
        if _DISK_FULL.search(log_text):
            where = ", ".join(str(d) for d in (self.data_dir, self.wal_dir) if d)
            return f"a filesystem is full: check free space of {where}"
        return None

    def _describe_exit(self, code: int) -> str:
        return f"killed by {_signal_name(code)}" if code < 0 else f"exit code {code}"

    def _kill(self) -> None:
        self.resume()
        proc, self._proc = self._proc, None
        if proc is not None:
            self._kill_group(proc)
        self._clean_stop = False
        self._reap_leftovers()

    def _kill_group(self, proc: subprocess.Popen) -> None:
        """SIGKILL the server and every process of it, and wait until none is left. Its
        processes are listed while the leader lives: PostgreSQL's children lead sessions of
        their own (setsid), and once the postmaster is reaped nothing ties them to it."""
        family = registry.server_processes(self.record) if proc.poll() is None else []
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        procs = {p.pid: p for p in [*family, *registry.server_processes(self.record)]}
        for p in procs.values():
            with contextlib.suppress(psutil.Error):  # gone already (or its pid reused)
                p.kill()
        psutil.wait_procs(list(procs.values()), timeout=10)

    def _reap_leftovers(self) -> None:
        """After a crash or SIGKILL: kill orphaned server children, tidy, forget the pid."""
        if self.record.server_pid is None:
            return
        if self._proc is None:
            registry.kill_server(self.record, timeout=5)
        if not self._clean_stop:
            self._after_crash()
        self.record.server_pid = None
        if not self._destroyed:
            registry.save(self.record)

    def destroy(self) -> None:
        """Stop the server and remove everything this instance created. Idempotent."""
        if self._destroyed or self._destroying:
            return
        self._destroying = True
        try:
            self.stop()
            if not self._clean_stop and self.initialized and not self._planted:
                self._release_crash_resources()
        except Exception:  # noqa: BLE001 - still remove files and the record
            self._kill()
        finally:
            self._destroyed = True
            try:
                if self._planted:
                    # kept for inspection, with its record: a record is never dropped while
                    # its files stay (the next reaper removes both, by descriptor)
                    self.record.kept = self._planted
                    self._keep_record()
                else:
                    self._drop_files_and_record()
            finally:
                registry.untrack(self)
                if self._log is not None:
                    self._log.close()
                # back to the pool: a lease skips a uid any process still runs as
                release_server_user(self.user)

    def _drop_files_and_record(self) -> None:
        """Remove our files; forget the record only when nothing of them is left (else it
        stays, markers and all, so the next reaper finishes it: no directory outlives its
        record)."""
        left = ["not removed"]
        try:
            left = self._remove_files()
        finally:
            if left:
                self._keep_record()
            else:
                registry.forget(self.id)

    def _keep_record(self) -> None:
        self.record.server_pid = None
        with contextlib.suppress(OSError, AdvisorError):
            registry.save(self.record)

    def _remove_files(self) -> list[str]:
        """Remove the directories we made and empty the user's; each marker goes last, only
        once nothing else is left. Returns what was left and why ([] when all went)."""
        left = []
        for d in self._remove:  # each one tried, whatever the others did
            left.append(self._try_remove(d, lambda d=d: remove_tree(d, last=MARKER)))
        for d in self._empty:
            left.append(self._try_remove(d, lambda d=d: registry.empty_dir(d)))
        return [why for why in left if why]

    @staticmethod
    def _try_remove(d: Path, remove) -> str | None:
        try:
            return remove()
        except (OSError, AdvisorError) as e:
            return f"{d}: {e}"

    def _check_alive_object(self) -> None:
        if self._destroyed:
            raise UsageError(f"instance {self.id} was destroyed")

    def __enter__(self) -> Instance:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    # --- logs, queries, snapshots ----------------------------------------------------------

    def _held_log(self) -> HeldLog:
        if self._log is None or self._log.fd < 0:
            raise UsageError(f"instance {self.id} was destroyed")
        return self._log

    def _log_since(self, offset: int) -> str:
        """The log from ``offset`` on (its last MiB at most), read from the held descriptor."""
        return self._held_log().read_since(offset)

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the server log (also init tool output)."""
        if self._log is None or self._log.fd < 0:
            return ""
        return self._log.tail(lines)

    def query(self, sql: str, params: Any = None) -> list[tuple]:
        """Run one statement on a fresh autocommit connection; rows (empty if none)."""
        conn = self.connect()
        try:
            cur = conn.cursor()
            cur.execute(sql, params)
            rows = cur.fetchall() if cur.description else []
            return [tuple(r) for r in rows]
        finally:
            conn.close()

    @property
    def golden_key(self) -> str:
        """Hash of everything fixed at init time: trials sharing it share one golden copy."""
        ident = {
            "engine": self.engine, "flavour": self.binary.flavour,
            "version": self.binary.version, "init": sorted(self.init_settings.items()),
            "separate_wal": self.wal_dir is not None,
        }
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]

    def log_files(self) -> list[Path]:
        """Preallocated log files to materialize before a golden copy is kept (see
        ``instances.precondition``); PostgreSQL zero-fills its WAL segments itself."""
        return []

    def snapshot(self, name: str = "golden") -> None:
        """Stop cleanly and keep a copy of the data (+ WAL/redo) directory as ``name``."""
        with self._refusing_planted():
            self._check_alive_object()
            golden.take(self, name)

    def restore(self, name: str = "golden") -> None:
        """Replace the data (+ WAL/redo) directory with the copy ``name`` (server stopped)."""
        with self._refusing_planted():
            self._check_alive_object()
            golden.put_back(self, name)
            self._after_restore()
            self._mark()
            self.initialized = True

    def has_snapshot(self, name: str = "golden") -> bool:
        return golden.exists(self, name)

    @staticmethod
    def first_match(patterns: list[str], text: str) -> str | None:
        for pat in patterns:
            m = re.search(pat, text, re.MULTILINE)
            if m:
                return " ".join(m.group(0).split())
        return None


def _open_files_up_to_the_hard_limit() -> None:
    """The open-files soft limit raised to the hard one, as a service manager starts a server
    (systemd's LimitNOFILE), and inherited by the server we start. A login shell's soft limit
    is 1024: MariaDB started by an ordinary user under it cuts table_open_cache (2000 asked,
    421 run) and runs a config that is not the one asked for; root's server raises its own."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20  # the kernel's nr_open
    if soft == resource.RLIM_INFINITY or soft >= target:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        pass  # a container's limit: the server says what it runs (its settings)


def _end_group(proc: subprocess.Popen) -> None:
    """End a tool's whole process group: SIGTERM first, SIGKILL what is left after
    ``TOOL_GRACE_S``.

    The polite signal matters: initdb runs PostgreSQL in single-user mode, and a postgres
    killed by SIGKILL leaves its dynamic shared memory segments in /dev/shm (only a clean
    exit removes them), while SIGTERM makes it exit through its own cleanup."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    gone = False
    try:
        gone = _group_gone(proc, TOOL_GRACE_S)
    finally:  # a second Ctrl-C during the grace period must not leave the tool running
        if not gone:
            _kill_group(proc)


def _group_gone(proc: subprocess.Popen, within_s: float) -> bool:
    """Whether the tool and every member of its process group exited within ``within_s``."""
    end = time.monotonic() + within_s
    while True:
        proc.poll()  # reap the leader, so that its group can empty
        try:
            os.killpg(proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            if proc.poll() is not None:
                return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)


def _kill_group(proc: subprocess.Popen, deadline_s: float = 30.0) -> None:
    """SIGKILL a tool's whole process group and wait until no member is left."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    _group_gone(proc, deadline_s)  # members left were killed: they are exiting
