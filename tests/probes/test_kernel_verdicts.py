"""The check rules' verdicts on snapshots a real kernel produced (Debian 6.1 in QEMU, the
fixtures tests/probes/fixtures/kernel-6.1-*): `check` and `recommend` run with ``--root
snapshot.tar.gz`` and a data directory on the guest's DAX mount or off it, and every verdict
that depends on the kernel is held against what the kernel's own tools printed in the same
guest (/proc/mounts, ``ndctl list``, ``daxctl list``, ``numactl -H``), never against values
typed here: the DAX mount and its device, the namespace modes and dax devices, the nodes with
and without CPUs.

No QEMU is needed: the snapshots are the fixtures (scripts/qemu_guest.py capture made them).
Where a verdict has only one side on the real capture (every captured PMEM mount has DAX on),
the other side runs on the same tree with one fact changed the way the kernel would show it
(the mount's dax option removed or spelt ``dax=inode`` in mountinfo), said in the test.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from tests.probes import kernel_compare as kc

FIXTURES = Path(__file__).parent / "fixtures"
NVDIMM = ["kernel-6.1-nvdimm2", "kernel-6.1-numa2", "kernel-6.1-kmem"]
OFF_DAX = "/var/lib/pmem-advisor-test/pg"  # in the guest: on / (the host's root over 9p)


def snapshot(name: str) -> str:
    return str(FIXTURES / name / "snapshot.tar.gz")


def _read(name: str, file: str) -> str:
    return (FIXTURES / name / file).read_text()


class Kernel:
    """What the kernel's tools said in the guest the snapshot was taken in."""

    def __init__(self, name: str) -> None:
        self.name = name
        mounts = _read(name, "proc-mounts.txt")
        dax = kc.dax_mounts(mounts)
        assert len(dax) == 1, f"{name}: the topology mounts one DAX filesystem: {dax}"
        (self.mountpoint, self.dax_option), = dax.items()
        self.device = next(line.split()[0] for line in mounts.splitlines()
                           if line.split()[1:2] == [self.mountpoint])
        items = kc.ndctl_items(_read(name, "ndctl-list-RNDv.json"))
        self.namespaces = items["namespaces"]
        self.mount_ns = next(n for n in self.namespaces
                             if n.get("blockdev") == self.device.removeprefix("/dev/"))
        self.devdax = [d["chardev"] for n in self.namespaces if n["mode"] == "devdax"
                       for d in n["daxregion"]["devices"]]
        daxctl = json.loads(_read(name, "daxctl-list.json") or "[]")
        self.dax_modes = {d["chardev"]: d.get("mode") for d in
                          ([daxctl] if isinstance(daxctl, dict) else daxctl)}
        numa = kc.parse_numactl(_read(name, "numactl-H.txt"))["nodes"]
        self.cpu_nodes = sorted(n for n, v in numa.items() if v["cpus"])
        self.cpuless_nodes = sorted(n for n, v in numa.items() if not v["cpus"])
        self.node_cpus = {n: v["cpus"] for n, v in numa.items()}


def _json(run_cli, *args: str, ok=(0, 1)) -> dict:
    code, out, err = run_cli(*args)
    assert code in ok, (code, err[-2000:])
    return json.loads(out)


def check(run_cli, root: str, engine: str, data_dir: str, *extra: str) -> dict:
    return _json(run_cli, "check", engine, "--version", VERSIONS[engine], "--root", root,
                 "--data-dir", data_dir, "--no-project", "--json", *extra)


def recommend(run_cli, root: str, engine: str, *extra: str) -> dict:
    # the guests have about 1 GiB: 10 clients fit it (the default 300 would not)
    return _json(run_cli, "recommend", engine, "--version", VERSIONS[engine], "--root", root,
                 "--clients", "10", "--json", *extra, ok=(0,))


VERSIONS = {"postgres": "16", "opengauss_mot": "5.0"}


def by_rule(findings: list[dict], rule: str) -> list[dict]:
    return [f for f in findings if f["rule"] == rule]


