"""A memory cgroup that holds a managed server to a memory budget, page cache included.

On a machine with far more RAM than the budget, the OS page cache hides every memory knob:
data "larger than the budget" is still served from RAM. A memory cgroup charges the server's
page cache to it, so a budget of 1 GiB really means 1 GiB (kernel docs,
admin-guide/cgroup-v1/memory.rst section 2.2 and admin-guide/cgroup-v2.rst "Memory").

cgroup v2 is used when its hierarchy has the memory controller, else v1's memory hierarchy.
The group is created below the caller's own memory cgroup (so an outer limit still applies
and whoever tracks the caller still tracks the server), named ``pmem-advisor-<name>``.
When no limit can be set, ``MemoryCgroup.create`` raises ``CgroupUnavailable`` saying why;
callers print that and carry on unlimited, never silently.

A run killed with SIGKILL cannot remove its group. ``reap_stale_cgroups`` (called by every
``create`` and by the instance reaper) removes the sibling groups a dead run of ours left: our
prefix, the pid at the end of the name no longer alive, no process inside; it only rmdirs, so
the kernel refuses anything not empty.

Pages cached before the server ran (a golden copy just written by ``cp``) are charged to the
process that wrote them: ``evict_page_cache`` drops them so the server's reads count.
"""

from __future__ import annotations

import os
import re
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pmem_advisor.errors import EnvironmentProblem

CGROUP_ROOT = Path("/sys/fs/cgroup")
PREFIX = "pmem-advisor-"
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,80}$")
_OWNER_PID = re.compile(r"-([0-9]{1,10})$")  # callers end names with their pid: tune-<pid>


class CgroupUnavailable(EnvironmentProblem):
    """No memory cgroup can be made here (not mounted, no memory controller, not writable)."""


@dataclass(frozen=True)
class Hierarchy:
    version: int  # 1 or 2
    mount: Path  # where the memory hierarchy is mounted
    own: Path  # the caller's own memory cgroup inside it


def _own_path(version: int, proc_cgroup: str) -> str:
    """The caller's cgroup path from /proc/self/cgroup lines ``id:controllers:path``."""
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if version == 2 and parts[0] == "0" and parts[1] == "":
            return parts[2]
        if version == 1 and "memory" in parts[1].split(","):
            return parts[2]
    return "/"


def find_hierarchy(root: Path = CGROUP_ROOT, proc_cgroup: str | None = None) -> Hierarchy:
    """The memory hierarchy to use: v2 with the memory controller, else v1. Raises
    ``CgroupUnavailable`` with the reason when neither is there."""
    if proc_cgroup is None:
        try:
            proc_cgroup = Path("/proc/self/cgroup").read_text()
        except OSError:
            proc_cgroup = ""
    reasons = []
    for mount in (root, root / "unified"):  # pure v2, or the hybrid layout's v2 mount
        controllers = mount / "cgroup.controllers"
        if controllers.is_file():
            if "memory" in controllers.read_text().split():
                own = mount / _own_path(2, proc_cgroup).lstrip("/")
                return Hierarchy(2, mount, own if own.is_dir() else mount)
            reasons.append(f"cgroup v2 at {mount} has no memory controller")
    v1 = root / "memory"
    if (v1 / "memory.limit_in_bytes").is_file():
        own = v1 / _own_path(1, proc_cgroup).lstrip("/")
        return Hierarchy(1, v1, own if own.is_dir() else v1)
    reasons.append(f"no cgroup v1 memory hierarchy at {v1}")
    raise CgroupUnavailable("no memory cgroup to hold the server to its budget: "
                            + "; ".join(reasons))


