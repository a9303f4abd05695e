"""The C kernel builds from source with and without libpmem, and the msync-only build works."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sysconfig

import pytest

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "probes", "native", "pmembw.c")


def _compile(out: str, with_libpmem: bool) -> None:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    cmd = [cc, "-O3", "-std=gnu11", "-Wall", "-Werror", "-Wno-missing-field-initializers",
           "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", SRC, "-o", out,
           "-lpthread"]
    if with_libpmem:
        if subprocess.run(["pkg-config", "--exists", "libpmem"]).returncode != 0:
            pytest.skip("libpmem-dev not installed")
        cmd[1:1] = ["-DHAVE_LIBPMEM=1"]
        cmd.append("-lpmem")
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _plain_module(tmp_path):
    """The kernel built without libpmem (msync on files, CLFLUSH on device DAX), loaded."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    so = tmp_path / f"_pmembw{suffix}"
    _compile(str(so), with_libpmem=False)
    spec = importlib.util.spec_from_file_location("_pmembw", so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_builds_warning_free_with_libpmem(tmp_path):
    _compile(str(tmp_path / "_pmembw.so"), with_libpmem=True)


def test_msync_only_build_is_warning_free_and_measures(tmp_path):
    mod = _plain_module(tmp_path)
    assert mod.HAVE_LIBPMEM == 0
    data = tmp_path / "ws"
    data.write_bytes(b"\0" * (8 << 20))
    m = mod.Mapping(str(data))
    try:
        assert (m.size, m.is_pmem, m.persist_method) == (8 << 20, False, "msync")
        m.prefault(0, m.size, [-1, -1])
        w = m.run("write", "seq", True, 4096, [-1, -1], 0.02, m.size)
        r = m.run("read", "rand", False, 256, [-1], 0.02, m.size)
        assert w["write_bytes"] > 0 and r["read_bytes"] > 0
        assert m.idle_latency(m.size // 64, 0.02, -1)["ns"] > 0
        assert m.persist_latency(64, 0.02, -1)["ns"] > 0
    finally:
        m.close()
    assert set(data.read_bytes()) - {0}  # the writes reached the file


def test_msync_only_build_flushes_lines_on_a_character_device(tmp_path):
    """Without libpmem a devdax device cannot be made durable by msync (device DAX has no
    fsync: a real 6.1 kernel answers EINVAL): the plain build flushes each written line with
    CLFLUSH instead. /dev/zero, a character device that maps as shared memory, stands in for
    the device here (the guest test, tests/kernel/test_bandwidth.py, runs it on devdax)."""
    import platform

    if platform.machine() not in ("x86_64", "i686", "i386"):
        pytest.skip("CLFLUSH is x86")
    mod = _plain_module(tmp_path)
    m = mod.Mapping("/dev/zero", 8 << 20)
    try:
        assert (m.size, m.is_pmem, m.persist_method) == (8 << 20, False, "clflush")
        m.prefault(0, m.size, [-1])
        w = m.run("write", "seq", False, 4096, [-1, -1], 0.02, m.size)
        assert w["write_bytes"] > 0
        assert m.persist_latency(64, 0.02, -1)["ns"] > 0
    finally:
        m.close()