@pytest.mark.parametrize("name", NVDIMM)
def test_data_on_the_dax_mount(name, run_cli):
    """Data under the mount /proc/mounts shows with dax=always: PMEM with DAX on, so no
    'PMEM without DAX' verdict (CK011/PM003), the placement the papers favour (PM002), and
    recommend sizes PostgreSQL for no page cache (PM011's DAX branch)."""
    k = Kernel(name)
    assert k.dax_option in ("dax", "dax=always")
    data = f"{k.mountpoint}/pg"
    report = check(run_cli, snapshot(name), "postgres", data)
    f = report["findings"]
    assert not by_rule(f, "CK011") and not by_rule(f, "PM003"), f
    pm002 = by_rule(f, "PM002")
    assert [x["subject"] for x in pm002] == [f"data:{data}"]
    assert "data and WAL on PMEM" in pm002[0]["message"]
    dev = k.device.removeprefix("/dev/")
    assert f"data {data}: medium: pmem (a persistent memory namespace, {dev})" in \
        report["notes"]
    # the namespace under it is fsdax (ndctl): no namespace-mode verdict for PostgreSQL
    assert k.mount_ns["mode"] == "fsdax"
    assert not [x for x in by_rule(f, "PM008") if x["subject"] == "pmem.namespaces"]

    rec = recommend(run_cli, snapshot(name), "postgres", "--data-dir", data)
    assert rec["target"]["data_medium"] == "pmem"
    rules = {s["name"]: s["rule"] for s in rec["settings"]}
    assert rules["shared_buffers"] == rules["effective_cache_size"] == "PM011"
    assert rules["random_page_cost"] == "PM011"


@pytest.mark.parametrize("name", NVDIMM)
def test_data_off_the_dax_mount(name, run_cli):
    """Data on the guest's root (9p, no PMEM): PM002 names the DAX mount it should be under,
    and recommend keeps the page-cache sizing (no PM011 shared_buffers)."""
    k = Kernel(name)
    report = check(run_cli, snapshot(name), "postgres", OFF_DAX)
    pm002 = by_rule(report["findings"], "PM002")
    assert len(pm002) == 1
    assert f"a PMEM mount exists at {k.mountpoint} but the data is not on it" in \
        pm002[0]["message"]
    assert pm002[0]["fix"] == f"place the data directory under {k.mountpoint}"
    assert not by_rule(report["findings"], "CK011")  # the PMEM mount has DAX on

    rec = recommend(run_cli, snapshot(name), "postgres", "--data-dir", OFF_DAX)
    assert rec["target"]["data_medium"] != "pmem"
    rules = {s["name"]: s["rule"] for s in rec["settings"]}
    assert rules["shared_buffers"] != "PM011"
    # recommend says the directory is on no mount of the snapshot but / (never silently)
    assert any(f"data directory {OFF_DAX} is on no mount of the snapshot" in n
               for n in rec["notes"]), rec["notes"]


def _tree_with_dax_option(tmp_path: Path, name: str, mountpoint: str, option: str | None
                          ) -> str:
    """The snapshot unpacked, the DAX mount's dax option in mountinfo replaced by ``option``
    (None: removed), as the kernel shows a mount made without it; probed as a root tree."""
    with tarfile.open(snapshot(name)) as tar:
        # our own committed fixtures; the filter only where this Python has it (3.11.4+)
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter")
                                    else {}))
    info = tmp_path / "proc/self/mountinfo"
    lines = []
    changed = 0
    for line in info.read_text().splitlines():
        fields = line.split(" ")
        if fields[4] == mountpoint:
            sep = fields.index("-")
            opts = [o for o in fields[sep + 3].split(",") if o != "dax" and
                    not o.startswith("dax=")]
            fields[sep + 3] = ",".join(opts + ([option] if option else []))
            changed += 1
        lines.append(" ".join(fields))
    assert changed == 1, f"{mountpoint} not once in the snapshot's mountinfo"
    info.chmod(0o644)  # captured read-only (sysfs/procfs modes): root alone writes it as is
    info.write_text("\n".join(lines) + "\n")
    return str(tmp_path)


