"""`tune --out` and the SQLite study (issue 50): SQLite opens the study and its journals by
name, and the reports are written at fixed names, so a link, FIFO or hard link planted at one
of those names (by a managed server's user or any other user) is refused up front, in one
line with exit 3, before anything is measured; the link's target is untouched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.security.conftest import as_root_only, chown_nobody, cli, fingerprint, one_line_refusal

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
