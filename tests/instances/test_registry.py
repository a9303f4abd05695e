"""The registry: a run that dies leaves nothing behind for long. SIGTERM/Ctrl-C of the owner
clean up at once; a SIGKILLed owner's server is stopped by the next run's reaper."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from pmem_advisor.errors import UsageError
from pmem_advisor.instances import create_instance, registry
from pmem_advisor.instances.base import MARKER
from tests.instances.conftest import find_server

pytestmark = pytest.mark.server

OWNER = """
import json, sys, time
from pmem_advisor.instances import create_instance, pick_server
inst = create_instance(pick_server("postgres", version=sys.argv[1]), wal_dir=sys.argv[2])
inst.initialize()
inst.start("")
print(json.dumps({"id": inst.id, "pid": inst.pid, "home": str(inst.home)}), flush=True)
time.sleep(120)
"""


def _start_owner(version: str, wal_dir: Path) -> tuple[subprocess.Popen, dict]:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, version, str(wal_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    line = owner.stdout.readline()
    if not line:
        owner.wait()
        pytest.fail(f"owner process failed: {owner.stderr.read()[-2000:]}")
    return owner, json.loads(line)


def _gone(pid: int, timeout: float = 20) -> bool:
    try:
        psutil.Process(pid).wait(timeout)
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return False
    return True


@pytest.fixture(scope="module")
def pg_version():
    return find_server("pg-debian").version


def test_reaper_stops_the_server_of_a_dead_owner(pg_version, shm_dir):
    wal = shm_dir / "reaped-wal"
    owner, info = _start_owner(pg_version, wal)
    owner.kill()  # SIGKILL: no handler runs, the server (own session) keeps running
    owner.wait()
    owner.stdout.close(), owner.stderr.close()
    assert psutil.pid_exists(info["pid"])
    stale = [r.id for r in registry.load_all() if not registry.owner_alive(r)]
    assert info["id"] in stale
    reaped = registry.reap_stale()
    assert info["id"] in [r.id for r in reaped]
    assert _gone(info["pid"])
    assert not Path(info["home"]).exists() and not wal.exists()
    assert info["id"] not in [r.id for r in registry.load_all()]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_owner_cleans_up_on_signal(pg_version, shm_dir, sig):
    wal = shm_dir / f"sig-{sig.name}-wal"
    owner, info = _start_owner(pg_version, wal)
    owner.send_signal(sig)
    _, err = owner.communicate(timeout=60)
    assert owner.returncode != 0
    assert _gone(info["pid"]), err
    assert not Path(info["home"]).exists() and not wal.exists()
    assert info["id"] not in [r.id for r in registry.load_all()]


def test_reaper_leaves_live_owners_alone(pg_version):
    with create_instance(find_server("pg-debian")) as inst:
        inst.initialize()
        inst.start()
        assert inst.id not in [r.id for r in registry.reap_stale()]
        assert inst.is_running() and inst.query("SELECT 1") == [(1,)]
    assert inst.id not in [r.id for r in registry.load_all()]
    assert not inst.home.exists()


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_left_over_managed_data_dir_is_taken_over(pg_version, shm_dir):
    """A --data-dir named by the record of a dead run and still carrying that record's marker
    is emptied and reused; the directory itself is the user's and is kept."""
    data = shm_dir / "reused-data"
    data.mkdir()
    (data / MARKER).write_text("po15-0123456789\n")
    (data / "PG_VERSION").write_text("15\n")
    rec = registry.new_record(
        id="po15-0123456789", engine="postgres", flavour="postgresql", version="15",
        bindir="/usr/lib/postgresql/15/bin", workdir=str(shm_dir / "gone"),
        data_dir=str(data), wal_dir=None, socket_dir=str(shm_dir / "gone"), empty=[str(data)],
        owner_pid=_dead_pid())
    registry.save(rec)
    with create_instance(find_server("pg-debian"), data_dir=data) as inst:
        inst.initialize()
        inst.start()
        assert inst.settings()["data_directory"] == str(data)
    assert data.is_dir() and not any(data.iterdir())
    assert rec.id not in [r.id for r in registry.load_all()]
    data.rmdir()