@pytest.mark.parametrize("option, severity", [(None, "fail"), ("dax=inode", "warn")])
def test_pmem_mount_without_dax(option, severity, tmp_path, run_cli):
    """The same real tree with the mount made without -o dax (or with dax=inode): now the
    data is on PMEM through the page cache, CK011 says so for the mount with the remount fix
    for the device /proc/mounts names, and recommend drops PM011's no-page-cache sizing."""
    k = Kernel("kernel-6.1-nvdimm2")
    root = _tree_with_dax_option(tmp_path, k.name, k.mountpoint, option)
    data = f"{k.mountpoint}/pg"
    report = check(run_cli, root, "postgres", data)
    ck011 = by_rule(report["findings"], "CK011")
    assert [(x["severity"], x["subject"]) for x in ck011] == [
        (severity, f"mount:{k.mountpoint}")]
    assert ck011[0]["fix"] == (f"umount {k.mountpoint} && mount -o dax=always {k.device} "
                               f"{k.mountpoint}")
    assert "It holds the data, wal." in ck011[0]["message"]
    code, _, _ = run_cli("check", "postgres", "--version", "16", "--root", root,
                         "--data-dir", data, "--no-project", "--json")
    assert code == 1
    rec = recommend(run_cli, root, "postgres", "--data-dir", data)
    rules = {s["name"]: s["rule"] for s in rec["settings"]}
    assert rules.get("shared_buffers") != "PM011"


@pytest.mark.parametrize("name", ["kernel-6.1-nvdimm2", "kernel-6.1-numa2"])
def test_devdax_namespace_for_a_memory_engine(name, run_cli):
    """openGauss MOT takes PMEM as memory: the devdax namespace ndctl shows is the one to
    online as system RAM (PM085's step, destructive: its contents are lost)."""
    k = Kernel(name)
    assert len(k.devdax) == 1 and k.dax_modes[k.devdax[0]] == "devdax"
    rec = recommend(run_cli, snapshot(name), "opengauss_mot")
    steps = [s for s in rec["os_steps"] if s["rule"] == "PM085"]
    assert [(s["command"], s["destructive"]) for s in steps] == [
        (f"daxctl reconfigure-device --mode=system-ram {k.devdax[0]}", True)]


def test_kmem_node_is_memory_not_a_pin_target(run_cli):
    """kmem: daxctl shows the devdax device as system-ram and numactl a CPU-less node.
    MOT is told that PMEM is already memory on that node (no destructive step), and
    PostgreSQL is neither pinned to it nor interleaved over it (one node has CPUs)."""
    k = Kernel("kernel-6.1-kmem")
    assert list(k.dax_modes.values()) == ["system-ram"]
    assert k.cpuless_nodes and len(k.cpu_nodes) == 1
    rec = recommend(run_cli, snapshot(k.name), "opengauss_mot")
    pm085 = by_rule(rec["findings"], "PM085")
    nodes = ", ".join(map(str, k.cpuless_nodes))
    assert len(pm085) == 1
    assert pm085[0]["message"].startswith(f"PMEM is online as memory on node(s) {nodes}:")
    assert not [s for s in rec["os_steps"] if s["rule"] == "PM085"]

    data = f"{k.mountpoint}/pg"
    rec = recommend(run_cli, snapshot(k.name), "postgres", "--data-dir", data)
    assert not [s for s in rec["os_steps"] if "numactl" in s["command"]]
    assert rec["target"]["bound_node"] is None
    rec = recommend(run_cli, snapshot(k.name), "postgres", "--data-dir", data,
                    "--interleave-cpuless")
    assert not [s for s in rec["os_steps"] if "numactl" in s["command"]]


