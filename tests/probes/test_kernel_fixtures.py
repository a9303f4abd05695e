"""Snapshots a real kernel produced (Debian 6.1 in QEMU, scripts/qemu_guest.py capture): the
probe, offline on the snapshot, reports what the kernel's own tools reported in the same
guest (ndctl, daxctl, numactl, /proc/mounts, stored beside it), field by field.

The pmem inventory is checked twice: as the probe reports it (ndctl's JSON merged with sysfs)
and from sysfs alone (ndctl's recorded output removed), so the sysfs reader is proven against
the real kernel's attribute layout and not only against ndctl.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pmem_advisor.probes.pmem_sysfs import read_sysfs
from pmem_advisor.probes.profile import probe
from pmem_advisor.probes.reading import ProbeContext
from pmem_advisor.probes.snapshot import open_snapshot
from tests.probes import kernel_compare as kc

FIXTURES = Path(__file__).parent / "fixtures"
# Every topology with an nd region: the NFIT ones, and cxl (a CXL pmem region that cxl_pmem
# handed to libnvdimm on the CXL nvdimm bridge's bus, an fsdax namespace with ext4 -o dax).
KERNEL = ["kernel-6.1-nvdimm2", "kernel-6.1-numa2", "kernel-6.1-numa2-split", "kernel-6.1-kmem",
          "kernel-6.1-bandwidth", "kernel-6.1-cxl"]


def _read(name: str, file: str) -> str:
    path = FIXTURES / name / file
    return path.read_text() if path.exists() else ""


@pytest.fixture(scope="module")
def profiles() -> dict:
    return {}


def _profile(name: str, cache: dict) -> dict:
    if name not in cache:
        cache[name] = probe(open_snapshot(str(FIXTURES / name / "snapshot.tar.gz")), [],
                            measure=False)
    return cache[name]


def test_fixtures_present():
    """One snapshot per topology the guest brings up (docs/kernel.md says which)."""
    for name in KERNEL:
        assert (FIXTURES / name / "snapshot.tar.gz").is_file(), name


@pytest.mark.parametrize("name", KERNEL)
def test_pmem_matches_ndctl(name, profiles):
    pmem = _profile(name, profiles)["pmem"]
    assert pmem["regions"], "the snapshot has no region: the capture went wrong"
    assert kc.compare_pmem(pmem, _read(name, "ndctl-list-RNDv.json")) == []


@pytest.mark.parametrize("name", KERNEL)
def test_sysfs_alone_matches_ndctl(name):
    access = open_snapshot(str(FIXTURES / name / "snapshot.tar.gz"))
    ctx = ProbeContext(access)
    inv = read_sysfs(ctx)
    assert ctx.warnings == []
    assert kc.compare_pmem(inv, _read(name, "ndctl-list-RNDv.json")) == []


@pytest.mark.parametrize("name", KERNEL)
def test_dax_devices_match_daxctl(name, profiles):
    assert kc.compare_dax(_profile(name, profiles)["dax_devices"],
                          _read(name, "daxctl-list.json")) == []


@pytest.mark.parametrize("name", KERNEL)
def test_numa_matches_numactl(name, profiles):
    assert kc.compare_numa(_profile(name, profiles)["numa"], _read(name, "numactl-H.txt")) == []


@pytest.mark.parametrize("name", KERNEL)
def test_dax_mount_matches_proc_mounts(name, profiles):
    mounts = _read(name, "proc-mounts.txt")
    assert kc.dax_mounts(mounts), "the topology mounts ext4 (or xfs) with -o dax"
    assert kc.compare_mounts(_profile(name, profiles)["mounts"], mounts) == []


def test_nvdimm2_modes():
    """Topology 1: one fsdax and one devdax namespace, as created in the guest."""
    modes = sorted(n["mode"] for n in ndctl_namespaces("kernel-6.1-nvdimm2"))
    assert modes == ["devdax", "fsdax"]


def ndctl_namespaces(name: str) -> list[dict]:
    return kc.ndctl_items(_read(name, "ndctl-list-RNDv.json"))["namespaces"]


def test_kmem_node_is_cpu_less(profiles):
    """Topology 3: the devdax namespace onlined as system RAM makes node 1 memory-only."""
    profile = _profile("kernel-6.1-kmem", profiles)
    node1 = next(n for n in profile["numa"] if n["node"] == 1)
    assert node1["has_cpu"] is False and node1["memory_bytes"] > 0
    dax = json.loads(_read("kernel-6.1-kmem", "daxctl-list.json"))
    assert any(d.get("mode") == "system-ram" for d in dax)


@pytest.mark.parametrize("name", KERNEL)
def test_cxl_matches_cxl_list(name, profiles):
    """CXL memdevs and regions as cxl list printed them (none on the NFIT topologies)."""
    verbose = _read(name, "cxl-list-vvv.json")
    assert kc.compare_cxl(_profile(name, profiles)["cxl"], _read(name, "cxl-list.json"),
                          verbose) == []


def test_cxl_region_from_the_kernel(profiles):
    """Topology 4: `cxl create-region -t pmem -m -d decoder0.0 -w 1 mem0` on 6.1 made a
    committed region over the type-3 memdev (pmem only on QEMU 7.2); cxl_pmem gave libnvdimm
    a region on the CXL bus whose one DIMM is the bridge's nmem, and the fsdax namespace on
    it is mounted with DAX. What 6.1 prints differs from the hand-written trees: no region
    "type" in cxl list, no region "mode" in sysfs (a pmem region is the one with a
    pmem_regionN child), no nfit/ under the nmem, no set_cookie (ndctl's iset_id 0)."""
    profile = _profile("kernel-6.1-cxl", profiles)
    items = kc.cxl_items(_read("kernel-6.1-cxl", "cxl-list.json"))
    assert sorted(items["regions"]) == [r["name"] for r in profile["cxl"]["regions"]] != []
    assert "type" not in next(iter(items["regions"].values()))
    region = profile["cxl"]["regions"][0]
    assert region["mode"] == "pmem" and region["committed"] is True
    assert [t["memdev"] for t in region["targets"]] == sorted(items["memdevs"])
    nd = kc.ndctl_items(_read("kernel-6.1-cxl", "ndctl-list-RNDv.json"))
    assert [(r["name"], r["provider"], r["dimms"]) for r in profile["pmem"]["regions"]] == [
        (r["dev"], "CXL", [m["dimm"] for m in r["mappings"]]) for r in nd["regions"]]
    assert [d["name"] for d in profile["pmem"]["dimms"]] == [d["dev"] for d in nd["dimms"]]
    assert kc.dax_mounts(_read("kernel-6.1-cxl", "proc-mounts.txt"))


def _numa2_tree(tmp_path: Path, package_of_cpu1: int) -> dict:
    """The numa2 snapshot unpacked, cpu1's package set; probed as a root tree."""
    import tarfile

    from pmem_advisor.probes.sysaccess import SysAccess

    with tarfile.open(FIXTURES / "kernel-6.1-numa2" / "snapshot.tar.gz") as tar:
        # our own committed fixtures; the filter only where this Python has it (3.11.4+)
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    pkg = tmp_path / "sys/devices/system/cpu/cpu1/topology/physical_package_id"
    pkg.chmod(0o644)  # captured read-only (sysfs/procfs modes): root alone writes it as is
    pkg.write_text(f"{package_of_cpu1}\n")
    return probe(SysAccess(str(tmp_path), kind="root"), [], measure=False)


def test_numa2_node_on_one_socket_is_no_firmware_bug(profiles):
    """QEMU's two -numa nodes share package 0 (as sub-NUMA clustering does on real iron):
    region1 on node 1 with DIMM handles on socket 0 agrees with node 1's CPUs (package 0)."""
    profile = _profile("kernel-6.1-numa2", profiles)
    region1 = next(r for r in profile["pmem"]["regions"] if r["name"] == "region1")
    assert region1["numa_node"] == 1
    assert {d["socket"] for d in profile["pmem"]["dimms"]} == {0}
    assert not [w for w in profile["warnings"] if "firmware bug" in w]


def test_numa2_node_on_another_socket_is_flagged(tmp_path):
    """The same tree with node 1's CPU moved to package 1: now the handles (socket 0) and the
    node (socket 1) disagree, and the warning names both."""
    warnings = _numa2_tree(tmp_path, 1)["warnings"]
    assert [w for w in warnings if "firmware bug" in w] == [
        "region1: numa_node 1 has its CPUs on socket(s) 1 but its DIMMs sit on socket 0 "
        "(a known firmware bug; trust the DIMM handles)"]
    assert not [w for w in _numa2_tree(tmp_path / "same", 0)["warnings"]
                if "firmware bug" in w]
