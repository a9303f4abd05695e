"""Issue 19: the medium of a path is measured where the kernel's flag cannot be trusted."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import time
from types import SimpleNamespace

import pytest

from pmem_advisor.probes import medium as m
from pmem_advisor.probes import medium_source as ms
from pmem_advisor.probes.profile import probe
from pmem_advisor.probes.sysaccess import SysAccess
from tests.probes.machine_builder import build

SMALL = 8 << 20


def _data(tmp_path) -> str:
    """A data directory: the scratch file goes beside it, in tmp_path."""
    (tmp_path / "data").mkdir(exist_ok=True)
    return str(tmp_path / "data")


# -- classification ------------------------------------------------------------------------------
@pytest.mark.parametrize("lat,iops,klass", [
    (8.0, 150, "hdd"),          # 7.2k rpm disk
    (1.5, None, "hdd"),         # the boundary belongs to the disks
    (1.49, None, "ssd"),
    (0.24, 20_000, "ssd"),      # this VM's virtio disk as the issue measured it
    (0.7, 16_000, "ssd"),       # a network flash volume (EBS gp3)
    (0.08, 400_000, "nvme"),    # local NVMe
    (0.08, 149_999, "ssd"),     # fast but no more than a SATA link carries
    (0.2, 400_000, "ssd"),      # the latency boundary belongs to ssd
    (0.05, None, "ssd"),        # the native reader never proves nvme-class
])
def test_classify_thresholds(lat, iops, klass):
    assert m.classify(lat, iops) == klass


def test_parse_fio_json():
    job = {"read": {"iops": 0, "clat_ns": {"mean": 1, "percentile": {}}, "lat_ns": {"mean": 1}},
           "write": {"iops": 0}}
    out = {"jobs": [
        {**job, "jobname": "lat", "read": {"iops": 4000, "lat_ns": {"mean": 250000.0},
                                           "clat_ns": {"mean": 240000.0, "percentile":
                                                       {"50.000000": 236000}}}},
        {**job, "jobname": "iops", "read": {"iops": 21000.4, "lat_ns": {"mean": 1},
                                            "clat_ns": {"mean": 1}}},
        {**job, "jobname": "wiops", "write": {"iops": 9000.6}},
    ]}
    got = m.parse_fio("note: both iodepth >= 1 and synchronous I/O engine are selected\n"
                      + json.dumps(out))
    assert got == {"read_lat_ms": 0.236, "read_lat_mean_ms": 0.25, "read_iops": 21000,
                   "write_iops": 9001}
    with pytest.raises(m.MeasureError, match="no usable JSON"):
        m.parse_fio("fio: pid=1, err=22/file:filesetup.c")


def test_fio_argv_only_touches_our_file():
    argv = m.fio_argv("/x/.pmem-advisor-medium-1/probe.dat", SMALL)
    files = {a for a in argv if a.startswith("--filename=")}
    assert files == {"--filename=/x/.pmem-advisor-medium-1/probe.dat"}
    assert "--allow_file_create=0" in argv and argv.count("--direct=1") == 3


# -- live, bounded --------------------------------------------------------------------------------
def test_live_native_measurement_cleans_up(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    start = time.monotonic()
    got = m.measure(str(data), seconds=0.2, use_fio=False, size=SMALL)
    assert time.monotonic() - start < m.DEADLINE_SECONDS
    assert got["method"] == "native" and got["class"] in ("ssd", "hdd")
    assert got["read_lat_ms"] > 0 and got["read_iops"] > 0 and got["write_iops"] > 0
    assert got["directory"] == str(tmp_path)  # beside the data directory, not in it
    assert os.listdir(tmp_path) == ["data"] and os.listdir(data) == []  # nothing left


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_live_fio_measurement_cleans_up(tmp_path):
    (tmp_path / "here").mkdir()
    got = m.measure(str(tmp_path / "here" / "not" / "yet"), seconds=0.2, use_fio=True,
                    size=SMALL)
    assert got["method"] == "fio" and got["read_iops"] > 0 and got["depth"] == m.DEPTH
    assert got["directory"] == str(tmp_path)  # beside the nearest existing ancestor
    assert os.listdir(tmp_path) == ["here"]


# -- bad input: say why, leave nothing -------------------------------------------------------------
def _statvfs(real, **over):
    def fake(path):
        st = real(path)
        fields = {k: getattr(st, k) for k in ("f_flag", "f_bavail", "f_frsize")} | over
        return SimpleNamespace(**fields)
    return fake


def test_read_only_filesystem(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "statvfs", _statvfs(os.statvfs, f_flag=os.ST_RDONLY))
    with pytest.raises(m.MeasureError, match="read-only filesystem"):
        m.measure(_data(tmp_path), seconds=0.1, size=SMALL)
    assert os.listdir(tmp_path) == ["data"] and os.listdir(tmp_path / "data") == []


def test_full_filesystem(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "statvfs", _statvfs(os.statvfs, f_bavail=10, f_frsize=4096))
    with pytest.raises(m.MeasureError, match="filesystem is full"):
        m.measure(_data(tmp_path), seconds=0.1, size=SMALL)
    assert os.listdir(tmp_path) == ["data"] and os.listdir(tmp_path / "data") == []


def test_filesystem_refusing_o_direct(tmp_path, monkeypatch):
    real_open = os.open

    def fake_open(path, flags, *a, **kw):
        if flags & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", fake_open)
    with pytest.raises(m.MeasureError, match="refuses O_DIRECT"):
        m.measure(_data(tmp_path), seconds=0.1, size=SMALL)
    assert os.listdir(tmp_path) == ["data"] and os.listdir(tmp_path / "data") == []


def test_device_that_does_not_answer(tmp_path, monkeypatch):
    monkeypatch.setattr(m, "DEADLINE_SECONDS", 0.5)
    real_layout = m._layout
    monkeypatch.setattr(m, "_layout", lambda *a: time.sleep(3))
    with pytest.raises(m.MeasureError, match="did not answer within .*laying out"):
        m.measure(_data(tmp_path), seconds=0.1, use_fio=False, size=SMALL)
    monkeypatch.setattr(m, "_layout", real_layout)
    monkeypatch.setattr(m, "_io_loop", lambda *a: time.sleep(3))
    with pytest.raises(m.MeasureError, match="did not answer within"):
        m.measure(_data(tmp_path), seconds=0.1, use_fio=False, size=SMALL)
    assert os.listdir(tmp_path) == ["data"] and os.listdir(tmp_path / "data") == []

    class Hung:  # fio stuck in the kernel: it ignores even SIGKILL for a while
        returncode = None
        killed = False

        def __init__(self, *a, **kw):
            pass

        def communicate(self, timeout=None):
            raise subprocess.TimeoutExpired("fio", timeout)

        def kill(self):
            Hung.killed = True

    monkeypatch.setattr(subprocess, "Popen", Hung)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/fio")
    with pytest.raises(m.MeasureError, match="did not answer within .* \\(fio stopped\\)"):
        m.measure(_data(tmp_path), seconds=0.1, use_fio=True, size=SMALL)
    assert Hung.killed
    assert os.listdir(tmp_path) == ["data"] and os.listdir(tmp_path / "data") == []


# -- which source decides -------------------------------------------------------------------------
MEASURED = {"read_lat_ms": 0.24, "read_lat_mean_ms": 0.3, "read_iops": 21000,
            "write_iops": 9000, "method": "fio", "seconds": 3.1, "depth": 32,
            "directory": "/var/lib", "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "class": "ssd"}


def _virtio_entry(**over) -> dict:
    return {"path": "/var/lib/pg", "resolved": "/var/lib/pg", "fstype": "ext4",
            "mountpoint": "/", "base_device": "vda", "block_device": "vda", "medium": "hdd",
            "rotational": 1, "virtual": "a virtio disk", "notes": [], **over}


@pytest.fixture
def no_measuring(monkeypatch):
    monkeypatch.setattr(ms, "_MEMO", {})
    monkeypatch.setattr(ms, "cache_file", lambda: None)

    def boom(path):
        raise AssertionError(f"measured {path}")

    monkeypatch.setattr(m, "measure", boom)


def test_flash_wins_over_rotational_flag(monkeypatch):
    monkeypatch.setattr(ms, "_MEMO", {})
    monkeypatch.setattr(ms, "cache_file", lambda: None)
    calls = []
    monkeypatch.setattr(m, "measure", lambda path: calls.append(path) or dict(MEASURED))
    cache: dict = {}
    e = ms.settle(_virtio_entry(), access=SysAccess("/"), measure=True, override=None,
                  cache=cache)
    assert (e["medium"], e["medium_source"]) == ("ssd", "measured")
    assert e["medium_note"].startswith("medium: ssd (measured 0.24 ms random 4 KB read")
    assert e["medium_note"].endswith("the kernel reports rotational=1, a virtio disk)")
    assert cache["vda"]["class"] == "ssd" and calls == ["/var/lib/pg"]
    assert any("profile only" in n for n in e["notes"])  # no file cache: said
    # Memoised: a second probe in this process does not measure again.
    e2 = ms.settle(_virtio_entry(), access=SysAccess("/"), measure=True, override=None,
                   cache={})
    assert e2["medium_note"] == e["medium_note"] and calls == ["/var/lib/pg"]


def test_measured_hdd_wins_too(monkeypatch, no_measuring):
    slow = dict(MEASURED, read_lat_ms=7.9, read_iops=180, **{"class": "hdd"})
    e = ms.settle(_virtio_entry(medium="ssd", rotational=0), access=SysAccess("/"),
                  measure=True, override=None, cache={"vda": slow})
    assert (e["medium"], e["medium_source"]) == ("hdd", "measured")


def test_cache_from_profile_is_used_without_measuring(no_measuring, tmp_path):
    e = ms.settle(_virtio_entry(), access=SysAccess(str(tmp_path), kind="root"),
                  measure=True, override=None, cache={"vda": dict(MEASURED)})
    assert e["medium_source"] == "measured" and e["measured"]["read_iops"] == 21000


def test_stale_or_bad_cache_is_ignored(no_measuring, tmp_path):
    stale = dict(MEASURED, at="2020-01-01T00:00:00Z")
    for bad in (stale, {"class": "floppy"}, "junk"):
        e = ms.settle(_virtio_entry(), access=SysAccess(str(tmp_path), kind="root"),
                      measure=True, override=None, cache={"vda": bad})
        assert e["medium_source"] == "unverified"


def test_skip_says_unverified(no_measuring, tmp_path):
    live = ms.settle(_virtio_entry(), access=SysAccess("/"), measure=False, override=None,
                     cache={})
    assert (live["medium"], live["medium_source"]) == ("hdd", "unverified")
    assert "not measured: --no-measure" in live["medium_note"]
    assert "rotational=1, a virtio disk" in live["medium_note"]
    tree = ms.settle(_virtio_entry(), access=SysAccess(str(tmp_path), kind="root"),
                     measure=True, override=None, cache={})
    assert "a captured tree cannot be measured" in tree["medium_note"]


def test_failed_measurement_falls_back_to_flag(monkeypatch):
    monkeypatch.setattr(ms, "_MEMO", {})
    monkeypatch.setattr(ms, "cache_file", lambda: None)

    def fail(path):
        raise m.MeasureError("/var/lib is on a read-only filesystem")

    monkeypatch.setattr(m, "measure", fail)
    e = ms.settle(_virtio_entry(), access=SysAccess("/"), measure=True, override=None,
                  cache={})
    assert (e["medium"], e["medium_source"], e["measured"]) == ("hdd", "unverified", None)
    assert "could not measure: /var/lib is on a read-only filesystem" in e["medium_note"]


def test_override_and_trusted_kernel(no_measuring):
    e = ms.settle(_virtio_entry(), access=SysAccess("/"), measure=True, override="nvme",
                  cache={})
    assert (e["medium"], e["medium_source"]) == ("nvme", "override")
    assert e["medium_note"] == ("medium: nvme (set by --medium; the kernel reports "
                                "rotational=1, a virtio disk)")
    sata = ms.settle(_virtio_entry(virtual=None, base_device="sda"), access=SysAccess("/"),
                     measure=True, override=None, cache={})
    assert sata["medium_source"] == "kernel"
    assert sata["medium_note"] == "medium: hdd (the kernel reports rotational=1 for sda)"


def test_parse_overrides():
    assert ms.parse_overrides(["/var/lib/pg/=ssd", "/a=b=HDD"]) == {"/var/lib/pg": "ssd",
                                                                   "/a=b": "hdd"}
    for bad in ("/x", "=ssd", "/x=floppy"):
        with pytest.raises(ValueError, match="--medium"):
            ms.parse_overrides([bad])


# -- the stack walk and captured trees ----------------------------------------------------------
def test_dm_over_virtio_is_followed_to_its_leaves(tmp_path):
    root = build("hugepage-pool", tmp_path / "h")
    p = probe(SysAccess(str(root), kind="root"), ["/var/lib/mysql"])
    e = p["paths"][0]
    assert (e["block_device"], e["base_device"], e["rotational"]) == ("dm-0", "vdb", 1)
    assert e["virtual"] == "a virtio disk (vdb, under dm-0)"
    assert e["medium_source"] == "unverified" and "unverified" in e["medium_note"]


def test_cloud_nvme_is_not_trusted_but_instance_store_is(tmp_path):
    root = build("memory-max-max", tmp_path / "e")
    p = probe(SysAccess(str(root), kind="root"), ["/var/lib/pgsql/data", "/mnt/wal"])
    ebs, local = p["paths"]
    assert ebs["virtual"] == "a virtual or cloud volume (Amazon Elastic Block Store)"
    assert ebs["medium_source"] == "unverified"
    assert (local["virtual"], local["medium_source"]) == (None, "kernel")


def test_measurement_kept_in_a_snapshot_is_reused(tmp_path):
    root = build("hugepage-pool", tmp_path / "h")
    facts = root / ".pmem-advisor/facts.json"
    data = json.loads(facts.read_text())
    data["media"] = {"dm-0": dict(MEASURED)}
    facts.write_text(json.dumps(data))
    p = probe(SysAccess(str(root), kind="root"), ["/var/lib/mysql"])
    e = p["paths"][0]
    assert (e["medium"], e["medium_source"]) == ("ssd", "measured")
    assert p["media"]["dm-0"]["read_lat_ms"] == 0.24
    mount = next(x for x in p["mounts"] if x["mountpoint"] == "/var/lib/mysql")
    assert (mount["medium"], mount["medium_source"]) == ("ssd", "measured")


def test_cli_override_and_bad_override(run_cli, machine):
    root = machine("hugepage-pool")
    code, out, err = run_cli("probe", "--json", "--root", str(root),
                             "--medium", "/var/lib/mysql=ssd")
    assert code == 0, err
    e = json.loads(out)["paths"][0]
    assert (e["path"], e["medium"], e["medium_source"]) == ("/var/lib/mysql", "ssd", "override")
    code, _, err = run_cli("probe", "--root", str(root), "--medium", "/var/lib/mysql=floppy")
    assert code == 2 and "CLASS must be one of hdd, ssd, nvme" in err


def test_cli_no_measure_live(run_cli):
    code, out, err = run_cli("probe", "--json", "--no-measure", "--path", "/")
    assert code == 0, err
    e = json.loads(out)["paths"][0]
    if e.get("virtual"):
        assert e["medium_source"] == "unverified" and "--no-measure" in e["medium_note"]


def test_file_cache_between_runs(monkeypatch, tmp_path):
    """A live measurement lands in <cache>/media/media.json (0600 in a 0700 dir of ours) and the
    next process reuses it instead of measuring again."""
    from pmem_advisor import fileio
    from pmem_advisor.instances import privileges

    monkeypatch.setattr(privileges, "CACHE_ROOT", tmp_path / "cache")
    monkeypatch.setattr(fileio, "CACHE_ROOT", tmp_path / "cache")
    monkeypatch.setattr(ms, "_MEMO", {})
    monkeypatch.setattr(m, "measure", lambda path: dict(MEASURED))
    e = ms.settle(_virtio_entry(), access=SysAccess("/"), measure=True, override=None,
                  cache={})
    assert e["medium_source"] == "measured" and e["notes"] == []
    file = tmp_path / "cache" / "media" / "media.json"
    assert json.loads(file.read_text())["vda"]["read_lat_ms"] == 0.24
    assert oct(file.stat().st_mode & 0o777) == "0o600"
    assert oct(file.parent.stat().st_mode & 0o777) == "0o700"
    monkeypatch.setattr(ms, "_MEMO", {})  # a new process

    def boom(path):
        raise AssertionError("measured again")

    monkeypatch.setattr(m, "measure", boom)
    again = ms.settle(_virtio_entry(), access=SysAccess("/"), measure=True, override=None,
                      cache={})
    assert again["medium_note"] == e["medium_note"]


def test_untrusted_cache_dir_is_not_used(monkeypatch, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)  # writable by everyone, no sticky bit: not ours to trust
    from pmem_advisor import fileio
    from pmem_advisor.instances import privileges

    monkeypatch.setattr(privileges, "CACHE_ROOT", shared)
    monkeypatch.setattr(fileio, "CACHE_ROOT", shared)
    assert ms.cache_file() is None


@pytest.mark.parametrize("disk,virtual", [
    ({"name": "vdb", "device": "pci0000:00/0000:00:05.0/virtio4", "rotational": 1},
     "a virtio disk"),
    ({"name": "xvda", "device": "vbd-51712", "rotational": 1}, "a Xen disk"),
    ({"name": "sdb", "device": "LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/f8b3781b/host3/"
      "target3:0:0/3:0:0:0", "rotational": 1, "vendor": "Msft", "model": "Virtual Disk"},
     "a Hyper-V disk"),
    ({"name": "nbd0", "device": "virtual/nbd0dev", "rotational": 0},
     "a network block device (NBD)"),
    ({"name": "rbd0", "device": "virtual/rbd0dev", "rotational": 0}, "a Ceph RBD volume"),
    ({"name": "sdc", "device": "platform/host5/session2/target5:0:0/5:0:0:1", "rotational": 1},
     "an iSCSI disk"),
    ({"name": "sdd", "device": "pci0000:00/0000:00:10.0/host2/target2:0:0/2:0:0:0",
      "rotational": 1, "vendor": "VMware", "model": "Virtual disk"},
     "a virtual or cloud volume (VMware Virtual disk)"),
    ({"name": "nvme2n1", "device": "pci0000:00/0000:00:06.0/nvme/nvme2",
      "model": "nvme_card-pd"}, "a virtual or cloud volume (nvme_card-pd)"),
    ({"name": "sde", "device": "pci0000:00/0000:00:17.0/ata3/host2/target2:0:0/2:0:0:0",
      "rotational": 1, "vendor": "ATA", "model": "WDC WD40EFRX-68N"}, None),
    ({"name": "nvme3n1", "device": "pci0000:00/0000:00:1d.0/nvme/nvme3",
      "model": "SAMSUNG MZVL21T0HCLR"}, None),
])
def test_untrusted_devices_are_recognised(tmp_path, disk, virtual):
    """Which devices' kind the kernel cannot vouch for: each transport, and two physical ones."""
    from pmem_advisor.probes.mounts import MediumResolver
    from pmem_advisor.probes.reading import ProbeContext
    from tests.probes.machine_builder import Tree, _disk

    _disk(Tree(tmp_path), {**disk, "devno": "8:99"})
    ctx = ProbeContext(SysAccess(str(tmp_path), kind="root"))
    mount = {"device": f"/dev/{disk['name']}", "mountpoint": "/data", "fstype": "xfs",
             "options": [], "devno": "8:99"}
    facts = MediumResolver(ctx, {}, [mount]).mount_facts(mount)
    assert facts["virtual"] == virtual, facts