def test_numa2_pins_to_the_node_of_the_data(run_cli):
    """numa2: the data's namespace is on the node ndctl gives it; a server that fits that
    node's CPUs is bound there (PM004, with that node's CPUs from numactl), one that needs
    both nodes' CPUs interleaves over the nodes with CPUs (PM005); data and WAL on the same
    node's PMEM: no cross-socket verdict (CK010), no firmware-bug warning."""
    k = Kernel("kernel-6.1-numa2")
    node = k.mount_ns["numa_node"]
    assert len(k.cpu_nodes) == 2 and node in k.cpu_nodes
    data = f"{k.mountpoint}/pg"
    rec = recommend(run_cli, snapshot(k.name), "postgres", "--data-dir", data, "--cpus", "1")
    cpus = ",".join(map(str, k.node_cpus[node]))
    assert [(s["rule"], s["command"]) for s in rec["os_steps"]] == [
        ("PM004", f"numactl --cpunodebind={node} --membind={node} postgres -D {data}"),
        ("PM004", f"systemd drop-in: [Service] NUMAPolicy=bind NUMAMask={node} "
                  f"CPUAffinity={cpus}")]
    assert rec["target"]["bound_node"] == node

    rec = recommend(run_cli, snapshot(k.name), "postgres", "--data-dir", data)
    nodes = f"{k.cpu_nodes[0]}-{k.cpu_nodes[-1]}"
    assert [(s["rule"], s["command"]) for s in rec["os_steps"]][0] == (
        "PM005", f"numactl --interleave={nodes} postgres -D {data}")

    report = check(run_cli, snapshot(k.name), "postgres", data)
    assert not by_rule(report["findings"], "CK010")
    assert not [x for x in report["findings"] if "firmware bug" in x["message"]]


def test_single_node_gets_no_numa_policy(run_cli):
    """nvdimm2: one node (numactl) holds the CPUs and both regions: nothing to pin or
    interleave."""
    k = Kernel("kernel-6.1-nvdimm2")
    assert len(k.cpu_nodes) == 1 and not k.cpuless_nodes
    rec = recommend(run_cli, snapshot(k.name), "postgres", "--data-dir",
                    f"{k.mountpoint}/pg", "--cpus", "1")
    assert not [s for s in rec["os_steps"] if "numactl" in s["command"]]


def test_root_takes_a_snapshot_archive_or_says_what_is_wrong(tmp_path, run_cli):
    """--root of check/recommend: a snapshot .tar.gz as probe takes it; a file that is not a
    snapshot is a one-line input error (exit 2), not a traceback."""
    bad = tmp_path / "not-a-snapshot.tar.gz"
    bad.write_bytes(b"no tar here")
    for verb in (["check", "postgres", "--no-project"], ["recommend", "postgres"]):
        code, out, err = run_cli(*verb, "--version", "16", "--root", str(bad))
        assert code == 2, (code, err)
        assert "corrupt or unreadable snapshot" in err and "Traceback" not in err


BANDWIDTH = FIXTURES / "kernel-6.1-bandwidth"


def _guest_profile(tmp_path: Path, dax: str | None = "always") -> str:
    """The profile `probe --bandwidth ... --path /mnt/xfs0` printed in the guest (xfs -o dax
    on /dev/pmem2), with the xfs mount's dax as given (None: mounted without it)."""
    profile = json.loads((BANDWIDTH / "probe-libpmem.json").read_text())
    for entry in [*profile["mounts"], *profile["paths"]]:
        if entry.get("mountpoint") == "/mnt/xfs0":
            entry["dax"] = dax
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile))
    return str(path)


def test_xfs_dax_mount_from_the_guest(tmp_path, run_cli):
    """xfs mounted -o dax in the guest: /proc/mounts spells it dax=always among xfs's own
    options, the probe reports that mount (and no other) as DAX on PMEM, and the guest's
    profile, bandwidth results included, is one check and recommend take (--profile): data
    on it is PMEM with DAX on."""
    mounts = (BANDWIDTH / "proc-mounts.txt").read_text()
    assert kc.dax_mounts(mounts)["/mnt/xfs0"] == "dax=always"
    profile = json.loads((BANDWIDTH / "probe-libpmem.json").read_text())
    assert kc.compare_mounts(profile["mounts"], mounts) == []
    xfs = next(p for p in profile["paths"] if p["path"] == "/mnt/xfs0")
    assert (xfs["fstype"], xfs["dax"], xfs["medium"], xfs["base_device"]) == (
        "xfs", "always", "pmem", "pmem2")
    assert profile["bandwidth"], "the guest's profile holds its bandwidth runs"

    prof = _guest_profile(tmp_path)
    report = _json(run_cli, "check", "postgres", "--version", "16", "--profile", prof,
                   "--data-dir", "/mnt/xfs0/pg", "--no-project", "--json")
    f = report["findings"]
    assert not by_rule(f, "CK011") and not by_rule(f, "PM003"), f
    assert by_rule(f, "PM002")[0]["message"].startswith("data and WAL on PMEM")
    rec = _json(run_cli, "recommend", "postgres", "--version", "16", "--profile", prof,
                "--clients", "10", "--data-dir", "/mnt/xfs0/pg", "--json", ok=(0,))
    assert rec["target"]["data_medium"] == "pmem"
    rules = {s["name"]: s["rule"] for s in rec["settings"]}
    assert rules["shared_buffers"] == "PM011"  # no page cache under DAX


