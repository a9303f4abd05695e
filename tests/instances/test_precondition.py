"""Preallocated log files are written once before a golden copy (content unchanged)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest

from pmem_advisor.instances.precondition import materialize


def _unwritten(path: str) -> bool:
    out = subprocess.run(["filefrag", "-v", path], capture_output=True, text=True).stdout
    return "unwritten" in out


@pytest.mark.skipif(shutil.which("filefrag") is None, reason="filefrag (e2fsprogs) missing")
def test_unwritten_extents_become_written_and_content_stays():
    d = tempfile.mkdtemp(dir="/var/tmp")
    try:
        path = os.path.join(d, "ib_logfile0")
        with open(path, "wb") as f:
            f.write(b"header" * 100)
        fd = os.open(path, os.O_RDWR)
        try:
            os.posix_fallocate(fd, 0, 4 << 20)  # what InnoDB does for a new redo log
        finally:
            os.close(fd)
        before = open(path, "rb").read()
        if not _unwritten(path):
            pytest.skip("this filesystem has no unwritten extents (tmpfs?)")
        assert materialize(path) == 4 << 20
        assert not _unwritten(path)
        assert open(path, "rb").read() == before
    finally:
        shutil.rmtree(d, ignore_errors=True)