def test_a_stale_marker_next_to_the_users_files_is_not_wiped_or_chowned(pg_version, shm_dir):
    """Issue 17 item 4. Failed before the fix: the marker alone made `--data-dir DIR` empty the
    directory (the user's files were gone) and hand it to the server user."""
    data = shm_dir / "users-data"
    data.mkdir()
    (data / MARKER).write_text("po15-0123456789\n")
    (data / "thesis.tex").write_text("years of work\n")
    owner = data.stat().st_uid
    with pytest.raises(UsageError, match="not empty") as e:
        create_instance(find_server("pg-debian"), data_dir=data)
    assert "no record" in str(e.value)
    assert (data / "thesis.tex").read_text() == "years of work\n"
    assert data.stat().st_uid == owner


def test_a_newline_in_a_data_dir_is_refused(pg_version, shm_dir):
    """Issue 17 item 11 (config injection): a newline in --data-dir would add option lines to
    the generated my.cnf (and postgresql's --waldir); refused before anything is made."""
    with pytest.raises(UsageError, match="control character"):
        create_instance(find_server("pg-debian"), data_dir=shm_dir / "x\ninnodb_x=1")
    assert not [p for p in shm_dir.iterdir() if p.name.startswith("x")]


def test_cli_lists_and_reaps(run_cli, pg_version):
    with create_instance(find_server("pg-debian")) as inst:
        code, out, _ = run_cli("instances", "list", "--json")
        assert code == 0
        rows = {r["id"]: r for r in json.loads(out)["instances"]}
        assert rows[inst.id]["state"] == "live" and rows[inst.id]["owner_pid"] == os.getpid()
        code, out, _ = run_cli("instances", "reap", "--json")
        assert code == 0 and inst.id not in json.loads(out)["reaped"]
        code, out, err = run_cli("instances", "list")
        assert code == 0 and inst.id in out
    code, out, _ = run_cli("instances", "list", "--json")
    assert inst.id not in out


def test_an_evaluators_scratch_outlives_a_sigkill_only_until_the_next_reaper(tmp_path):
    """DuckDB/RocksDB evaluators keep golden and trial copies in a RunScratch: removed on
    close, and after a SIGKILL of their process by the next run's reaper."""
    code = ("import sys, time\n"
            "from pmem_advisor.instances.registry import RunScratch\n"
            f"s = RunScratch({str(tmp_path)!r}, 'test scratch')\n"
            "(s.path / 'golden.db').write_text('x')\n"
            "print(s.path, flush=True)\n"
            "time.sleep(600)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        path = Path(p.stdout.readline().strip())
        assert (path / "golden.db").is_file()
    finally:
        p.kill()
        p.wait()
    assert path.exists()  # SIGKILL: nothing ran to remove it
    registry.reap_stale()
    assert not path.exists()
    s = registry.RunScratch(tmp_path, "test scratch")
    s.close()
    s.close()
    assert not s.path.exists()


def test_signals_held_while_a_child_starts_are_acted_on_after_by_their_handlers():
    """``deferred_signals``: a signal that arrives in the block runs its handler only after
    the block (where the starter owns its child), each handler back in place; an ignored
    signal stays ignored."""
    got: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: got.append(signum))
    try:
        with registry.deferred_signals((signal.SIGUSR1, signal.SIGUSR2)):
            os.kill(os.getpid(), signal.SIGUSR1)
            os.kill(os.getpid(), signal.SIGUSR1)
            assert got == []
        assert got == [signal.SIGUSR1]  # once: a signal is pending once, as without the hold
        assert signal.getsignal(signal.SIGUSR2) is signal.SIG_DFL  # put back, unraised
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        with registry.deferred_signals((signal.SIGUSR1,)):
            assert signal.getsignal(signal.SIGUSR1) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGUSR1, previous)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with registry.deferred_signals():
                signal.raise_signal(signal.SIGINT)
                finished = True  # the Ctrl-C did not cut the block short
        assert finished and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