def test_xfs_dax_mount_in_the_snapshot(run_cli):
    """The snapshot `capture --topology bandwidth` took (a second boot of the same topology):
    data on the xfs DAX mount, on the ext4 one, and off both."""
    root = str(BANDWIDTH / "snapshot.tar.gz")
    mounts = kc.dax_mounts((BANDWIDTH / "proc-mounts.txt").read_text())
    assert sorted(mounts) == ["/mnt/pmem0", "/mnt/xfs0"]
    for mp in mounts:
        f = check(run_cli, root, "postgres", f"{mp}/pg")["findings"]
        assert not by_rule(f, "CK011") and not by_rule(f, "PM003"), (mp, f)
        assert by_rule(f, "PM002")[0]["message"].startswith("data and WAL on PMEM"), mp
    pm002 = by_rule(check(run_cli, root, "postgres", OFF_DAX)["findings"], "PM002")
    # two DAX mounts: the advice names one of them
    assert any(f"a PMEM mount exists at {mp} but the data is not on it" in pm002[0]["message"]
               for mp in mounts), pm002


def test_profile_with_bandwidth_points_is_accepted(tmp_path, run_cli):
    """A bandwidth point's "node" is "near" or "far", not a node id: --profile once refused
    every profile `probe --bandwidth --json` wrote ('... points[0].node must be a number')."""
    for name in ("probe-libpmem.json", "probe-plain.json"):
        code, _, err = run_cli("recommend", "postgres", "--version", "16", "--clients", "10",
                               "--profile", str(BANDWIDTH / name), "--json")
        assert code == 0, err
    bad = json.loads((BANDWIDTH / "probe-plain.json").read_text())
    bad["bandwidth"][0]["numa_node"] = "near"  # a real node id field stays checked
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    code, _, err = run_cli("recommend", "postgres", "--version", "16", "--profile", str(path))
    assert code == 2 and "'bandwidth[0].numa_node' must be a number" in err


def test_xfs_without_dax_from_the_guest(tmp_path, run_cli):
    """The same profile with the xfs mount made without -o dax: CK011 fails the data there
    with the remount fix for the device the guest mounted."""
    prof = _guest_profile(tmp_path, dax=None)
    report = _json(run_cli, "check", "postgres", "--version", "16", "--profile", prof,
                   "--data-dir", "/mnt/xfs0/pg", "--no-project", "--json")
    ck011 = by_rule(report["findings"], "CK011")
    assert [(x["severity"], x["subject"]) for x in ck011] == [("fail", "mount:/mnt/xfs0")]
    assert ck011[0]["fix"] == "umount /mnt/xfs0 && mount -o dax=always /dev/pmem2 /mnt/xfs0"


SPLIT = "kernel-6.1-numa2-split"


def _split_mounts() -> dict[str, int]:
    """numa2-split: {DAX mountpoint: the NUMA node ndctl gives the namespace under it}, from
    /proc/mounts and ``ndctl list`` as the guest printed them."""
    mounts = _read(SPLIT, "proc-mounts.txt")
    device = {line.split()[1]: line.split()[0] for line in mounts.splitlines()}
    node_of = {f"/dev/{n['blockdev']}": n["numa_node"]
               for n in kc.ndctl_items(_read(SPLIT, "ndctl-list-RNDv.json"))["namespaces"]
               if n.get("blockdev")}
    return {mp: node_of[device[mp]] for mp in kc.dax_mounts(mounts)}


