"""User-facing files are never lost: the old content is kept as .bak before a rewrite."""

from __future__ import annotations

import pytest

from pmem_advisor.errors import UsageError
from pmem_advisor.fileio import write_keeping_backup


def test_rewrite_keeps_the_old_content_and_same_content_makes_no_backup(tmp_path):
    f = tmp_path / "postgresql.conf"
    assert write_keeping_backup(f, "a = 1\n") is None
    assert write_keeping_backup(f, "a = 1\n") is None  # unchanged: nothing to keep
    b1 = write_keeping_backup(f, "a = 2\n")
    b2 = write_keeping_backup(f, "a = 3\n")
    assert b1.name == "postgresql.conf.bak" and b1.read_text() == "a = 1\n"
    assert b2.name == "postgresql.conf.bak.1" and b2.read_text() == "a = 2\n"
    assert f.read_text() == "a = 3\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_unwritable_target_is_a_one_line_usage_error(tmp_path):
    with pytest.raises(UsageError, match="directory"):
        write_keeping_backup(tmp_path, "x")
    with pytest.raises(UsageError, match="cannot write"):
        write_keeping_backup(tmp_path / "no" / "such" / "dir" / "f", "x")


def test_recommend_out_keeps_the_users_file(run_cli, tmp_path):
    import json

    from tests.rules.machines import make_profile  # a small profile of an SSD host

    profile = tmp_path / "p.json"
    profile.write_text(json.dumps(make_profile("ssd")))
    out = tmp_path / "postgresql.conf"
    out.write_text("# my own settings\nshared_buffers = 1GB\n")
    code, _, err = run_cli("recommend", "postgres", "--profile", str(profile), "--version", "16",
                           "--data-dir", "/srv/db", "--out", str(out))
    assert code == 0, err
    assert (tmp_path / "postgresql.conf.bak").read_text().startswith("# my own settings")
    assert "shared_buffers" in out.read_text() and "kept the previous" in err
