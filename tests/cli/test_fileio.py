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


# --- issue 17 items 3 and 9: no planted name is followed, every rewrite keeps a backup ----------


def test_a_symlink_planted_at_the_old_predictable_temp_name_is_not_followed(tmp_path):
    """Failed before the fix: the temp file was `.NAME.PID.tmp`, opened without O_EXCL, so a
    link planted there made root overwrite its target (victim read 'new')."""
    import os

    from pmem_advisor.fileio import write_file_safely

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = tmp_path / "summary.json"
    (tmp_path / f".{target.name}.{os.getpid()}.tmp").symlink_to(victim)
    (tmp_path / f".{target.name}.tmp").symlink_to(victim)
    write_file_safely(target, "new\n")
    assert victim.read_text() == "precious\n"
    assert target.read_text() == "new\n" and not target.is_symlink()


def test_a_dangling_symlink_planted_at_the_backup_name_is_not_followed(tmp_path):
    """Failed before the fix: `.bak` was written with write_bytes() after a failed link, which
    followed a dangling link and created the file it pointed to."""
    from pmem_advisor.fileio import write_file_safely

    target = tmp_path / "report.md"
    target.write_text("old\n")
    elsewhere = tmp_path / "created-elsewhere"
    (tmp_path / "report.md.bak").symlink_to(elsewhere)
    kept = write_file_safely(target, "new\n")
    assert not elsewhere.exists()
    assert kept == tmp_path / "report.md.bak.1" and kept.read_text() == "old\n"


def test_a_symlinked_target_or_a_fifo_is_refused(tmp_path):
    import os

    from pmem_advisor.fileio import write_file_safely

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = tmp_path / "out.conf"
    link.symlink_to(victim)
    with pytest.raises(UsageError, match="symbolic link"):
        write_file_safely(link, "x")
    assert victim.read_text() == "precious\n"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UsageError, match="not a regular file"):
        write_file_safely(tmp_path / "fifo", "x")


def test_a_replaced_file_keeps_its_mode_and_a_new_one_gets_the_asked_mode(tmp_path):
    import stat

    from pmem_advisor.fileio import write_file_safely

    f = tmp_path / "secret.conf"
    write_file_safely(f, "a\n", mode=0o600)
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    f.chmod(0o640)
    write_file_safely(f, "b\n")
    assert stat.S_IMODE(f.stat().st_mode) == 0o640
    assert write_file_safely(f, "c\n", backup=False) is None
    assert not (tmp_path / "secret.conf.bak.1").exists()


@pytest.mark.parametrize("code", ["ENOSPC", "EROFS", "EACCES"])
def test_a_full_or_read_only_filesystem_is_an_environment_problem(tmp_path, monkeypatch, code):
    """Failed before the fix: every OSError became a UsageError (exit 2), and the CLI turned
    some into exit 70. Nothing of the old file is lost and no temp file is left."""
    import errno
    import os

    from pmem_advisor import fileio
    from pmem_advisor.errors import EXIT_ENVIRONMENT, EnvironmentProblem

    f = tmp_path / "postgresql.conf"
    f.write_text("old\n")
    real_replace = os.replace

    def failing(*a, **k):
        raise OSError(getattr(errno, code), os.strerror(getattr(errno, code)))

    monkeypatch.setattr(fileio.os, "replace", failing)
    with pytest.raises(EnvironmentProblem) as e:
        fileio.write_file_safely(f, "new\n")
    monkeypatch.setattr(fileio.os, "replace", real_replace)
    assert e.value.exit_code == EXIT_ENVIRONMENT and str(f) in str(e.value)
    assert f.read_text() == "old\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _writer_racing_rmtree(monkeypatch, directory, times):
    """A writer that lands a subdirectory with a file in ``directory`` after each of the
    first ``times`` subtree removals (a tool that was not stopped yet)."""
    from pmem_advisor import fileio

    real, calls = fileio.shutil.rmtree, []

    def rmtree(path, *args, **kwargs):
        real(path, *args, **kwargs)
        if len(calls) < times:
            calls.append(path)
            (directory / f"late{len(calls)}").mkdir()
            (directory / f"late{len(calls)}" / "f").write_text("x")

    monkeypatch.setattr(fileio.shutil, "rmtree", rmtree)


def _tree(directory):
    (directory / "base" / "1").mkdir(parents=True)
    (directory / "base" / "1" / "f").write_text("x")
    (directory / ".marker").write_text("id\n")


def test_an_entry_that_lands_while_a_directory_is_emptied_goes_too_marker_last(tmp_path,
                                                                                monkeypatch):
    """Emptying lists the directory again until a listing is clean: a file a dying writer
    landed after the first listing is not left behind, unmarked, to block the next run."""
    from pmem_advisor.fileio import remove_tree

    d = tmp_path / "data"
    _tree(d)
    _writer_racing_rmtree(monkeypatch, d, times=1)
    assert remove_tree(d, keep_dir=True, last=".marker") is None
    assert list(d.iterdir()) == []


def test_a_directory_still_written_into_keeps_its_marker(tmp_path, monkeypatch):
    """A writer that does not stop: what it keeps writing is reported, and the marker (the
    next reaper's permission to empty the directory) stays with it."""
    from pmem_advisor.fileio import remove_tree

    d = tmp_path / "data"
    _tree(d)
    _writer_racing_rmtree(monkeypatch, d, times=100)
    why = remove_tree(d, last=".marker")
    assert why and "could not be removed" in why and "late" in why
    assert (d / ".marker").read_text() == "id\n"
