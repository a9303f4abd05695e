"""Golden copies of the embedded engines against a hostile server user (issue 50).

RocksDB's golden database is loaded by db_bench running as the server's user, so that user
owns the golden tree and every trial's copy: it can plant a symbolic link or a hard link to a
root file there between root's steps (after the load, after the copy, during the run before
root deletes the trial). DuckDB's golden file is written by root's child in root's 0700
scratch; a name planted at it (standing in for a future loader running as another user) is
refused too. After every attack root's canary keeps owner, mode, content and link count.

The server's user is the other user of tests/sandbox.py (``nobody``). With
``fs.protected_hardlinks = 1`` (the default) that user cannot hard-link a root file it cannot
write, so the hard link is made by root in the user's tree, standing in for a kernel without
that protection: what is tested is that root never chowns, copies or writes through a file
with a second name."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from pmem_advisor.fileio import PlantedFile, copy_file_fd
from pmem_advisor.instances import privileges
from tests.instances.conftest import CANARY_TEXT

pytestmark = [pytest.mark.server,
              pytest.mark.needs_root("the evaluator runs as root, another user "
                                                "attacks")]





@pytest.fixture
def data_dir():
    d = Path(tempfile.mkdtemp(prefix="pmem-advisor-golden-", dir="/var/tmp"))
    d.chmod(0o711)  # the server's user must reach its scratch below
    yield d
    shutil.rmtree(d)


def state(p: Path) -> tuple[int, int, int, int, bytes]:
    """Owner, group, mode, link count and content: what root must never change."""
    st = p.lstat()
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), st.st_nlink, p.read_bytes()


def run_as(user, code: str, *args: str) -> str:
    r = user.run([user.python, "-c", code, *args])
    assert r.returncode == 0, r.stderr
    return r.stdout


PLANT_LINKS = """
import os, sys
canary, prefix, tree = sys.argv[1:4]
for name in ("evil-link", "LOG.old.1", "IDENTITY2"):
    os.symlink(canary, os.path.join(tree, prefix + name))
