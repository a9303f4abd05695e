"""ndctl JSON and raw sysfs are two paths to the same inventory: they must agree."""

from __future__ import annotations

import pytest

from pmem_advisor.probes.pmem_ndctl import NDCTL_ARGV, parse_ndctl
from pmem_advisor.probes.pmem_sysfs import read_sysfs
from pmem_advisor.probes.profile import probe
from pmem_advisor.probes.reading import ProbeContext
from pmem_advisor.probes.sysaccess import COMMANDS_DIR, SysAccess, command_file_name

WITH_NDCTL = ["interleaved-2s-fsdax", "devdax-1s", "mixed-mode", "memory-mode", "legacy-memmap"]
CORE = {
    "regions": ("name", "size_bytes", "type"),
    "namespaces": ("name", "region", "mode", "size_bytes"),
    "dimms": ("name", "handle", "socket", "imc", "channel", "slot"),
}


def _ndctl_out(root):
    return root / COMMANDS_DIR / f"{command_file_name(NDCTL_ARGV)}.out"


@pytest.mark.parametrize("name", WITH_NDCTL)
def test_ndctl_and_sysfs_agree(name, machine):
    root = machine(name)
    tool, _ = parse_ndctl(_ndctl_out(root).read_text())
    ctx = ProbeContext(SysAccess(str(root)))
    kernel = read_sysfs(ctx)
    assert ctx.warnings == []
    for key, core in CORE.items():
        assert [i["name"] for i in tool[key]] == [i["name"] for i in kernel[key]], key
        for a, b in zip(tool[key], kernel[key], strict=True):
            for field in core:  # always present in both
                assert a[field] == b[field] and a[field] is not None, (key, a["name"], field)
            for field, value in a.items():  # anything both report must be equal
                if value not in (None, []) and b.get(field) not in (None, []):
                    assert value == b[field], (key, a["name"], field)


def test_full_ndctl_output_gives_every_field(machine):
    """With -BDRNv, ndctl alone yields what sysfs yields, field for field."""
    root = machine("interleaved-2s-fsdax")
    tool, _ = parse_ndctl(_ndctl_out(root).read_text())
    kernel = read_sysfs(ProbeContext(SysAccess(str(root))))
    for key in ("regions", "namespaces", "dimms"):
        strip = {"state", "uuid"}
        assert [{k: v for k, v in i.items() if k not in strip} for i in tool[key]] == \
            [{k: v for k, v in i.items() if k not in strip} for i in kernel[key]]


@pytest.mark.parametrize("name", WITH_NDCTL)
def test_profile_same_without_ndctl(name, machine):
    """Removing the tool changes only ``pmem.source``."""
    root = machine(name)
    with_tool = probe(SysAccess(str(root)), [])
    _ndctl_out(root).unlink()
    without = probe(SysAccess(str(root)), [])
    assert with_tool["pmem"]["source"] == "ndctl"
    assert without["pmem"]["source"] in ("sysfs",)
    for key in ("mode", "regions", "namespaces", "dimms", "buses"):
        assert with_tool["pmem"][key] == without["pmem"][key], key


def test_memory_mode_detected_without_ipmctl(machine):
    root = machine("memory-mode")
    for f in (root / COMMANDS_DIR).glob("ipmctl_*"):
        f.unlink()
    p = probe(SysAccess(str(root)), [])
    assert p["pmem"]["mode"] == "memory" and p["pmem"]["ipmctl"] is None
    assert any("memory-side cache" in e for e in p["pmem"]["mode_evidence"])


def test_memory_mode_dimms_only_warns(machine):
    """Without HMAT or ipmctl, DIMMs without regions are ambiguous: say so."""
    root = machine("memory-mode")
    for f in (root / COMMANDS_DIR).glob("ipmctl_*"):
        f.unlink()
    for cache in root.glob("sys/devices/system/node/node*/memory_side_cache/index1/size"):
        cache.unlink()
    p = probe(SysAccess(str(root)), [])
    assert p["pmem"]["mode"] == "memory"
    assert any("unprovisioned" in w for w in p["warnings"])
