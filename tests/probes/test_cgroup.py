"""Issue 18: the limits a server really runs under, read from captured cgroup trees."""

from __future__ import annotations

import os
import shutil

import pytest

from pmem_advisor.probes.profile import probe
from pmem_advisor.probes.sysaccess import SysAccess
from pmem_advisor.rules.budget import effective_budget
from tests.probes.machine_builder import build, load_description, machine_names

LIMIT_MACHINES = [n for n in machine_names() if load_description(n).get("expect_budget")]


def _probe(root, paths=(), **kw) -> dict:
    return probe(SysAccess(str(root), kind="root"), list(paths), measure=False, **kw)


@pytest.mark.parametrize("name", LIMIT_MACHINES)
def test_budget_lines_say_value_and_source(name, tmp_path):
    """The budget each captured machine gives, stated by hand in its machine.yaml."""
    desc = load_description(name)
    p = _probe(build(name, tmp_path / name), desc.get("paths", []),
               cgroup=desc.get("probe_cgroup"))
    assert effective_budget(p).describe() == desc["expect_budget"]
    assert p["warnings"] == [] and p["limits"]["warnings"] == []


def test_container_v2_limits(tmp_path):
    p = _probe(build("container-v2", tmp_path / "c"))
    lim = p["limits"]
    assert lim["cgroup"]["version"] == 2 and lim["cgroup"]["path"] == "/"
    assert (lim["memory_max_bytes"], lim["cpu_quota_cpus"], lim["swap_max_bytes"]) == \
        (4 << 30, 2.0, 0)
    assert lim["memory_high_bytes"] is None  # "max"
    b = effective_budget(p)
    assert (b.memory_bytes, b.cpus, b.whole_cpus) == (4 << 30, 2.0, 2)


def test_cgroup_v1_tightest_ancestor_and_swap(tmp_path):
    p = _probe(build("cgroup-v1-host", tmp_path / "v1"))
    lim = p["limits"]
    assert lim["cgroup"]["version"] == 1
    assert lim["cgroup"]["path"] == "/system.slice/mariadb.service"
    assert lim["memory_max_bytes"] == 8 << 30 and lim["swap_max_bytes"] == 2 << 30
    assert lim["cpu_quota_cpus"] == 1.5
    assert lim["cgroup"]["controllers"]["cpu"]["dir"] == \
        "/sys/fs/cgroup/cpu,cpuacct/system.slice/mariadb.service"


def test_systemd_unit_found_in_its_template_slice(tmp_path):
    root = build("systemd-slice", tmp_path / "s")
    p = _probe(root, cgroup="postgresql@18-main.service")
    lim = p["limits"]
    assert lim["cgroup"]["path"] == \
        "/system.slice/system-postgresql.slice/postgresql@18-main.service"
    assert lim["cgroup"]["source"] == "unit postgresql@18-main.service"
    # the slice's MemoryMax (6 GiB) binds the service too; its own MemoryHigh is tighter
    assert lim["memory_max_bytes"] == 6 << 30 and lim["memory_high_bytes"] == 5 << 30
    assert lim["cpuset_cpus"] == list(range(8))
    # The same machine without --cgroup: the login shell's cgroup, no limits.
    own = _probe(root)["limits"]
    assert own["cgroup"]["path"] == "/user.slice/user-0.slice/session-3.scope"
    assert own["memory_max_bytes"] is None
    # A cgroup given as a path (relative to the hierarchy, or the full /sys/fs/cgroup path).
    for given in ("/system.slice/system-postgresql.slice",
                  "/sys/fs/cgroup/system.slice/system-postgresql.slice"):
        assert _probe(root, cgroup=given)["limits"]["memory_max_bytes"] == 6 << 30


def test_unknown_unit_warns_and_falls_back_to_host(tmp_path):
    p = _probe(build("systemd-slice", tmp_path / "s"), cgroup="nosuch.service")
    assert any("unit nosuch.service: not found" in w for w in p["warnings"])
    b = effective_budget(p)
    assert b.memory_source == "host MemTotal" and b.cpus == 32
    assert any("limit not read" in n and "nosuch.service" in n for n in b.describe())


def test_cpuset_narrower_than_a_node(tmp_path):
    p = _probe(build("cpuset-narrow", tmp_path / "n"))
    b = effective_budget(p)
    assert b.cpu_list == [2, 3, 4, 5] and b.nodes == [0]
    assert b.memory_bytes == 65536000 * 1024  # node 0's memory, not the host's
    # --numa-node 1 outside the cpuset's memory nodes: said, and the binding is used.
    b1 = effective_budget(p, numa_node=1)
    assert b1.nodes == [1] and any("outside the cpuset" in n for n in b1.notes)


def test_user_flags_only_tighten(tmp_path):
    p = _probe(build("container-v2", tmp_path / "c"))
    b = effective_budget(p, memory_bytes=8 << 30, cpus=8)
    assert (b.memory_bytes, b.cpus) == (4 << 30, 2.0)
    assert any("--memory 8.0 GiB is more than the cgroup memory.max allows" in n
               for n in b.notes)
    b = effective_budget(p, memory_bytes=1 << 30, cpus=1)
    assert (b.memory_source, b.cpus_source) == ("--memory", "--cpus")
    assert b.describe()[0] == "memory: 1.0 GiB from --memory (host 251.8 GiB)"


def test_huge_page_pool(tmp_path):
    lim = _probe(build("hugepage-pool", tmp_path / "h"))["limits"]
    assert lim["thp"] == "never" and lim["hugepages"]["default_size_bytes"] == 2 << 20
    pool = lim["hugepages"]["pools"][0]
    assert pool == {"size_bytes": 2 << 20, "total": 16384, "free": 16384, "reserved": 0,
                    "surplus": 0}


