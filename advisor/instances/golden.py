"""Golden snapshots: every trial starts from byte-identical data.

A snapshot is taken from a cleanly stopped server (a crash-recovered copy would replay WAL in
every trial and skew timings) and stored under ``<golden_dir>/<golden_key>-<name>/`` with the
data directory and, when separate, the WAL/redo directory. ``golden_key`` hashes the init-time
settings, so one golden copy serves every trial with the same init settings, and instances
created with the same ``golden_dir`` share it. Copies use ``cp --reflink=auto``: a clone on
XFS/btrfs, a plain copy elsewhere (tmpfs copies at memory speed). A restored copy leaves no
pages of its own in the page cache: the first reads of a trial come from the medium, within the
server's budget, as they would after a restart in production.

The data directory and every copy of it belong to the server's user, which may be hostile
(issue 50), so root copies by descriptor (fileio.copy_tree_fd): each source entry opened
without following a link and checked, each copy made ``O_EXCL`` relative to a held directory
and given to the server user by ``fchown``; a planted FIFO, device or hard link is refused.
Data moves by ``copy_file_range``, which shares extents where the filesystem can (XFS, btrfs).
Snapshots live in a root-owned 0700 directory: a trial's server cannot reach them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Protocol

from pmem_advisor.errors import EnvironmentProblem, ServerError, UsageError
from pmem_advisor.fileio import (
    copy_tree_fd,
    held_dir,
    make_owned_dir,
    make_temp_dir,
    open_dir,
    unlink_at,
    write_file_safely,
)
from pmem_advisor.instances.cgroup import evict_page_cache
from pmem_advisor.instances.precondition import materialize
from pmem_advisor.instances.privileges import RunAs
from pmem_advisor.instances.registry import MARKER, empty_dir, write_marker


class Instance(Protocol):
    """What a golden copy needs of a managed instance: the contract, here at the bottom, so
    that instances/base depends on this module and never the other way (issue 53)."""

    id: str
    engine: str
    binary: Any
    user: RunAs
    data_dir: Path
    wal_dir: Path | None
    golden_dir: Path
    init_settings: dict[str, Any]
    initialized: bool
    _proc: Any

    @property
    def _owner(self) -> tuple[int, int] | None: ...
    @property
    def golden_key(self) -> str: ...
    @property
    def stopped_cleanly(self) -> bool: ...
    def is_running(self) -> bool: ...
    def stop(self) -> None: ...
    def log_files(self) -> list[Path]: ...
    def log_tail(self, lines: int = 40) -> str: ...
    def _release_crash_resources(self) -> None: ...


def location(inst: Instance, name: str) -> Path:
    if not name or "/" in name or name.startswith("."):
        raise UsageError(f"bad snapshot name {name!r}")
    return inst.golden_dir / f"{inst.golden_key}-{name}"


def exists(inst: Instance, name: str = "golden") -> bool:
    return (location(inst, name) / "meta.json").is_file()


def copy_tree(src: Path, dst: Path, user: RunAs | None = None, *,
              from_user: RunAs | None = None) -> None:
    """Copy the contents of ``src`` into the existing directory ``dst``, keeping modes and
    times, every copy owned by ``user`` (the server's, when we are root; None: ours), by
    descriptor in this process: interrupted, no writer is left racing the cleanup that
    empties ``dst``. ``src`` may hold files of ``from_user`` (or of ``user``) besides ours."""
    owner = (user.uid, user.gid) if user is not None and user.privileged else None
    src_owners = tuple(u.uid for u in (user, from_user) if u is not None)
    try:
        copy_tree_fd(src, dst, owner, src_owners=src_owners)
    except OSError as e:
        raise EnvironmentProblem(f"copying {src} to {dst} failed: {e.strerror or e}") from None


def take(inst: Instance, name: str = "golden") -> Path:
    """Stop the server cleanly and store its directories as snapshot ``name``."""
    if not inst.initialized:
        raise UsageError(f"instance {inst.id} has no data to snapshot: initialize() first")
    if inst.is_running() or inst._proc is not None:
        inst.stop()
    if not inst.stopped_cleanly:
        raise ServerError(
            f"cannot snapshot instance {inst.id}: the server did not shut down cleanly",
            log_tail=inst.log_tail(),
        )

    for log in inst.log_files():  # steady-state log blocks, not fresh unwritten extents
        materialize(log, owners=(inst.user.uid,))
    target = location(inst, name)
    gfd = open_dir(target.parent, create=True)
    try:
        _take_into(inst, gfd, target)
    finally:
        os.close(gfd)
    return target


def _take_into(inst: Instance, gfd: int, target: Path) -> None:
    """The copy into a temporary directory of the held golden directory ``gfd``, renamed to
    ``target``'s name when complete."""
    # root's, 0700: no server can reach a snapshot, nor change it between trials
    tfd, tmpname = make_temp_dir(gfd, f".{target.name}-", 0o700)
    tmp = target.parent / tmpname
    try:
        started = time.monotonic()
        for part, d in (("data", inst.data_dir), ("wal", inst.wal_dir)):
            if d is not None:
                # the snapshot is root's through and through: instances restoring it run as
                # other pool uids than the one that took it, and none may change it
                os.close(make_owned_dir(tfd, part, None, 0o700, str(tmp / part)))
                copy_tree(d, tmp / part, None, from_user=inst.user)
        meta = {
            "instance": inst.id, "engine": inst.engine, "flavour": inst.binary.flavour,
            "version": inst.binary.version, "init_settings": inst.init_settings,
            "separate_wal": inst.wal_dir is not None, "created": time.time(),
            "copy_seconds": round(time.monotonic() - started, 3),
        }
        write_file_safely(tmp / "meta.json", json.dumps(meta, indent=1), backup=False)
        # written back now, not by the kernel during the first trials' measurements
        evict_page_cache([tmp])
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(target.name, dir_fd=gfd)  # fd-based: follows no link inside
        os.rename(tmpname, target.name, src_dir_fd=gfd, dst_dir_fd=gfd)
    except BaseException:
        shutil.rmtree(tmpname, dir_fd=gfd, ignore_errors=True)
        raise
    finally:
        os.close(tfd)


def put_back(inst: Instance, name: str = "golden") -> float:
    """Replace the instance's directories with snapshot ``name``; returns seconds taken."""
    src = location(inst, name)
    if not (src / "meta.json").is_file():
        raise UsageError(f"no snapshot {name!r} for these init-time settings ({src})")
    if inst.is_running() or inst._proc is not None:
        inst.stop()
    if not inst.stopped_cleanly and inst.initialized:
        inst._release_crash_resources()  # the data dir that knows about them goes now
    started = time.monotonic()

    for part, d in (("data", inst.data_dir), ("wal", inst.wal_dir)):
        if d is not None:
            # the marker stays (or, in a freshly claimed empty directory, comes first) while
            # the copy runs: a SIGKILL mid-restore leaves a directory the next reaper may
            # still empty (an unmarked one it must refuse to touch)
            empty_dir(d, keep=(MARKER,))
            write_marker(d, inst.id)
            # nor may the copy bring the marker of the instance that took the snapshot
            with held_dir(src / part) as pfd:
                unlink_at(pfd, MARKER)
            copy_tree(src / part, d, inst.user)
            # The copy's pages sit in the page cache, charged to us, not to the server's
            # budget: dropped, the trial reads the medium under test (on tmpfs, a no-op).
            evict_page_cache([d])
    return time.monotonic() - started
