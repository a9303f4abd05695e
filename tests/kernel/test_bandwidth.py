"""The bandwidth probe on a real kernel's PMEM, and xfs with -o dax, in one guest boot
(scripts/qemu_guest.py, topology ``bandwidth``): an ext4 -o dax mount on /dev/pmem0 and a
devdax device (``ndctl create-namespace -m devdax -a 2M``), each measured through libpmem
(the guest runs the host's userland, where libpmem is) and through the plain msync path (the
kernel built without libpmem, on the host, loaded in the guest in place of the installed
one); and xfs (``mkfs.xfs -m reflink=0``) mounted ``-o dax`` on a third NVDIMM, which the
probe must report as a DAX mount on PMEM as /proc/mounts shows it.

Results are checked for being right, not fast (TCG is slow): the fields a host run gives,
bytes moved at every point, libpmem's non-temporal path on the DAX targets, msync without
it, the NUMA node ndctl gives the namespace, no scratch file left behind.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sysconfig
import tempfile
from pathlib import Path

import pytest

from tests.probes import kernel_compare as kc

pytestmark = pytest.mark.kernel

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "probes" / "native" / "pmembw.c"
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
PLAIN = f"_pmembw{SUFFIX}"
MIB = 1 << 20

# Runs the CLI with the msync-only kernel in place of the installed one (the same source,
# built without HAVE_LIBPMEM on the host).
PLAIN_DRIVER = """\
import importlib.util, sys
spec = importlib.util.spec_from_file_location("pmem_advisor.probes._pmembw", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
assert mod.HAVE_LIBPMEM == 0, "not the msync-only build"
sys.modules["pmem_advisor.probes._pmembw"] = mod
from pmem_advisor.cli.main import main
sys.exit(main(sys.argv[2:]))
"""

SCRIPT = """
set +e
mkdir -p bw
PY={python}
BW="probe -q --json --quick --bandwidth /mnt/pmem0 --bandwidth /dev/dax1.0 --destructive"
$PY -m pmem_advisor.cli.main $BW --path /mnt/pmem0 {xfs} > bw/libpmem.json 2> bw/libpmem.err
echo $? > bw/libpmem.rc
ls -a /mnt/pmem0 > bw/after-libpmem.txt
$PY plain_driver.py ./{plain} $BW > bw/plain.json 2> bw/plain.err
echo $? > bw/plain.rc
ls -a /mnt/pmem0 > bw/after-plain.txt
cat /proc/mounts > bw/proc-mounts.txt
ndctl list -NRv > bw/ndctl-list-NRv.json 2> /dev/null
"""


def _plain_kernel(tmp_path: Path) -> bytes:
    """The bandwidth kernel built without libpmem (the plain msync path)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the msync-only kernel")
    out = tmp_path / PLAIN
    r = subprocess.run([cc, "-O3", "-std=gnu11", "-shared", "-fPIC",
                        f"-I{sysconfig.get_paths()['include']}", str(SRC), "-o", str(out),
                        "-lpthread"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out.read_bytes()


def _host_fields() -> tuple[set[str], set[str]] | None:
    """The fields of one bandwidth entry and of one point on this host (/dev/shm), the same
    code the guest runs; None where /dev/shm cannot hold the working set."""
    from pmem_advisor.errors import CapabilityMissing
    from pmem_advisor.probes.bandwidth import plan, runner, scratch
    from pmem_advisor.probes.bandwidth.topology import Topology

    try:
        runner.load_kernel()
    except CapabilityMissing:
        return None
    need = plan.working_set_bytes(Topology.live().llc_bytes) + scratch.FREE_MARGIN
    if not os.access("/dev/shm", os.W_OK) or scratch.free_bytes("/dev/shm") < need:
        return None
    d = tempfile.mkdtemp(prefix="pmem-advisor-test-", dir="/dev/shm")
    try:
        entry = runner.measure_paths([d], quick=True, threads=[1])[0]
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return set(entry), set(entry["points"][0])


def _entries(cap: Path, run: str) -> dict[str, dict]:
    assert (cap / f"{run}.rc").read_text().strip() == "0", (cap / f"{run}.err").read_text()
    profile = json.loads((cap / f"{run}.json").read_text())
    return {e["path"]: e for e in profile["bandwidth"]}, profile


def test_bandwidth_probe_and_xfs_dax_on_a_real_kernel(guest, tmp_path, run_cli):
    xfs_missing = guest.ensure_xfsprogs()
    files = {PLAIN: _plain_kernel(tmp_path), "plain_driver.py": PLAIN_DRIVER.encode()}
    python = REPO / ".venv" / "bin" / "python"
    script = SCRIPT.format(python=python, plain=PLAIN,
                           xfs="" if xfs_missing else "--path /mnt/xfs0")
    res = guest.run_guest(guest.TOPOLOGIES["bandwidth"], script, timeout=1800,
                          files=files, keep=tmp_path / "raw")
    assert res.rc == 0, res.stderr[-3000:]
    cap = tmp_path / "raw" / "bw"
    ndctl = kc.ndctl_items((cap / "ndctl-list-NRv.json").read_text())["namespaces"]
    fsdax = next(n for n in ndctl if n.get("blockdev") == "pmem0")
    devdax = next(n for n in ndctl if n["mode"] == "devdax")
    assert fsdax["mode"] == "fsdax"
    assert [d["chardev"] for d in devdax["daxregion"]["devices"]] == ["dax1.0"]
    host = _host_fields()

    libpmem, profile = _entries(cap, "libpmem")
    plain, _ = _entries(cap, "plain")
    # libpmem: non-temporal copies on both; plain: msync on the file, and on devdax (no
    # fsync there: msync fails with EINVAL) each line flushed with CLFLUSH
    methods = {("libpmem", "/mnt/pmem0"): "libpmem-nt", ("libpmem", "/dev/dax1.0"): "libpmem-nt",
               ("plain", "/mnt/pmem0"): "msync", ("plain", "/dev/dax1.0"): "clflush"}
    for run, entries in (("libpmem", libpmem), ("plain", plain)):
        assert sorted(entries) == ["/dev/dax1.0", "/mnt/pmem0"], run
        for path, e in entries.items():
            ns = devdax if path.startswith("/dev/") else fsdax
            where = f"{run} {path}"
            assert e["libpmem"] is (run == "libpmem"), where
            assert e["persist_method"] == methods[run, path], where
            assert e["is_pmem"] is (run == "libpmem"), where
            assert e["target"] == ("devdax" if ns is devdax else "scratch-file"), where
            if ns is fsdax:
                assert e["fstype"] == "ext4", where
            assert e["path_numa_node"] == ns.get("numa_node", 0), where
            assert e["numa_node"] == e["path_numa_node"], where
            assert 64 * MIB <= e["working_set_bytes"] <= ns["size"], where
            assert e["points"] and all(p["bytes"] > 0 and p["gbps"] > 0 for p in e["points"]), \
                where
            assert e["peak_read_gbps"] > 0 and e["peak_write_gbps"] > 0, where
            assert e["idle_latency_ns"] and e["persist_latency_ns"], where
            if host is not None:  # the same fields as on a host
                assert set(e) == host[0], (where, set(e) ^ host[0])
                assert {k for p in e["points"] for k in p} == host[1], where
    for run in ("libpmem", "plain"):  # the scratch file is gone, the mount otherwise intact
        left = (cap / f"after-{run}.txt").read_text().split()
        assert not [n for n in left if n.startswith(".pmem-advisor-bw-")], (run, left)
        assert "lost+found" in left

    mounts = (cap / "proc-mounts.txt").read_text()
    assert kc.compare_mounts(profile["mounts"], mounts) == []
    if xfs_missing:
        assert "NO-MKFS-XFS" in res.stderr
        pytest.skip(f"xfs -o dax not run: {xfs_missing} (the ext4 and devdax checks passed)")
    line = next(ln.split() for ln in mounts.splitlines() if ln.split()[1:2] == ["/mnt/xfs0"])
    assert line[0] == "/dev/pmem2" and line[2] == "xfs"
    assert kc.dax_mounts(mounts)["/mnt/xfs0"] in ("dax", "dax=always")
    xfs = next(p for p in profile["paths"] if p["path"] == "/mnt/xfs0")
    assert (xfs["fstype"], xfs["dax"], xfs["medium"]) == ("xfs", "always", "pmem"), xfs
    mount = next(m for m in profile["mounts"] if m["mountpoint"] == "/mnt/xfs0")
    assert mount["dax"] == "always"
    # the verdict on it, from the guest's profile: data there is PMEM with DAX on
    prof = tmp_path / "guest-profile.json"
    prof.write_text(json.dumps(profile))
    code, out, err = run_cli("check", "postgres", "--version", "16", "--profile", str(prof),
                             "--data-dir", "/mnt/xfs0/pg", "--no-project", "--json")
    assert code in (0, 1), err
    findings = json.loads(out)["findings"]
    assert not [f for f in findings if f["rule"] in ("CK011", "PM003")], findings
    assert [f["message"] for f in findings if f["rule"] == "PM002"][0].startswith(
        "data and WAL on PMEM")
    print(f"bandwidth guest: boot {res.boot_seconds:.1f} s, total {res.total_seconds:.1f} s")