@pytest.mark.parametrize("content,expect", [
    ("max", "memory.max = max: no memory limit"),
    ("4G", "memory.max: malformed"),
    ("", None),
    ("-5", None),
])
def test_bad_memory_max_falls_back_to_host(tmp_path, content, expect):
    root = build("container-v2", tmp_path / "c")
    (root / "sys/fs/cgroup/memory.max").write_text(content + "\n")
    p = _probe(root)
    b = effective_budget(p)
    assert b.memory_source == "host MemTotal" and b.memory_bytes == 264056832 * 1024
    if expect:
        assert any(expect in line for line in b.describe())
    if "malformed" in (expect or ""):
        assert any("/sys/fs/cgroup/memory.max: malformed" in w for w in p["warnings"])


def test_unreadable_and_missing_cgroup_files(tmp_path):
    root = build("container-v2", tmp_path / "c")
    cg = root / "sys/fs/cgroup"
    os.unlink(cg / "cpu.max")
    (cg / "cpu.max").mkdir()  # reading a directory fails even for root: "unreadable"
    (cg / "cpuset.cpus.effective").write_text("0-x\n")
    p = _probe(root)
    assert any(w.startswith("/sys/fs/cgroup/cpu.max: unreadable") for w in p["warnings"])
    assert any("cpuset.cpus.effective: malformed" in w for w in p["warnings"])
    b = effective_budget(p)
    assert b.cpus == 64 and b.memory_bytes == 4 << 30  # what could be read still counts
    (root / "proc/self/cgroup").write_text("garbage\n")
    shutil.rmtree(cg)
    p = _probe(root)
    assert any("/proc/self/cgroup:1: malformed" in w for w in p["warnings"])
    assert effective_budget(p).memory_source == "host MemTotal"


def test_no_cgroup_mounted(tmp_path):
    p = _probe(build("interleaved-2s-fsdax", tmp_path / "i"))
    assert p["limits"]["cgroup"] is None and p["warnings"] == []
    assert effective_budget(p).memory_source == "host MemTotal"


def test_live_shell_cgroup():
    """On this machine the probe reads the cgroup this very process is in."""
    p = probe(SysAccess("/"), [], measure=False)
    lines = open("/proc/self/cgroup").read().splitlines()
    mem = [x.split(":", 2)[2] for x in lines if "memory" in x.split(":", 2)[1].split(",")]
    want = mem[0] if mem else next(x.split(":", 2)[2] for x in lines if x.startswith("0::"))
    assert p["limits"]["cgroup"]["path"] == want
    assert p["limits"]["warnings"] == []


def test_live_cgroup_path_reads_its_limit():
    """A cgroup made here with a 2 GiB limit (as issue 13's managed servers get) reads 2 GiB."""
    from pmem_advisor.probes.mounts import read_mount_table
    from pmem_advisor.probes.reading import ProbeContext

    table = read_mount_table(ProbeContext(SysAccess("/")))
    v1 = next((x["mountpoint"] for x in table
               if x["fstype"] == "cgroup" and "memory" in x["options"]), None)
    v2 = next((x["mountpoint"] for x in table if x["fstype"] == "cgroup2"), None)
    if v1:
        base, limit_file = v1, "memory.limit_in_bytes"
    elif v2 and "memory" in open(os.path.join(v2, "cgroup.controllers")).read().split():
        base, limit_file = v2, "memory.max"
    else:
        pytest.skip("no memory cgroup controller mounted here")
    name = f"pmem-advisor-test-{os.getpid()}"
    path = os.path.join(base, name)
    try:
        os.mkdir(path)
        with open(os.path.join(path, limit_file), "w") as f:
            f.write(str(2 << 30))
    except OSError as e:
        pytest.skip(f"cannot create a cgroup here: {e.strerror}")
    try:
        p = probe(SysAccess("/"), [], cgroup="/" + name, measure=False)
        lim = p["limits"]
        assert lim["memory_max_bytes"] == 2 << 30 and lim["cgroup"]["path"] == "/" + name
        assert lim["warnings"] == []  # a memory-only cgroup is normal on v1
        assert effective_budget(p).describe()[0].startswith("memory: 2.0 GiB from cgroup")
    finally:
        os.rmdir(path)


def test_missing_cgroup_path_is_one_warning(tmp_path):
    p = _probe(build("cgroup-v1-host", tmp_path / "v1"), cgroup="/nope")
    assert [w for w in p["warnings"] if "nope" in w] == [
        "cgroup /nope: no such directory (/sys/fs/cgroup/memory/nope, "
        "/sys/fs/cgroup/cpu,cpuacct/nope, /sys/fs/cgroup/cpuset/nope); using the host values"]
    assert effective_budget(p).memory_source == "host MemTotal"


def test_hugetlb_allowance_of_a_container(tmp_path):
    """cgroup v2 charges huge pages to hugetlb.<size>.max, not memory.max: read it too."""
    lim = _probe(build("container-v2", tmp_path / "c"))["limits"]
    assert lim["hugetlb_max_bytes"] == {"2MB": 0}  # "1GB" is max: no limit, not listed
    assert lim["sources"]["hugetlb_max_bytes.2MB"] == "/sys/fs/cgroup/hugetlb.2MB.max"
    assert lim["cgroup"]["version"] == 2 and "hugetlb" in lim["cgroup"]["controllers"]


def test_cgroup_path_cannot_climb_out(tmp_path):
    p = _probe(build("cgroup-v1-host", tmp_path / "v1"), cgroup="/../../../proc")
    assert "cgroup path /../../../proc: '..' is not allowed; using the host values" \
        in p["warnings"]
    assert p["limits"]["cgroup"]["controllers"] == {}
