"""Full and read-only output filesystems, planted links, foreign-owned state, planted records:
each ends in the documented exit code with nothing the user had lost."""

from __future__ import annotations

import json
import os
import subprocess

import psutil
import pytest

from tests.probes.machine_builder import build
from tests.sandbox import other_uid

NOBODY = other_uid()  # tests/sandbox.py: the shared other user
# a file "another user wrote" is made by chown, which only root may do
as_root = pytest.mark.needs_root("only root can make a file another user owns")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return build("interleaved-2s-fsdax", tmp_path_factory.mktemp("tree") / "m")


def _fill(directory) -> None:
    """Fill a filesystem to the last byte."""
    for name, chunk in (("filler", 65536), ("filler2", 1)):
        fd = os.open(directory / name, os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * chunk)
        except OSError:
            pass
        finally:
            os.close(fd)


def test_a_full_out_filesystem_is_exit_3_and_keeps_the_old_file(base, tmpfs, tree):
    mnt = tmpfs("1m")
    out = mnt / "profile.json"
    out.write_text("my old profile\n")
    _fill(mnt)
    code, _, err = base.call("probe", "--root", str(tree), "--out", str(out))
    assert code == 3, err
    assert "No space left" in err and "Traceback" not in err
    assert out.read_text() == "my old profile\n"
    assert not [p for p in mnt.iterdir() if p.name.endswith(".tmp")]


def test_a_read_only_out_directory_is_exit_3(base, tmpfs, tree):
    mnt = tmpfs("1m")
    out = mnt / "profile.json"
    out.write_text("my old profile\n")
    subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
    code, _, err = base.call("probe", "--root", str(tree), "--out", str(out))
    assert code == 3, err
    assert "Read-only" in err and "Traceback" not in err
    assert out.read_text() == "my old profile\n"


def test_links_planted_at_predictable_names_are_not_followed(base, tree, tmp_path):
    """Item 3: links at the next pids' `.NAME.PID.tmp` and at `.part` in a shared directory."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    last = int(open("/proc/sys/kernel/ns_last_pid").read())
    for name in ("profile.json", "snap.tar.gz"):
        for pid in range(last, last + 300):
            os.symlink(victim, shared / f".{name}.{pid}.tmp")
        os.symlink(victim, shared / f"{name}.part")
        os.symlink(victim, shared / f".{name}.tmp")
    for _ in range(2):  # the second run replaces: a .bak of the first
        code, _, err = base.call("probe", "--root", str(tree), "--out",
                                 str(shared / "profile.json"), "--save",
                                 str(shared / "snap.tar.gz"))
        assert code == 0, err
    assert victim.read_text() == "precious\n"
    for kept in shared.glob("*.bak*"):
        assert kept.is_file() and not kept.is_symlink()
    assert json.loads((shared / "profile.json").read_text())["source"]
    assert not (shared / "profile.json").is_symlink()


@as_root
def test_a_foreign_owned_state_or_work_dir_is_refused(base):
    base.state.mkdir()
    os.chown(base.state, NOBODY, -1)
    code, _, err = base.call("instances", "list")
    assert code == 3 and str(base.state) in err and "rm -rf" in err, err
    code, _, err = base.call("instances", "reap")
    assert code == 3, err
    os.chown(base.state, 0, -1)
    base.run.mkdir()
    os.chown(base.run, NOBODY, -1)
    code, _, err = base.call("workload", "run", "postgres", "-w", "pgbench-tpcb",
                             "--scale", "1", "--duration", "1", "--warmup", "0")
    assert code == 3 and str(base.run) in err and "owned by" in err, err
    os.chown(base.run, 0, -1)
    base.assert_clean()


@as_root
def test_a_planted_reaper_record_deletes_and_kills_nothing(base, tmp_path):
    """Item 2 through the CLI: a record another user wrote (not ours) and one of ours naming
    paths without our marker are both harmless; a foreign file does not break the reaper."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "data").write_text("x")
    sleeper = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        base.state.mkdir(mode=0o700)
        dead = subprocess.Popen(["true"])
        dead.wait()
        rec = {"id": "po15-planted0001", "engine": "postgres", "flavour": "postgresql",
               "version": "15", "bindir": "/usr/bin", "workdir": str(victim),
               "data_dir": str(victim), "wal_dir": None, "socket_dir": str(victim),
               "owner_pid": dead.pid, "server_pid": sleeper.pid, "remove": [str(victim)],
               "empty": ["/etc"]}
        planted = base.state / "po15-planted0001.json"
        planted.write_text(json.dumps(rec))
        os.chown(planted, NOBODY, -1)
        ours = base.state / "po15-planted0002.json"
        ours.write_text(json.dumps({**rec, "id": "po15-planted0002"}))
        os.chmod(ours, 0o600)
        (base.state / "junk.json").write_text("[]")
        code, _, err = base.call("instances", "reap")
        assert code == 0, err
        assert (victim / "data").exists() and os.path.exists("/etc/passwd")
        assert sleeper.poll() is None and psutil.pid_exists(sleeper.pid)
        assert "ignored" in err and "left alone" in err
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_study_on_a_read_only_or_full_filesystem_is_an_environment_problem(tmpfs):
    """Item 10: `--resume` on a read-only --out said StorageInternalError (exit 70)."""
    from pmem_advisor.errors import EXIT_ENVIRONMENT, AdvisorError
    from pmem_advisor.tuner.storage import open_storage

    mnt = tmpfs("1m")
    subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
    for url in (f"sqlite:///{mnt}/study.db", f"sqlite:///{mnt}/sub/study.db"):
        with pytest.raises(AdvisorError) as e:
            open_storage(url)
        assert e.value.exit_code == EXIT_ENVIRONMENT, e.value
    full = tmpfs("1m")
    _fill(full)
    with pytest.raises(AdvisorError) as e:
        open_storage(f"sqlite:///{full}/study.db")
    assert e.value.exit_code == EXIT_ENVIRONMENT, e.value
