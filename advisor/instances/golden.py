"""Golden snapshots: every trial starts from byte-identical data.

A snapshot is taken from a cleanly stopped server (a crash-recovered copy would replay WAL in
every trial and skew timings) and stored under ``<golden_dir>/<golden_key>-<name>/`` with the
data directory and, when separate, the WAL/redo directory. ``golden_key`` hashes the init-time
settings, so one golden copy serves every trial with the same init settings, and instances
created with the same ``golden_dir`` share it. Copies use ``cp --reflink=auto``: a clone on
XFS/btrfs, a plain copy elsewhere (tmpfs copies at memory speed). A restored copy leaves no
pages of its own in the page cache: the first reads of a trial come from the medium, within the
server's budget, as they would after a restart in production.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pmem_advisor.errors import EnvironmentProblem, ServerError, UsageError
from pmem_advisor.fileio import write_file_safely
from pmem_advisor.instances.cgroup import evict_page_cache

if TYPE_CHECKING:
    from pmem_advisor.instances.base import Instance


def location(inst: Instance, name: str) -> Path:
    if not name or "/" in name or name.startswith("."):
        raise UsageError(f"bad snapshot name {name!r}")
    return inst.golden_dir / f"{inst.golden_key}-{name}"


def exists(inst: Instance, name: str = "golden") -> bool:
    return (location(inst, name) / "meta.json").is_file()


def copy_tree(src: Path, dst: Path) -> None:
    """Copy the contents of ``src`` into the existing directory ``dst``, keeping owners and
    modes; reflinks where the filesystem can. Interrupted, ``cp`` is gone (killed and waited
    for) before the interrupt goes on: the cleanup that empties ``dst`` has no writer racing
    it (``registry.run_child``)."""
    from pmem_advisor.instances.registry import run_child

    r = run_child(["cp", "-a", "--reflink=auto", f"{src}/.", f"{dst}/"])
    if r.returncode != 0:
        msg = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        raise EnvironmentProblem(f"copying {src} to {dst} failed: {msg}")


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
    from pmem_advisor.instances.precondition import materialize

    for log in inst.log_files():  # steady-state log blocks, not fresh unwritten extents
        materialize(log)
    target = location(inst, name)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        started = time.monotonic()
        for part, d in (("data", inst.data_dir), ("wal", inst.wal_dir)):
            if d is not None:
                (tmp / part).mkdir()
                copy_tree(d, tmp / part)
        meta = {
            "instance": inst.id, "engine": inst.engine, "flavour": inst.binary.flavour,
            "version": inst.binary.version, "init_settings": inst.init_settings,
            "separate_wal": inst.wal_dir is not None, "created": time.time(),
            "copy_seconds": round(time.monotonic() - started, 3),
        }
        write_file_safely(tmp / "meta.json", json.dumps(meta, indent=1), backup=False)
        # written back now, not by the kernel during the first trials' measurements
        evict_page_cache([tmp])
        if target.exists():
            shutil.rmtree(target)
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


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
    from pmem_advisor.instances.registry import MARKER, empty_dir, write_marker

    for part, d in (("data", inst.data_dir), ("wal", inst.wal_dir)):
        if d is not None:
            # the marker stays (or, in a freshly claimed empty directory, comes first) while
            # the copy runs: a SIGKILL mid-restore leaves a directory the next reaper may
            # still empty (an unmarked one it must refuse to touch)
            empty_dir(d, keep=(MARKER,))
            write_marker(d, inst.id)
            # nor may the copy bring the marker of the instance that took the snapshot
            (src / part / MARKER).unlink(missing_ok=True)
            copy_tree(src / part, d)
            # The copy's pages sit in the page cache, charged to us, not to the server's
            # budget: dropped, the trial reads the medium under test (on tmpfs, a no-op).
            evict_page_cache([d])
    return time.monotonic() - started
