"""Missing or malformed files degrade to null + a warning naming the file; bad roots exit 2."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest

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

    def deny(path, **kw):
        if path == "/proc/iomem":
            raise PermissionError(13, "Permission denied")
        return real(path, **kw)

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


# --- issue 17 item 5: a probed tree is a jail ---------------------------------------------------


def test_absolute_and_dotdot_links_cannot_leave_the_tree(machine, tmp_path, run_cli):
    """Failed before the fix: /etc/shadow's content became the profile's hostname, and went
    into the warnings and the --save snapshot."""
    import os

    secret = tmp_path / "outside-secret"
    secret.write_text("root:SECRET-HASH:20228:0:99999:7:::\n")
    root = machine("interleaved-2s-fsdax")
    kernel = root / "proc/sys/kernel"
    kernel.mkdir(parents=True, exist_ok=True)
    for name in ("hostname", "osrelease"):
        (kernel / name).unlink(missing_ok=True)
    (kernel / "hostname").symlink_to(secret)  # absolute: re-rooted inside the tree
    rel = os.path.relpath(secret, kernel)
    (kernel / "osrelease").symlink_to(rel)  # ../../../..: stops at the tree's root
    (root / "proc/meminfo").unlink()
    (root / "proc/meminfo").symlink_to("/../../../../../../" + str(secret))
    snap = tmp_path / "snap.tar.gz"
    code, out, err = run_cli("probe", "--json", "--root", str(root), "--save", str(snap))
    assert code == 0, err
    assert "SECRET-HASH" not in out + err

    with tarfile.open(snap) as tar:
        for m in tar.getmembers():
            if m.isfile():
                assert b"SECRET-HASH" not in tar.extractfile(m).read(), m.name


def test_symlink_loops_devices_and_fifos_are_warnings_not_crashes(machine):
    import os

    root = machine("interleaved-2s-fsdax")
    (root / "proc/meminfo").unlink()
    (root / "proc/meminfo").symlink_to("meminfo2")
    (root / "proc/meminfo2").symlink_to("meminfo")
    node = root / "sys/devices/system/node"
    (node / "node9").symlink_to("node9/../node9")  # a directory loop
    (root / "proc/cpuinfo").unlink()
    os.mkfifo(root / "proc/cpuinfo")  # reading would hang
    (root / "proc/iomem").unlink()
    (root / "proc/iomem").symlink_to("/dev/zero")  # re-rooted: missing, never endless
    p = _probe(root)
    joined = "\n".join(p["warnings"])
    assert "/proc/meminfo" in joined and "/proc/cpuinfo" in joined
    assert p["memory"]["total_bytes"] is None


def test_snapshot_extraction_is_capped(tmp_path, run_cli, monkeypatch):
    """Failed before the fix: a 415 KB archive of zeros extracted to 400 MB. The caps are
    lowered here so the test stays tiny; the code path is the same."""
    from pmem_advisor.probes import snapshot

    monkeypatch.setattr(snapshot, "MAX_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.tar.gz"
    with tarfile.open(bomb, "w:gz") as tar:
        info = tarfile.TarInfo("proc/meminfo")
        info.size = 4 << 20
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    assert bomb.stat().st_size < 64 << 10
    code, _, err = run_cli("probe", "--root", str(bomb))
    assert code == EXIT_USAGE and "larger than a probe's" in err
    monkeypatch.setattr(snapshot, "MAX_MEMBERS", 10)
    many = tmp_path / "many.tar.gz"
    with tarfile.open(many, "w:gz") as tar:
        for i in range(20):
            tar.addfile(tarfile.TarInfo(f"proc/f{i}"), io.BytesIO(b""))
    code, _, err = run_cli("probe", "--root", str(many))
    assert code == EXIT_USAGE and "20 files" not in err and "limits 10 files" in err


def test_save_keeps_the_previous_snapshot_and_refuses_a_planted_link(machine, tmp_path,
                                                                      run_cli):
    """Items 3 and 9 for --save: the old snapshot is kept as .bak; a link at the target (or
    at the old `.part` name) is never written through."""
    root = machine("interleaved-2s-fsdax")
    snap = tmp_path / "snap.tar.gz"
    snap.write_bytes(b"my previous snapshot")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "snap.tar.gz.part").symlink_to(victim)
    code, _, err = run_cli("probe", "--root", str(root), "--save", str(snap))
    assert code == 0, err
    assert (tmp_path / "snap.tar.gz.bak").read_bytes() == b"my previous snapshot"
    assert victim.read_text() == "precious"
    link = tmp_path / "link.tar.gz"
    link.symlink_to(victim)
    code, _, err = run_cli("probe", "--root", str(root), "--save", str(link))
    assert code == EXIT_USAGE and "symbolic link" in err and victim.read_text() == "precious"


@pytest.mark.parametrize("member", ["link", "dotdot", "fifo"])
def test_without_tarfiles_data_filter_the_same_refusals_hold(tmp_path, monkeypatch, member):
    """Debian 12's Python 3.11.2 has no extractall(filter=): snapshot.py refuses the same
    members by hand (it crashed with exit 70 there, found by a make test as an ordinary user)."""

    from pmem_advisor.errors import InputError
    from pmem_advisor.probes import snapshot

    path = tmp_path / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as t:
        info = tarfile.TarInfo({"link": "sys/escape", "dotdot": "sys/../../x",
                                "fifo": "sys/pipe"}[member])
        info.type = {"link": tarfile.SYMTYPE, "dotdot": tarfile.REGTYPE,
                     "fifo": tarfile.FIFOTYPE}[member]
        info.linkname = "../../../../etc" if member == "link" else ""
        t.addfile(info, io.BytesIO(b"") if member == "dotdot" else None)
    monkeypatch.delattr(tarfile, "data_filter", raising=False)  # absent before 3.11.4
    with pytest.raises(InputError, match="corrupt or unreadable snapshot"):
        snapshot.open_snapshot(str(path))
