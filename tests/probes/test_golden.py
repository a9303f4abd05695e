"""Every captured machine reads back exactly its golden profile and its expected facts."""

from __future__ import annotations

import json

import pytest

from tests.probes.goldens import golden_path, probe_machine
from tests.probes.machine_builder import load_description, machine_names

REQUIRED = {"fake-machines": {"interleaved-2s-fsdax", "noninterleaved-2s", "devdax-1s",
                              "sector-btt", "memory-mode", "mixed-mode", "legacy-memmap",
                              "cxl-expander", "this-vm"},
            # issue 18: the limits a server really gets
            "limits": {"container-v2", "cgroup-v1-host", "systemd-slice", "cpuset-narrow",
                       "hugepage-pool", "memory-max-max"}}


def test_all_required_machines_exist():
    assert REQUIRED["fake-machines"] | REQUIRED["limits"] <= set(machine_names())


@pytest.mark.parametrize("name", machine_names())
def test_matches_golden(name, tmp_path):
    profile = probe_machine(name, tmp_path)
    golden = json.loads(golden_path(name).read_text())
    # Compare section by section so a failure names the part that moved.
    for key in golden:
        assert profile.get(key) == golden[key], (
            f"{name}: '{key}' differs from {golden_path(name).name}; if intended, run "
            "`python -m tests.probes.regen_golden` and review the diff")
    assert set(profile) == set(golden)


@pytest.mark.parametrize("name", machine_names())
def test_expected_facts(name, tmp_path):
    """The facts the issue asks for, stated by hand in machine.yaml (not from the golden)."""
    expect = load_description(name)["expect"]
    p = probe_machine(name, tmp_path)
    pmem = p["pmem"]
    assert pmem["mode"] == expect["mode"]
    assert pmem["source"] == expect["source"]
    assert len(pmem["regions"]) == expect["regions"]
    assert [r["interleave_ways"] for r in pmem["regions"]] == expect["ways"]
    assert [n["mode"] for n in pmem["namespaces"]] == expect["namespace_modes"]
    dax_mounts = [m["mountpoint"] for m in p["mounts"] if m["dax"] in ("always", "inode")]
    assert dax_mounts == expect["dax_mounts"]
    assert p["cxl"]["nodes"] == expect.get("cxl_nodes", [])
    assert p["schema"] == "pmem-advisor.probe/1"
    assert p["warnings"] == []


def test_interleaved_details(tmp_path):
    p = probe_machine("interleaved-2s-fsdax", tmp_path)
    r0, r1 = p["pmem"]["regions"]
    assert r0["dimms"] == [f"nmem{k}" for k in range(6)] and r0["numa_node"] == 0
    assert {d["socket"] for d in p["pmem"]["dimms"] if d["name"] in r1["dimms"]} == {1}
    ns0 = p["pmem"]["namespaces"][0]
    assert (ns0["blockdev"], ns0["map"], ns0["align"]) == ("pmem0", "dev", 2097152)
    by_path = {x["path"]: x for x in p["paths"]}
    assert by_path["/mnt/pmem0/pgdata"]["medium"] == "pmem"
    assert by_path["/mnt/pmem0/pgdata"]["dax"] == "always"
    assert by_path["/mnt/pmem1/wal"]["numa_node"] == 1
    root = by_path["/var/lib/postgresql"]  # LVM on an NVMe partition
    assert (root["medium"], root["base_device"]) == ("nvme", "nvme0n1")
    assert by_path["/dev/shm"]["emulated_pmem"] is True


def test_devdax_chardev_and_sector_blockdev(tmp_path):
    dax = probe_machine("devdax-1s", tmp_path)
    ns = dax["pmem"]["namespaces"][0]
    assert (ns["chardev"], ns["blockdev"], ns["sector_size"]) == ("dax0.0", None, None)
    assert dax["paths"][0]["dax"] == "devdax" and dax["paths"][0]["medium"] == "pmem"
    btt = probe_machine("sector-btt", tmp_path)
    sector, raw = btt["pmem"]["namespaces"]
    assert (sector["blockdev"], sector["sector_size"], sector["map"]) == ("pmem1s", 4096, None)
    assert raw["blockdev"] == "pmem1.1"
    paths = {x["path"]: x for x in btt["paths"]}
    assert paths["/mnt/btt/mysql"]["dax_capable"] is False  # BTT cannot do DAX
    assert paths["/mnt/raw/wal"]["dax"] == "always"  # old kernel's plain "dax"


def test_legacy_memmap_is_emulated(tmp_path):
    p = probe_machine("legacy-memmap", tmp_path)
    assert p["pmem"]["legacy_memmap"] is True
    assert p["pmem"]["regions"][0]["provider"] == "e820"
    pg = p["paths"][0]
    assert (pg["medium"], pg["emulated_pmem"], pg["dax"]) == ("pmem", True, "always")


def test_cxl_node_is_cpuless(tmp_path):
    p = probe_machine("cxl-expander", tmp_path)
    node2 = p["numa"][2]
    assert (node2["has_cpu"], node2["kind"], node2["memory_bytes"]) == (False, "cxl", 64 << 30)
    assert p["cxl"]["memdevs"][0]["ram_bytes"] == 64 << 30
    assert p["cxl"]["regions"][0]["dax_devices"] == ["dax0.0"]
