"""`tune --out` and the SQLite study (issue 50): SQLite opens the study and its journals by
name, and the reports are written at fixed names, so a link, FIFO or hard link planted at one
of those names (by a managed server's user or any other user) is refused up front, in one
line with exit 3, before anything is measured; the link's target is untouched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.security.conftest import (
    NOBODY,
    as_root_only,
    chown_nobody,
    cli,
    fingerprint,
    one_line_refusal,
)

pytestmark = as_root_only()

TUNE = ("tune", "rocksdb", "--workload", "ycsb-a", "--trials", "2", "--duration", "1")


@pytest.fixture
def out(base) -> Path:
    d = base / "out"
    d.mkdir(mode=0o755)
    return d


@pytest.mark.parametrize("name", ["study.db", "study.db-journal", "report.md"])
def test_a_users_link_at_an_output_name_is_refused_before_anything_runs(out, root_only,
                                                                        name):
    before = fingerprint(root_only)
    (out / name).symlink_to(root_only / "probe.dat")
    chown_nobody(out / name)
    code, _, err, _ = cli(*TUNE, "--out", str(out))
    line = one_line_refusal(code, err, expected=(3,))
    assert f"refusing to use {out / name}: it is a symbolic link owned by uid" in line
    assert fingerprint(root_only) == before
    assert sorted(p.name for p in out.iterdir()) == [name]  # nothing written beside it


def test_a_hard_link_to_a_root_file_at_the_study_name_is_refused(out, root_only):
    """Root stands in for a kernel without fs.protected_hardlinks (nobody cannot make it)."""
    os.link(root_only / "probe.dat", out / "study.db")
    before = fingerprint(root_only)
    code, _, err, _ = cli(*TUNE, "--out", str(out))
    line = one_line_refusal(code, err, expected=(3,))
    assert "with 2 hard links" in line
    assert fingerprint(root_only) == before


def test_a_fifo_in_the_storage_directory_is_refused(base, out, root_only):
    where = base / "studies"
    where.mkdir(mode=0o755)
    os.mkfifo(where / "study.db-wal")
    chown_nobody(where / "study.db-wal")
    code, _, err, _ = cli(*TUNE, "--out", str(out), "--storage",
                          f"sqlite:///{where / 'study.db'}")
    line = one_line_refusal(code, err, expected=(3,))
    assert f"refusing to use {where / 'study.db-wal'}: it is a FIFO owned by uid" in line


def test_an_out_directory_others_may_write_is_refused(out):
    out.chmod(0o777)
    code, _, err, _ = cli(*TUNE, "--out", str(out))
    line = one_line_refusal(code, err, expected=(3,))
    assert "writable by group or others" in line
    assert list(out.iterdir()) == []


# -- the study database's directory and file (fileio.private_db_file) ------------------------
def _study_url(path: Path) -> str:
    return f"sqlite:///{path}"


def test_a_new_study_directory_is_roots_0700_and_the_study_0600(base):
    """What a server's user cannot even read: the directory the tool makes for a --storage
    study, the study file and the journal SQLite writes beside it (it takes the file's mode)."""
    import optuna

    from pmem_advisor.tuner.storage import open_storage

    where = base / "studies" / "a"
    storage = open_storage(_study_url(where / "study.db"))
    st = where.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o700)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=storage, study_name="s")
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    for p in where.iterdir():  # study.db (and any journal left) are root's, 0600
        assert (p.stat().st_uid, p.stat().st_mode & 0o777) == (0, 0o600), p
    storage.remove_session()


def test_an_existing_study_file_others_may_read_is_narrowed_to_0600(out):
    from pmem_advisor.tuner.storage import open_storage

    db = out / "study.db"
    db.write_bytes(b"")
    db.chmod(0o644)
    open_storage(_study_url(db)).remove_session()
    assert db.stat().st_mode & 0o777 == 0o600


def test_a_study_directory_another_user_owns_is_refused(user_dir, root_only):
    """nobody owns the directory (mode 0755: no one else may write it, yet its owner may plant
    a link at study.db-journal after any check, and SQLite as root would follow it)."""
    from pmem_advisor.fileio import UntrustedPath
    from pmem_advisor.tuner.storage import open_storage

    before = fingerprint(root_only)
    with pytest.raises(UntrustedPath) as e:
        open_storage(_study_url(user_dir / "study.db"))
    assert e.value.message.startswith(f"refusing to keep the study database in {user_dir}: "
                                      f"the directory is owned by uid {NOBODY.pw_uid}")
    assert list(user_dir.iterdir()) == []  # nothing created there
    assert fingerprint(root_only) == before


def test_a_study_directory_another_user_owns_is_one_line_exit_3_from_tune(user_dir, out):
    code, _, err, _ = cli(*TUNE, "--out", str(out), "--storage",
                          _study_url(user_dir / "study.db"))
    line = one_line_refusal(code, err, expected=(3,))
    assert f"refusing to keep the study database in {user_dir}" in line
    assert list(user_dir.iterdir()) == []


@pytest.mark.parametrize("plant", ["foreign file", "link"])
def test_a_planted_study_file_is_refused_and_its_target_untouched(base, root_only, plant):
    from pmem_advisor.fileio import PlantedFile
    from pmem_advisor.tuner.storage import open_storage

    where = base / "studies"
    where.mkdir(mode=0o700)
    db = where / "study.db"
    if plant == "link":
        db.symlink_to(root_only / "probe.dat")
    else:
        db.write_bytes(b"")
    chown_nobody(db)
    before = fingerprint(root_only)
    with pytest.raises(PlantedFile, match=f"refusing to use {db}: it is .* owned by uid"):
        open_storage(_study_url(db))
    assert fingerprint(root_only) == before
    assert db.lstat().st_uid != 0 and sorted(p.name for p in where.iterdir()) == ["study.db"]
