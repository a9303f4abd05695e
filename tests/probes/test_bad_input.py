"""Missing or malformed files degrade to null + a warning naming the file; bad roots exit 2."""

from __future__ import annotations

import gzip
import io
import tarfile

from pmem_advisor.errors import EXIT_USAGE
from pmem_advisor.probes.pmem_ndctl import NDCTL_ARGV
from pmem_advisor.probes.profile import probe
from pmem_advisor.probes.sysaccess import COMMANDS_DIR, SysAccess, command_file_name

REGION0 = "sys/devices/platform/ACPI0012:00/ndbus0/region0"


def _probe(root, paths=()):
    return probe(SysAccess(str(root)), list(paths))


def test_malformed_sysfs_values(machine):
    root = machine("noninterleaved-2s")  # sysfs only
    (root / REGION0 / "size").write_text("lots\n")
    (root / REGION0 / "mapping0").write_text("garbage\n")
    (root / "sys/devices/system/node/node1/meminfo").write_text("nothing here\n")
    p = _probe(root)
    r0 = p["pmem"]["regions"][0]
    assert r0["size_bytes"] is None and r0["dimms"] == []
    assert p["numa"][1]["memory_bytes"] is None
    joined = "\n".join(p["warnings"])
    assert f"/{REGION0}/size: malformed" in joined
    assert f"/{REGION0}/mapping0: malformed" in joined
    assert "/sys/devices/system/node/node1/meminfo: malformed" in joined
    assert p["pmem"]["regions"][1]["size_bytes"] == 134217728000  # the rest is intact


def test_missing_files(machine):
    root = machine("interleaved-2s-fsdax")
    (root / "proc/meminfo").unlink()
    (root / "proc/cpuinfo").unlink()
    (root / "sys/devices/system/node/node0/cpulist").unlink()
    p = _probe(root)
    assert p["memory"]["total_bytes"] is None
    assert p["numa"][0]["cpus"] is None and p["numa"][0]["has_cpu"] is None
    assert p["cpu"]["threads"] == 16  # sysfs still has the topology
    for path in ("/proc/meminfo: missing", "/proc/cpuinfo: missing",
                 "/sys/devices/system/node/node0/cpulist: missing"):
        assert path in p["warnings"]


def test_malformed_ndctl_json_falls_back_to_sysfs(machine):
    root = machine("interleaved-2s-fsdax")
    out = root / COMMANDS_DIR / f"{command_file_name(NDCTL_ARGV)}.out"
    out.write_text(out.read_text()[:500])  # truncated paste
    p = _probe(root)
    assert p["pmem"]["source"] == "sysfs"
    assert len(p["pmem"]["regions"]) == 2
    assert any("ndctl list -BDRNv" in w and "malformed JSON" in w for w in p["warnings"])


def test_failing_tool_is_a_warning(machine):
    root = machine("interleaved-2s-fsdax")
    base = root / COMMANDS_DIR / command_file_name(NDCTL_ARGV)
    base.with_name(base.name + ".rc").write_text("1\n")
    base.with_name(base.name + ".err").write_text("libndctl: ndctl_new: failed\n")
    p = _probe(root)
    assert p["pmem"]["source"] == "sysfs"
    assert any("exited with 1: libndctl" in w for w in p["warnings"])


def test_malformed_mountinfo_line(machine):
    root = machine("interleaved-2s-fsdax")
    info = root / "proc/self/mountinfo"
    info.write_text("this is not a mount\n" + info.read_text())
    p = _probe(root, ["/mnt/pmem0"])
    assert "/proc/self/mountinfo:1: malformed line" in p["warnings"]
    assert p["paths"][0]["medium"] == "pmem"


def test_unreadable_file(machine, monkeypatch):
    root = machine("cxl-expander")
    access = SysAccess(str(root))
    real = access.read_bytes

    def deny(path):
        if path == "/proc/iomem":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(access, "read_bytes", deny)
    p = probe(access, [])
    assert "/proc/iomem: unreadable (Permission denied)" in p["warnings"]


def test_nonexistent_root(run_cli, tmp_path):
    code, out, err = run_cli("probe", "--root", str(tmp_path / "nope"))
    assert code == EXIT_USAGE and out == ""
    assert err.count("\n") == 1 and "does not exist" in err and "Traceback" not in err


def test_root_not_shaped_like_a_system(run_cli, tmp_path):
    code, _, err = run_cli("probe", "--root", str(tmp_path))
    assert code == EXIT_USAGE and "does not look like a captured system" in err


def test_corrupt_snapshot(run_cli, tmp_path):
    bad = tmp_path / "snap.tar.gz"
    bad.write_bytes(gzip.compress(b"not a tar archive at all" * 100)[:200])
    code, _, err = run_cli("probe", "--root", str(bad))
    assert code == EXIT_USAGE and err.count("\n") == 1 and "corrupt" in err


def test_tar_that_is_not_a_snapshot(run_cli, tmp_path):
    path = tmp_path / "other.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("hello.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    code, _, err = run_cli("probe", "--root", str(path))
    assert code == EXIT_USAGE and "not a pmem-advisor snapshot" in err


def test_snapshot_with_escaping_link_is_refused(run_cli, tmp_path):
    path = tmp_path / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("sys/escape")
        info.type, info.linkname = tarfile.SYMTYPE, "../../../../etc"
        tar.addfile(info)
    code, _, err = run_cli("probe", "--root", str(path))
    assert code == EXIT_USAGE and "corrupt" in err
