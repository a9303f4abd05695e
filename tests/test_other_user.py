"""The shared ``other_user`` fixture works from a checkout in a private directory: what it
runs is staged where the other user can read it (issue 56: a clone in /root or mktemp -d)."""

from __future__ import annotations

import tempfile
from pathlib import Path


def test_runs_a_package_from_a_private_directory_as_the_other_user(other_user):
    private = Path(tempfile.mkdtemp(prefix="private-checkout-"))  # mode 700, like /root
    try:
        assert private.stat().st_mode & 0o777 == 0o700
        pkg = private / "tinypkg"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("import os\nUID = os.getuid()\n")
        (pkg / "__main__.py").write_text("from tinypkg import UID\nprint('uid', UID)\n")
        direct = other_user.run([other_user.python, "-c", "import tinypkg"],
                                pythonpath=(private,))
        assert direct.returncode != 0  # the case: the other user cannot reach the checkout
        staged = other_user.stage(pkg)
        r = other_user.run([other_user.python, "-m", "tinypkg"], pythonpath=(staged,))
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["uid", str(other_user.pw.pw_uid)]
        assert other_user.pw.pw_uid != 0
    finally:
        import shutil

        shutil.rmtree(private, ignore_errors=True)


def test_the_project_cli_runs_as_the_other_user(other_user, cli_as_other_user):
    r = cli_as_other_user("-c", "import os, pmem_advisor; print(os.getuid())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(other_user.pw.pw_uid)