def test_ck010_data_and_wal_on_different_nodes_pmem(run_cli):
    """numa2-split: an fsdax namespace with ext4 -o dax on each node's NVDIMM. Data on one
    node's DAX mount and the WAL on the other's is CK010's anti-pattern: a warning naming both
    nodes as ndctl gives them, the fix naming the data's node; either way round. Data and WAL
    on one mount: no CK010."""
    on = _split_mounts()
    assert len(on) == 2 and len(set(on.values())) == 2, on
    for data_mp, wal_mp in (sorted(on), sorted(on, reverse=True)):
        data, wal = f"{data_mp}/pg", f"{wal_mp}/wal"
        dn, wn = on[data_mp], on[wal_mp]
        report = check(run_cli, snapshot(SPLIT), "postgres", data, "--wal-dir", wal)
        f = report["findings"]
        ck010 = by_rule(f, "CK010")
        assert [(x["severity"], x["subject"]) for x in ck010] == [("warn", "placement")], f
        assert ck010[0]["message"].startswith(
            f"data {data} is on node {dn}'s PMEM, the WAL {wal} on node {wn}'s:")
        assert ck010[0]["fix"] == (f"put the WAL on node {dn}'s PMEM next to the data, and "
                                   f"pin the server to node {dn}")
        assert not by_rule(f, "CK011")  # both mounts have DAX on
    for mp in on:
        report = check(run_cli, snapshot(SPLIT), "postgres", f"{mp}/pg", "--wal-dir",
                       f"{mp}/wal")
        assert not by_rule(report["findings"], "CK010")


def test_data_on_the_cxl_dax_mount(run_cli):
    """cxl: ext4 -o dax on an fsdax namespace of the nd region cxl_pmem made from the CXL
    pmem region. /proc/mounts shows dax=always: no 'PMEM without DAX' (CK011/PM003), PM002's
    data and WAL on PMEM, the medium is CXL memory on the device /proc/mounts names; ndctl
    gives the region persistence_domain memory_controller (unlike QEMU's NFIT), so no CK009;
    recommend sizes PostgreSQL for no page cache (PM011)."""
    k = Kernel("kernel-6.1-cxl")
    assert k.dax_option == "dax=always"
    assert kc.cxl_items(_read(k.name, "cxl-list.json"))["regions"]
    region = next(r for r in kc.ndctl_items(_read(k.name, "ndctl-list-RNDv.json"))["regions"]
                  if r["dev"] == k.mount_ns["region"])
    assert region["persistence_domain"] == "memory_controller"
    data = f"{k.mountpoint}/pg"
    report = check(run_cli, snapshot(k.name), "postgres", data)
    f = report["findings"]
    assert not by_rule(f, "CK011") and not by_rule(f, "PM003"), f
    assert not by_rule(f, "CK009"), f
    assert by_rule(f, "PM002")[0]["message"].startswith("data and WAL on PMEM")
    dev = k.device.removeprefix("/dev/")
    assert f"data {data}: medium: cxl (CXL memory, {dev})" in report["notes"]
    # PM009 counts the memdevs and their capacity as `cxl list` gives them, with a unit: a
    # 256 MiB device once read "0 GiB persistent"
    memdevs = kc.cxl_items(_read(k.name, "cxl-list.json"))["memdevs"]
    pmem = sum(int(m.get("pmem_size") or 0) for m in memdevs.values())
    assert pmem == 256 << 20
    pm009 = by_rule(f, "PM009")
    assert pm009 and pm009[0]["message"].startswith(
        f"CXL memory: {len(memdevs)} memdev(s), 0 B volatile, 256.0 MiB persistent"), pm009
    rec = recommend(run_cli, snapshot(k.name), "postgres", "--data-dir", data)
    assert rec["target"]["data_medium"] == "cxl"
    rules = {s["name"]: s["rule"] for s in rec["settings"]}
    assert rules["shared_buffers"] == rules["effective_cache_size"] == "PM011"
