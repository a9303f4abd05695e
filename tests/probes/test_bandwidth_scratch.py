"""Bad input for the bandwidth probe: paths, permissions, space, cleanup; topology parsing."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path

import pytest

from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.probes.bandwidth import scratch, topology
from pmem_advisor.probes.bandwidth.plan import MIB
from tests.sandbox import require_root


@contextlib.contextmanager
def tmpfs(tmp_path: Path, options: str):
    """A private tmpfs mount (root only); skips when mounting is not allowed here."""
    require_root("mounting a tmpfs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def leftovers(directory: Path) -> list[str]:
    return [n for n in os.listdir(directory) if n.startswith(scratch.SCRATCH_PREFIX)]


def test_nonexistent_path(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        scratch.open_target(str(tmp_path / "nope"), 64 * MIB, destructive=False)


def test_existing_file_is_never_written_without_destructive(tmp_path):
    f = tmp_path / "data"
    f.write_bytes(b"keep me")
    with pytest.raises(UsageError, match="only writes files it creates"):
        scratch.open_target(str(f), 64 * MIB, destructive=False)
    assert f.read_bytes() == b"keep me"


def test_existing_file_too_small_with_destructive(tmp_path):
    f = tmp_path / "data"
    f.write_bytes(b"x" * 4096)
    with pytest.raises(UsageError, match="smaller than"):
        scratch.open_target(str(f), 64 * MIB, destructive=True)
    assert f.read_bytes() == b"x" * 4096


def test_existing_file_with_destructive_is_used_and_kept(tmp_path):
    f = tmp_path / "data"
    f.write_bytes(b"\0" * (4 * MIB))
    t = scratch.open_target(str(f), 2 * MIB, destructive=True)
    assert (t.kind, t.path, t.created) == ("file", str(f), False)
    t.cleanup()
    assert f.exists()


def test_char_device_needs_destructive_and_devdax():
    with pytest.raises(UsageError, match="--destructive"):
        scratch.open_target("/dev/null", 64 * MIB, destructive=False)
    with pytest.raises(UsageError, match="not a devdax"):
        scratch.open_target("/dev/null", 64 * MIB, destructive=True)


def test_block_device_is_refused():
    blk = next((f"/dev/{n}" for n in sorted(os.listdir("/sys/block"))
                if os.path.exists(f"/dev/{n}")), None)
    if blk is None:
        pytest.skip("no block device node here")
    with pytest.raises(UsageError, match="block device"):
        scratch.open_target(blk, 64 * MIB, destructive=True)


def test_unwritable_directory_under_proc():
    # root may write almost anywhere; procfs refuses new files even to root
    with pytest.raises(UsageError, match="not writable"):
        scratch.open_target("/proc", 64 * MIB, destructive=False)


def test_read_only_mount(tmp_path):
    with tmpfs(tmp_path, "ro,size=2g") as mnt:
        with pytest.raises(UsageError, match="not writable"):
            scratch.open_target(str(mnt), 64 * MIB, destructive=False)
        assert leftovers(mnt) == []


def test_too_small_filesystem(tmp_path):
    with tmpfs(tmp_path, "size=1m") as mnt:
        with pytest.raises(EnvironmentProblem, match="free; the bandwidth probe needs"):
            scratch.open_target(str(mnt), 64 * MIB, destructive=False)
        assert leftovers(mnt) == []


def test_scratch_created_allocated_and_removed(tmp_path):
    t = scratch.open_target(str(tmp_path), 4 * MIB, destructive=False)
    assert t.created and t.kind == "scratch-file"
    assert os.path.dirname(t.path) == str(tmp_path)
    assert os.stat(t.path).st_size == 4 * MIB
    assert os.stat(t.path).st_mode & 0o777 == 0o600
    t.cleanup()
    t.cleanup()  # idempotent
    assert leftovers(tmp_path) == []


def test_allocation_failure_removes_the_file(tmp_path, monkeypatch):
    def full(fd, off, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(scratch.os, "posix_fallocate", full)
    with pytest.raises(EnvironmentProblem, match="ran out of space.*removed"):
        scratch.open_target(str(tmp_path), 4 * MIB, destructive=False)
    assert leftovers(tmp_path) == []


def test_ctrl_c_while_allocating_removes_the_file(tmp_path, monkeypatch):
    def interrupted(fd, off, size):
        raise KeyboardInterrupt

    monkeypatch.setattr(scratch.os, "posix_fallocate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        scratch.open_target(str(tmp_path), 4 * MIB, destructive=False)
    assert leftovers(tmp_path) == []


def test_parse_helpers():
    assert topology.parse_size("516096K\n") == 516096 * 1024
    assert topology.parse_size("32M") == 32 * MIB
    assert topology.parse_size("1024") == 1024


def test_fs_type_longest_prefix(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("/dev/vda / ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\n"
                      "/dev/pmem0 /mnt/pmem xfs rw,dax=always 0 0\n")
    assert topology.fs_type("/dev/shm/x", str(mounts)) == "tmpfs"
    assert topology.fs_type("/mnt/pmem", str(mounts)) == "xfs"
    assert topology.fs_type("/mnt/pmemx", str(mounts)) == "ext4"


def test_topology_from_a_fake_sysfs(tmp_path):
    sysd = tmp_path / "sys/devices/system"
    for node, cpus, dist in ((0, "0-1", "10 21 17"), (1, "2-3", "21 10 28"), (2, "", "17 28 10")):
        d = sysd / f"node/node{node}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
        (d / "distance").write_text(dist + "\n")
    for idx, size in ((0, "48K"), (3, "105M")):
        c = sysd / f"cpu/cpu0/cache/index{idx}"
        c.mkdir(parents=True)
        (c / "size").write_text(size + "\n")
    topo = topology.Topology.live(str(tmp_path))
    assert topo.nodes == {0: [0, 1], 1: [2, 3]}  # node 2 (CXL, no CPUs) cannot run threads
    assert topo.llc_bytes == 105 * MIB
    assert topo.default_node() == 0
    assert topo.far_node(0) == 1 and topo.far_node(1) == 0


def test_live_topology_is_usable():
    topo = topology.Topology.live()
    allowed = os.sched_getaffinity(0)
    assert topo.nodes and all(set(c) <= allowed for c in topo.nodes.values())
    assert topo.far_node(topo.default_node()) in (None, *topo.nodes)
