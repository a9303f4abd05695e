"""Boot Debian's 6.1 kernel in QEMU per topology, run the probe live in the guest, and hold its
report against ndctl, daxctl, cxl, numactl and /proc/mounts captured in the same guest."""

from __future__ import annotations

import glob
import json
import tempfile
import time

import pytest

from tests.probes import kernel_compare as kc

pytestmark = pytest.mark.kernel


@pytest.mark.parametrize("topology", ["nvdimm2", "numa2", "numa2-split", "kmem", "cxl"])
def test_probe_agrees_with_kernel_tools(guest, topology, tmp_path):
    res = guest.capture(guest.TOPOLOGIES[topology], tmp_path, timeout=900)
    assert res.rc == 0, res.stderr[-2000:]
    cap = tmp_path / "raw" / "cap"
    assert (cap / "probe.rc").read_text().strip() == "0", (cap / "probe.err").read_text()
    profile = json.loads((cap / "probe.json").read_text())
    assert profile["source"]["kind"] == "live"
    cxl_list = (cap / "cxl-list.json").read_text()
    if topology == "cxl":
        # the setup made a pmem region (cxl create-region) and an fsdax namespace on it: the
        # memdev, the region with its decoders and mappings as cxl list shows them, and the
        # region libnvdimm got from it on the CXL bus, as ndctl shows it
        assert kc.cxl_items(cxl_list)["regions"], cxl_list
        assert kc.compare_cxl(profile["cxl"], cxl_list,
                              (cap / "cxl-list-vvv.json").read_text()) == []
        assert {r["provider"] for r in profile["pmem"]["regions"]} == {"CXL"}
    else:
        assert kc.compare_cxl(profile["cxl"], cxl_list) == []  # no CXL on either side
    assert profile["pmem"]["regions"]
    assert kc.compare_pmem(profile["pmem"], (cap / "ndctl-list-RNDv.json").read_text()) == []
    assert kc.compare_dax(profile["dax_devices"], (cap / "daxctl-list.json").read_text()) == []
    assert kc.compare_numa(profile["numa"], (cap / "numactl-H.txt").read_text()) == []
    mounts = (cap / "proc-mounts.txt").read_text()
    assert kc.dax_mounts(mounts)
    assert kc.compare_mounts(profile["mounts"], mounts) == []
    print(f"{topology}: boot {res.boot_seconds:.1f} s, total {res.total_seconds:.1f} s")


def test_guest_out_of_time_is_killed_and_removed(guest):
    """A guest that does not finish: one-line reason with the console's tail, no qemu left,
    no files left, and it returns within the limit (plus the kill)."""
    before = set(glob.glob(f"{tempfile.gettempdir()}/pmem-guest-*"))
    start = time.monotonic()
    with pytest.raises(guest.GuestError) as info:
        guest.run_guest(guest.TOPOLOGIES["nvdimm2"], "sleep 600", timeout=20)
    assert time.monotonic() - start < 60
    assert "did not finish within 20 s" in info.value.reason
    assert "\n" not in info.value.reason
    assert set(glob.glob(f"{tempfile.gettempdir()}/pmem-guest-*")) == before


def test_topology_setup_failure_is_reported(guest):
    """A step the kernel refuses ends the run with rc 90 and the step named."""
    import dataclasses

    topo = dataclasses.replace(guest.TOPOLOGIES["nvdimm2"],
                               setup="ndctl create-namespace -r region9 -m fsdax")
    res = guest.run_guest(topo, "true", timeout=300)
    assert res.rc == 90
    assert "SETUP-FAILED: ndctl create-namespace -r region9" in res.stderr
