"""The memory cgroup that holds a managed server to its budget: which hierarchy is used, the
limit, processes inside (a plain child and a real server's every process), removal."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pmem_advisor.instances.cgroup import (
    CgroupUnavailable,
    MemoryCgroup,
    evict_page_cache,
    find_hierarchy,
)

MiB = 1 << 20


# --------------------------------------------------------------- hierarchy choice (fake trees)
def _v1(root: Path, own: str = "") -> None:
    d = root / "memory" / own
    d.mkdir(parents=True)
    (root / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")


def test_hybrid_without_v2_memory_controller_uses_v1_below_own_group(tmp_path):
    _v1(tmp_path, "jobs/abc")
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.controllers").write_text("hugetlb\n")
    h = find_hierarchy(tmp_path, "4:memory:/jobs/abc\n0::/\n")
    assert (h.version, h.own) == (1, tmp_path / "memory" / "jobs" / "abc")


def test_v2_with_memory_controller_is_preferred(tmp_path):
    _v1(tmp_path)
    (tmp_path / "cgroup.controllers").write_text("cpu io memory pids\n")
    (tmp_path / "user.slice").mkdir()
    h = find_hierarchy(tmp_path, "0::/user.slice\n")
    assert (h.version, h.own) == (2, tmp_path / "user.slice")


def test_no_memory_hierarchy_says_why(tmp_path):
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.controllers").write_text("hugetlb\n")
    with pytest.raises(CgroupUnavailable, match="no memory controller.*no cgroup v1"):
        find_hierarchy(tmp_path, "0::/\n")


def test_v1_group_and_limit_on_a_fake_tree(tmp_path):
    _v1(tmp_path)
    group = MemoryCgroup.create("t1", 256 * MiB, root=tmp_path, proc_cgroup="4:memory:/\n")
    assert group.path == tmp_path / "memory" / "pmem-advisor-t1"
    assert (group.path / "memory.limit_in_bytes").read_text().strip() == str(256 * MiB)
    assert group.version == 1 and group.limit() == 256 * MiB


def test_bad_names_and_limits_are_refused(tmp_path):
    with pytest.raises(ValueError):
        MemoryCgroup.create("../escape", MiB, root=tmp_path)
    with pytest.raises(ValueError):
        MemoryCgroup.create("ok", 0, root=tmp_path)


# --------------------------------------------------------------- the real hierarchy
def _real(limit: int, tag: str) -> MemoryCgroup:
    if os.geteuid() != 0:
        pytest.skip("memory cgroups need root here")
    try:
        return MemoryCgroup.create(f"test-{tag}-{os.getpid()}", limit)
    except CgroupUnavailable as exc:
        pytest.skip(f"no writable memory cgroup: {exc}")


@pytest.fixture
def real_group():
    group = _real(64 * MiB, "small")
    yield group
    group.remove()
    assert not group.path.exists()


@pytest.fixture
def server_group():
    group = _real(512 * MiB, "server")
    yield group
    group.remove()
    assert not group.path.exists()


def _cgroup_of(pid: int, version: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (version == 1 and "memory" in controllers.split(",")) or (
                version == 2 and controllers == ""):
            return path
    return ""


def test_real_group_has_the_limit_and_holds_a_process(real_group):
    assert real_group.limit() == 64 * MiB
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        real_group.add(child.pid)
        assert child.pid in real_group.pids()
        assert _cgroup_of(child.pid, real_group.version).endswith(real_group.path.name)
        real_group.remove()  # a process still inside is moved out, then the group goes
        assert not real_group.path.exists()
        assert not _cgroup_of(child.pid, real_group.version).endswith(real_group.path.name)
    finally:
        child.kill()
        child.wait()


def test_page_cache_written_inside_counts_and_stays_under_the_limit(real_group, tmp_path):
    target = Path("/var/tmp") / f"pmem-advisor-cgtest-{os.getpid()}"
    script = ("import os,sys\n"
              f"f=open({str(target)!r},'wb')\n"
              "for _ in range(96): f.write(b'x'*(1<<20))\n"
              "f.close()\n")
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(1)\n" + script],
                             stdin=subprocess.PIPE)
    try:
        real_group.add(child.pid)
        child.communicate(b"g", timeout=60)
        assert child.returncode == 0
        peak = real_group.peak_bytes()
        if peak is not None:  # 96 MiB written through a 64 MiB group: cache was charged
            assert 16 * MiB < peak <= 64 * MiB
        assert evict_page_cache([target]) == 96 * MiB
    finally:
        target.unlink(missing_ok=True)


def test_every_server_process_starts_inside(server_group):
    """The Instance hook: postmaster and every child it forks live in the group."""
    from pmem_advisor.instances import create_instance
    from tests.instances.conftest import find_server

    binary = find_server("pg-embedded")
    with create_instance(binary) as inst:
        inst.cgroup = server_group
        inst.initialize()
        inst.start("")
        deadline = time.monotonic() + 30
        import psutil

        main = psutil.Process(inst.pid)
        while len(main.children()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)  # checkpointer, walwriter, ... forked after start
        pids = {main.pid, *(c.pid for c in main.children(recursive=True))}
        assert len(pids) >= 3
        assert pids <= set(server_group.pids())
        inst.stop()
    assert server_group.pids() == []


# --------------------------------------------------------------- groups left by killed runs
def _dead_pid() -> int:
    """A pid that was ours a moment ago and is gone now (a finished child)."""
    import psutil

    for _ in range(20):
        proc = subprocess.Popen(["true"])
        proc.wait()
        if not psutil.pid_exists(proc.pid):
            return proc.pid
    pytest.skip("every finished child's pid was reused at once")


@pytest.mark.parametrize("via", ["create", "reap"])
def test_groups_left_by_dead_runs_are_removed_live_and_foreign_ones_stay(via):
    """A SIGKILLed `tune --memory` leaves pmem-advisor-tune-<pid>: the next create (or the
    reaper) removes it; a group with a process inside, one of a live pid and one without our
    prefix stay."""
    from pmem_advisor.instances import registry

    probe = _real(64 * MiB, "probe")  # skips where cgroups are not writable
    parent = probe.path.parent
    probe.remove()
    dead = _dead_pid()
    stale = parent / f"pmem-advisor-test-stale-{dead}"
    foreign = parent / f"someone-else-test-{dead}"
    live_pid = parent / f"pmem-advisor-test-livepid-{os.getpid()}"
    busy = MemoryCgroup.create(f"test-busy-{dead}", 64 * MiB)  # dead pid in name, not empty
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    made: list[MemoryCgroup] = [busy]
    try:
        busy.add(child.pid)
        for d in (stale, foreign, live_pid):
            d.mkdir()
        if via == "create":
            made.append(MemoryCgroup.create(f"test-new-{os.getpid()}", 64 * MiB))
        else:
            notes: list[str] = []
            registry.reap_stale(notes)
            assert any(str(stale) in n for n in notes), notes
        assert not stale.exists()
        assert foreign.is_dir() and live_pid.is_dir() and busy.path.is_dir()
        assert child.pid in busy.pids()
    finally:
        child.kill()
        child.wait()
        for g in made:
            g.remove()
        for d in (stale, foreign, live_pid):
            if d.exists():
                d.rmdir()


def test_evicting_a_tree_the_server_user_wrote_follows_no_link_and_opens_no_fifo(tmp_path):
    """The trees evicted (a data directory, a copy of one) are the server user's to write: a
    FIFO there must not hang the run as root, a symlink must not take it outside the tree."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"s" * 4096)
    tree = tmp_path / "data"
    (tree / "base").mkdir(parents=True)
    (tree / "base" / "rel").write_bytes(b"x" * 8192)
    os.mkfifo(tree / "base" / "fifo")
    (tree / "link-to-file").symlink_to(outside / "secret")
    (tree / "link-to-dir").symlink_to(outside)
    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(evict_page_cache([tree])),
                              daemon=True)
    worker.start()
    worker.join(timeout=60)  # a blocked open of the FIFO never returns: not a guessed delay
    assert done == [8192], "evict_page_cache blocked on a FIFO or counted a linked file"
    assert evict_page_cache([tree / "link-to-dir"]) == 0  # a linked top is not followed either
