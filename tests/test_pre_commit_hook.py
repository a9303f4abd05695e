"""The pre-commit hook (.pre-commit-hooks.yaml, issue 55), installed by the real `pre-commit`
from this checkout's HEAD into a temporary repository: a commit of a config that loses data
is blocked, a good one goes through."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PRE_COMMIT = Path(sys.executable).with_name("pre-commit")

pytestmark = pytest.mark.slow  # pre-commit builds the hook's environment: about 45 s


def _git(cwd: Path, *args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=600)


def test_the_hook_blocks_a_bad_config_and_lets_a_good_one_through(tmp_path):
    if not PRE_COMMIT.exists():
        pytest.skip("pre-commit is not installed (pip install -e '.[dev]')")
    head = _git(REPO, "rev-parse", "HEAD")
    if head.returncode != 0 or not shutil.which("git"):
        pytest.skip(f"not a git checkout: {head.stderr.strip()}")
    if _git(REPO, "cat-file", "-e", "HEAD:.pre-commit-hooks.yaml").returncode != 0:
        pytest.skip("HEAD has no .pre-commit-hooks.yaml yet (commit it first)")
    work = tmp_path / "configs"
    work.mkdir()
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pc-home"),
           "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig"),
           "PATH": f"{PRE_COMMIT.parent}:{os.environ.get('PATH', '')}"}
    (tmp_path / "gitconfig").write_text(
        f"[user]\n\tname = t\n\temail = t@example.org\n[safe]\n\tdirectory = {REPO}\n"
        f"\tdirectory = {REPO}/.git\n")
    assert _git(work, "init", "-q", env=env).returncode == 0
    (work / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {REPO}\n  rev: {head.stdout.strip()}\n  hooks:\n"
        "  - id: pmem-advisor-check\n    args: [--db, mariadb, --version, '10.11']\n")
    r = subprocess.run([str(PRE_COMMIT), "install"], cwd=work, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (work / "good.cnf").write_text("[mysqld]\ninnodb_buffer_pool_size = 256M\n")
    _git(work, "add", ".pre-commit-config.yaml", "good.cnf", env=env)
    r = _git(work, "commit", "-q", "-m", "good", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    (work / "bad.cnf").write_text("[mysqld]\ninnodb_flush_log_at_trx_commit = 2\n")
    _git(work, "add", "bad.cnf", env=env)
    r = _git(work, "commit", "-q", "-m", "bad", env=env)
    assert r.returncode != 0
    assert "CK001" in r.stdout + r.stderr and "bad.cnf:2" in r.stdout + r.stderr
    assert "bad" not in _git(work, "log", "--format=%s", env=env).stdout.split()