class MemoryCgroup:
    """One memory cgroup with a hard limit. ``add(pid)`` moves a process (and its threads)
    in; processes it forks later are born inside. ``remove()`` is idempotent."""

    def __init__(self, path: Path, version: int, limit_bytes: int) -> None:
        self.path, self.version, self.limit_bytes = path, version, limit_bytes

    @classmethod
    def create(cls, name: str, limit_bytes: int, *, root: Path = CGROUP_ROOT,
               proc_cgroup: str | None = None) -> MemoryCgroup:
        if not _NAME.match(name):
            raise ValueError(f"bad cgroup name {name!r}")
        if limit_bytes <= 0:
            raise ValueError(f"memory limit must be positive, got {limit_bytes}")
        h = find_hierarchy(root, proc_cgroup)
        _reap_in(h)
        path = h.own / f"{PREFIX}{name}"
        try:
            if h.version == 2:
                _enable_memory_controller(h.own)
            path.mkdir(exist_ok=True)
        except OSError as e:
            raise CgroupUnavailable(
                f"cannot create the memory cgroup {path}: {e.strerror or e} "
                "(not root, or the hierarchy is read-only here)") from e
        group = cls(path, h.version, int(limit_bytes))
        try:
            group._set_limit()
        except OSError as e:
            group.remove()
            raise CgroupUnavailable(f"cannot set the memory limit of {path}: "
                                    f"{e.strerror or e}") from e
        return group

    def _set_limit(self) -> None:
        if self.version == 2:
            (self.path / "memory.max").write_text(f"{self.limit_bytes}\n")
            swap = self.path / "memory.swap.max"
            if swap.exists():  # swap would let the server exceed its budget unseen
                swap.write_text("0\n")
        else:
            (self.path / "memory.limit_in_bytes").write_text(f"{self.limit_bytes}\n")
            memsw = self.path / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                try:
                    memsw.write_text(f"{self.limit_bytes}\n")
                except OSError:
                    pass  # swap accounting off: nothing to cap

    # -- processes -------------------------------------------------------------------------
    def add(self, pid: int) -> None:
        """Move ``pid`` (all its threads) into the group."""
        (self.path / "cgroup.procs").write_text(f"{pid}\n")

    @contextmanager
    def births(self):
        """Processes this one starts inside the block are born in the group: we step in for
        the fork and back out to the group's parent (where the group was made, below ours)
        after it. Adding the server's pid after the fork races its first children, which a
        loaded machine lets the postmaster fork before we move it."""
        self.add(os.getpid())
        try:
            yield
        finally:
            (self.path.parent / "cgroup.procs").write_text(f"{os.getpid()}\n")

    def pids(self) -> list[int]:
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(x) for x in text.split()]

    # -- accounting ------------------------------------------------------------------------
    def _read_int(self, v1: str, v2: str) -> int | None:
        try:
            text = (self.path / (v2 if self.version == 2 else v1)).read_text().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def usage_bytes(self) -> int | None:
        return self._read_int("memory.usage_in_bytes", "memory.current")

    def peak_bytes(self) -> int | None:
        """The highest usage seen (v1 max_usage; v2 memory.peak where the kernel has it)."""
        return self._read_int("memory.max_usage_in_bytes", "memory.peak")

    def limit(self) -> int | None:
        return self._read_int("memory.limit_in_bytes", "memory.max")

    def describe(self) -> str:
        return (f"memory cgroup v{self.version} {self.path} limited to "
                f"{self.limit_bytes / 2**20:.0f} MiB (server and its page cache)")

    # -- removal ---------------------------------------------------------------------------
    def remove(self, timeout: float = 5.0) -> None:
        """Move any process left inside up to the parent group, then remove the group."""
        if not self.path.exists():
            return
        deadline = time.monotonic() + timeout
        while True:
            for pid in self.pids():
                try:
                    (self.path.parent / "cgroup.procs").write_text(f"{pid}\n")
                except OSError:
                    pass  # exited meanwhile
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def __enter__(self) -> MemoryCgroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def reap_stale_cgroups(*, root: Path = CGROUP_ROOT,
                       proc_cgroup: str | None = None) -> list[Path]:
    """Remove the memory cgroups that killed runs of ours left beside where ours go; returns
    the removed paths (empty where there is no memory hierarchy)."""
    try:
        h = find_hierarchy(root, proc_cgroup)
    except CgroupUnavailable:
        return []
    return _reap_in(h)


def _reap_in(h: Hierarchy) -> list[Path]:
    """A sibling is removed only if it carries our prefix, ends in a pid that is not alive
    (a reused pid keeps it until a later round: the name holds no start time) and has no
    process inside. Nothing outside the hierarchy's mount is looked at, no link followed."""
    import psutil

    mount = os.path.realpath(h.mount)
    parent = os.path.realpath(h.own)
    if os.path.commonpath([mount, parent]) != mount:
        return []
    removed = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    for entry in entries:
        match = _OWNER_PID.search(entry.name)
        if not entry.name.startswith(PREFIX) or match is None:
            continue
        if not entry.is_dir(follow_symlinks=False):
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or psutil.pid_exists(pid):
            continue
        try:
            # by-name-safe: cgroupfs, written by root only
            with open(os.path.join(entry.path, "cgroup.procs"), encoding="ascii") as f:
                if f.read().strip():
                    continue  # processes inside: not ours to end
            os.rmdir(entry.path)  # the kernel refuses a group with processes or children
        except OSError:
            continue  # no cgroup.procs (not a cgroup), busy, or gone meanwhile
        removed.append(Path(entry.path))
    return removed


def _enable_memory_controller(parent: Path) -> None:
    control = parent / "cgroup.subtree_control"
    if "memory" in control.read_text().split():
        return
    control.write_text("+memory\n")


# Opened by descriptor, never by a path re-walked: the trees evicted (a server's data
# directory, a copy of one) are writable by the server's user, who could plant a symlink
# (followed as root) or a FIFO (an open that never returns).
_EVICT_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def evict_page_cache(paths: list[Path]) -> int:
    """Write back and drop the cached pages of every regular file at or under ``paths``; returns the
    bytes of the files. Only our own files are touched (never a global drop_caches), so other
    users of the machine keep their cache. On tmpfs this is a no-op: the data is the cache.
    Symlinks are not followed and only regular files are synced."""
    total = 0
    for top in paths:
        try:
            fd = os.open(top, _EVICT_OPEN)
        except OSError:
            continue
        total += _evict(fd)
    return total


def _evict(fd: int) -> int:
    """Evict the file or directory tree open at ``fd`` (closed here)."""
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            total = 0
            for name in os.listdir(fd):
                try:
                    child = os.open(name, _EVICT_OPEN, dir_fd=fd)
                except OSError:
                    continue  # a symlink (ELOOP), or gone meanwhile
                total += _evict(child)
            return total
        if not stat.S_ISREG(st.st_mode):
            return 0
        os.fsync(fd)  # DONTNEED drops clean pages only
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return st.st_size
    except OSError:
        return 0
    finally:
        os.close(fd)