"""


def _rocksdb(data_dir: Path):
    if shutil.which("db_bench") is None:
        pytest.skip("db_bench missing (apt-get install rocksdb-tools)")
    from pmem_advisor.engines.api import EvalRequest
    from pmem_advisor.engines.registry import get_engine

    eng = get_engine("rocksdb")
    return eng.evaluator(EvalRequest(
        eng.find_binary(), eng.workload("ycsb-a"), scale=1, clients=1, duration=0.3,
        warmup=0.0, data_dir=data_dir, wal_dir=None, workdir=data_dir, catalog=eng.catalog()))


def _trial():
    from pmem_advisor.tuner.evaluator import TrialConfig

    return TrialConfig(params={})


def test_rocksdb_links_planted_in_the_golden_and_trial_trees_never_reach_roots_file(
        as_server_user, canary, data_dir, monkeypatch):
    """Symbolic links planted by the server's user in the golden tree (after the load) and in
    the trial's copy (during its run, before root deletes it): copied as links, never
    followed, chowned or written through; the trials still measure; the canary is intact."""
    from pmem_advisor.engines.rocksdb import bench

    user = as_server_user
    before = state(canary)
    ev = _rocksdb(data_dir)
    real_run = bench.RocksDBEvaluator._run
    planted_in_trial = []

    def run_then_plant(self, db, flags, seconds):
        # the server's user owns the trial now: it plants links root will meet when deleting
        # no copy ever holds root's bytes (a copy following the golden's links would)
        for p in db.iterdir():
            assert p.is_symlink() or p.read_bytes() != CANARY_TEXT, p
        if not planted_in_trial:
            run_as(user, PLANT_LINKS, str(canary), "trial-", str(db))
            planted_in_trial.append(db)
        return real_run(self, db, flags, seconds)

    monkeypatch.setattr(bench.RocksDBEvaluator, "_run", run_then_plant)
    with ev:
        ev._load()
        assert ev.golden.stat().st_uid == user.pw.pw_uid  # the server's user owns the golden
        run_as(user, PLANT_LINKS, str(canary), "", str(ev.golden))
        for _ in range(2):
            m = ev.evaluate(_trial())
            assert m.ok, m.failure
        assert planted_in_trial and not planted_in_trial[0].exists()  # deleted, link and all
        assert (ev.golden / "evil-link").is_symlink()
    assert state(canary) == before
    assert not any(data_dir.iterdir())


def test_rocksdb_a_hard_link_to_a_root_file_in_the_golden_tree_is_refused_never_chowned(
        as_server_user, canary, data_dir):
    """A second name of root's file in the server-owned golden tree: the trial's copy refuses
    it (PlantedFile, one line, exit 3) before anything is copied or chowned through it."""
    ev = _rocksdb(data_dir)
    with ev:
        ev._load()
        os.link(canary, ev.golden / "000099.sst")  # root stands in for the unprotected kernel
        before = state(canary)
        assert before[3] == 2
        with pytest.raises(PlantedFile) as got:
            ev.evaluate(_trial())
        msg = got.value.message
        assert f"{ev.golden / '000099.sst'}: it is a regular file with 2 hard links owned by " \
               "uid 0" in msg and "\n" not in msg
        assert got.value.exit_code == 3
        assert state(canary) == before  # still root's, 0600, same bytes, no third name
        assert [p.name for p in ev.scratch.iterdir() if p.name.startswith("trial-")] == []
    assert state(canary)[3] == 1  # the scratch (and the planted name) removed by unlink only


def test_rocksdb_a_hard_link_planted_in_a_trial_is_never_chowned(as_server_user, canary,
                                                                   data_dir):
    """Root's hand-over of a trial tree (chown_tree) meets a file with a second name: refused,
    the root file keeps its owner (the chown that would have given it away never runs)."""
    trial = data_dir / "trial"
    trial.mkdir(mode=0o700)
    (trial / "CURRENT").write_text("MANIFEST-000001\n")
    os.link(canary, trial / "OPTIONS-000007")
    before = state(canary)
    with pytest.raises(PlantedFile):
        privileges.chown_tree(trial, privileges.server_user())
    assert state(canary) == before


def _duckdb(data_dir: Path):
    pytest.importorskip("duckdb", reason="PyPI duckdb is not installed (extra: duckdb)")
    from pmem_advisor.engines.api import EvalRequest
    from pmem_advisor.engines.registry import get_engine

    duck = get_engine("duckdb")
    return duck.evaluator(EvalRequest(
        duck.find_binary(), duck.workload("olap-tpch-lite"), scale=1, clients=1, duration=0.2,
        warmup=0.0, data_dir=data_dir, wal_dir=None, workdir=data_dir, catalog=duck.catalog()))


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_duckdb_a_link_at_the_golden_file_is_refused_and_roots_file_untouched(
        as_server_user, canary, data_dir, kind):
    """The golden file is root's, in root's 0700 scratch (the server's user cannot plant
    there: shown); a link put at its name anyway is refused by the descriptor copy."""
    user = as_server_user
    ev = _duckdb(data_dir)
    with ev:
        m = ev.evaluate(_trial())
        assert m.ok, m.failure
        golden = next(iter(ev.goldens.values()))
        st = ev.scratch.stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o700)
        out = run_as(user, """
import os, sys
try:
    os.symlink(sys.argv[1], sys.argv[2] + ".evil")
    print("planted")
except PermissionError:
    print("refused")
""", str(canary), str(golden))
        assert out.strip() == "refused"
        golden.unlink()
        if kind == "symlink":
            golden.symlink_to(canary)
        else:
            os.link(canary, golden)
        before = state(canary)
        with pytest.raises(PlantedFile) as got:
            ev.evaluate(_trial())
        assert f"refusing to use {golden}: it is a " in got.value.message
        assert state(canary) == before
    assert state(canary)[3] == 1
    assert not any(data_dir.iterdir())


def test_copy_file_fd_refuses_a_fifo_and_copies_a_plain_file(tmp_path):
    """The descriptor copy itself: a FIFO is refused without blocking, a plain file copied
    with its mode; an existing destination name is never written through."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(PlantedFile):
        copy_file_fd(fifo, tmp_path / "x")
    src = tmp_path / "src"
    src.write_bytes(b"data" * 1000)
    src.chmod(0o640)
    assert copy_file_fd(src, tmp_path / "dst") == 4000
    assert (tmp_path / "dst").read_bytes() == src.read_bytes()
    assert stat.S_IMODE((tmp_path / "dst").stat().st_mode) == 0o640
    (tmp_path / "taken").symlink_to(src)
    with pytest.raises(FileExistsError):
        copy_file_fd(src, tmp_path / "taken")
