"""A uid per managed instance (issue 50): as root, each instance runs as a pool user
``pmemadv-N`` of its own, so one compromised server cannot read or write another instance's
data; the lease goes back to the pool when the instance is destroyed. A pinned server user
(PMEM_ADVISOR_SERVER_USER) and non-root runs keep the single user as before."""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess

import pytest

from pmem_advisor.instances import create_instance, privileges
from tests.instances.conftest import find_server

pytestmark = [pytest.mark.server,
              pytest.mark.needs_root("uids of their own")]

PYTHON = "/usr/bin/python3"

TRY_REACH = r"""
import os, sys
home, data = sys.argv[1:3]
got = []
for what, act in (("list home", lambda: os.listdir(home)),
                  ("list data", lambda: os.listdir(data)),
                  ("read PG_VERSION", lambda: open(os.path.join(data, "PG_VERSION")).read()),
                  ("create in home", lambda: open(os.path.join(home, "evil"), "x").close())):
    try:
        act()
        got.append(what + ": done")
    except PermissionError:
        got.append(what + ": refused")
print("\n".join(got))
"""


def as_uid(user: privileges.RunAs, *args: str) -> str:
    r = subprocess.run([PYTHON, "-c", *args], capture_output=True, text=True, cwd="/",
                       user=user.uid, group=user.gid, extra_groups=[], timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture
def pooled(monkeypatch):
    monkeypatch.setattr(privileges, "SERVER_USER", privileges.DEFAULT_SERVER_USER)
    if not os.path.exists(PYTHON):
        pytest.skip(f"{PYTHON} missing: nothing to run as a pool user")


def test_instance_a_cannot_read_or_write_instance_bs_data(pooled):
    server = find_server("pg-debian")
    with create_instance(server) as a, create_instance(server) as b:
        assert a.user.uid != b.user.uid
        assert a.user.name.startswith("pmemadv-") and b.user.name.startswith("pmemadv-")
        b.initialize()
        for inst in (a, b):
            st = inst.home.stat()
            assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (inst.user.uid, 0o700)
        assert (b.data_dir / "PG_VERSION").stat().st_uid == b.user.uid
        assert as_uid(a.user, TRY_REACH, str(b.home), str(b.data_dir)).split("\n")[:4] == [
            "list home: refused", "list data: refused", "read PG_VERSION: refused",
            "create in home: refused"]
        # B's own uid does reach it (the refusal above is the uid's, not the path's)
        assert "list data: done" in as_uid(b.user, TRY_REACH, str(b.home), str(b.data_dir))
        b.start("")
        assert b.is_running()
        b.stop()
        leased = a.user
    # destroyed: the lease is free again (this process holds no lock on it any more)
    assert leased.uid not in privileges._leases
    lock = privileges.CACHE_ROOT / "uid-leases" / f"{leased.name}.lock"
    fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if still leased
    finally:
        os.close(fd)


def test_a_uid_a_process_still_runs_as_is_not_leased(pooled):
    """An orphaned server of a killed run keeps its uid out of the pool until it is reaped."""
    first = privileges.lease_server_user()
    sleeper = subprocess.Popen(["sleep", "60"], user=first.uid, group=first.gid,
                               extra_groups=[])
    try:
        privileges.release_server_user(first)
        second = privileges.lease_server_user()
        try:
            assert second.uid != first.uid
        finally:
            privileges.release_server_user(second)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_uid_whose_kept_tree_is_still_there_is_not_leased_again(pooled):
    """A refused instance keeps its tree for inspection (a FIFO its server's uid planted where
    root writes the include): the uid that owns the tree goes back to no one while the record
    stays, so the next instance runs as another uid and cannot reach the kept tree; once the
    reaper removed the tree (and the record) the uid is free again."""
    from pmem_advisor.fileio import PlantedFile
    from pmem_advisor.instances import registry

    server = find_server("pg-debian")
    inst = create_instance(server)
    try:
        inst.initialize()
        kept = inst.user
        include = inst.data_dir / "pmem-advisor.conf"
        as_uid(kept, "import os, sys\ntry: os.unlink(sys.argv[1])\nexcept OSError: pass\n"
               "os.mkfifo(sys.argv[1])", str(include))
        with pytest.raises(PlantedFile):
            inst.start("shared_buffers = '32MB'\n")
    finally:
        inst.destroy()
    rec = next(r for r in registry.load_all() if r.id == inst.id)
    try:
        assert rec.kept and (inst.data_dir / "PG_VERSION").is_file()  # kept for inspection
        assert kept.uid not in privileges._leases  # its lease was given back, yet
        assert kept.uid in privileges.uids_with_trees()
        with create_instance(server) as nxt:
            assert nxt.user.uid != kept.uid
            assert as_uid(nxt.user, TRY_REACH, str(inst.home), str(inst.data_dir)).split(
                "\n")[:4] == ["list home: refused", "list data: refused",
                              "read PG_VERSION: refused", "create in home: refused"]
    finally:
        assert registry.reap(rec) == []
    assert not inst.home.exists()
    assert kept.uid not in privileges.uids_with_trees()


def test_a_uid_a_scratch_record_names_is_not_leased_until_the_scratch_is_gone(pooled,
                                                                               tmp_path):
    """A RocksDB study's scratch (golden and trial trees handed to its uid) left by a killed
    run: its record names the uid, which stays out of the pool until the scratch is removed."""
    from pmem_advisor.instances import registry

    first = privileges.lease_server_user()
    scratch = registry.RunScratch(tmp_path, "a study's scratch", server_uid=first.uid)
    try:
        privileges.release_server_user(first)  # the lease alone would free it now
        second = privileges.lease_server_user()
        privileges.release_server_user(second)
        assert second.uid != first.uid
    finally:
        scratch.close()
    assert first.uid not in privileges.uids_with_trees()


def test_a_pinned_server_user_is_shared_as_before(other_user, monkeypatch):
    monkeypatch.setattr(privileges, "SERVER_USER", other_user.pw.pw_name)
    assert not privileges.pooled()
    user = privileges.lease_server_user()
    assert user.uid == other_user.pw.pw_uid == privileges.lease_server_user().uid
    privileges.release_server_user(user)


def test_a_snapshot_is_roots_and_restores_to_another_instances_own_uid(pooled, tmp_path):
    """The golden copy is taken by one instance's uid and put back into another's: the
    snapshot itself belongs to no server uid (root, 0700), the restored data to the
    restoring instance's uid only."""
    server = find_server("pg-debian")
    shared = tmp_path / "golden"
    with create_instance(server, golden_dir=shared) as a:
        a.initialize()
        a.snapshot("golden")
        snap = a.golden_dir / f"{a.golden_key}-golden"
        owners = {p.lstat().st_uid for p in [snap, *snap.rglob("*")]}
        assert owners == {0}
        with create_instance(server, golden_dir=shared) as b:
            assert b.user.uid != a.user.uid
            b.restore("golden")
            from pmem_advisor.instances.registry import MARKER

            assert {p.lstat().st_uid for p in b.data_dir.rglob("*")
                    if p.name != MARKER} == {b.user.uid}  # the marker is root's own
            b.start("")
            assert b.query("SELECT 1") == [(1,)]


@pytest.mark.parametrize("value", ["abc", "0", "-3", "100000"])
def test_a_bad_pool_size_is_a_one_line_usage_error(monkeypatch, value):
    from pmem_advisor.errors import UsageError
    from pmem_advisor.instances.privileges import uid_pool_size

    monkeypatch.setenv("PMEM_ADVISOR_UID_POOL", value)
    with pytest.raises(UsageError, match="PMEM_ADVISOR_UID_POOL") as e:
        uid_pool_size()
    assert e.value.exit_code == 2 and "\n" not in e.value.message
    monkeypatch.setenv("PMEM_ADVISOR_UID_POOL", "8")
    assert uid_pool_size() == 8
