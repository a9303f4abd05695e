"""A data directory on a filesystem that fills up: a clear error and a clean exit."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from pmem_advisor.errors import ServerError
from pmem_advisor.instances import create_instance
from tests.instances.conftest import find_server

pytestmark = pytest.mark.server


@pytest.fixture
def tiny_fs():
    """An 8 MB tmpfs (needs the right to mount; skipped otherwise)."""
    if not shutil.which("mount"):
        pytest.skip("no mount command")
    d = Path(tempfile.mkdtemp(prefix="pmem-advisor-tinyfs-", dir="/var/tmp"))
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0755", "tmpfs", str(d)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        d.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    yield d
    subprocess.run(["umount", str(d)], check=True)
    d.rmdir()


@pytest.mark.parametrize("server", ["pg-debian", "mariadb"])
def test_full_filesystem_fails_clearly_and_cleans_up(server, tiny_fs):
    binary = find_server(server)
    with create_instance(binary, data_dir=tiny_fs / "data") as inst:
        with pytest.raises(ServerError) as err:
            inst.initialize()
            inst.start()  # MariaDB may get through init and only fail to create its redo log
        assert "a filesystem is full" in str(err.value)
        assert str(tiny_fs / "data") in str(err.value)
        assert not inst.is_running()
    assert list(tiny_fs.iterdir()) == []
