"""rules/budget.py: the tightest of host, cgroup, cpuset, NUMA binding and the user's flags."""

from __future__ import annotations

from pmem_advisor.rules.budget import effective_budget

GB = 1 << 30


def _profile(limits: dict | None = None, *, mem_gb: int = 64, threads: int = 16) -> dict:
    half = threads // 2
    return {
        "memory": {"total_bytes": mem_gb * GB},
        "cpu": {"threads": threads, "cores": threads // 2, "sockets": 2},
        "numa": [{"node": 0, "cpus": list(range(half)), "memory_bytes": mem_gb * GB // 2},
                 {"node": 1, "cpus": list(range(half, threads)),
                  "memory_bytes": mem_gb * GB // 2}],
        "limits": limits or {},
    }


def test_host_only():
    b = effective_budget(_profile())
    assert (b.memory_bytes, b.memory_source, b.cpus, b.cpus_source) == \
        (64 * GB, "host MemTotal", 16.0, "host online CPUs")
    assert b.nodes is None and b.cpu_list is None and b.notes == []
    assert b.describe() == ["memory: 64.0 GiB from host MemTotal",
                            "cpus: 16 from host online CPUs"]


def test_memory_high_tighter_than_max_and_fractional_quota():
    b = effective_budget(_profile({
        "memory_max_bytes": 8 * GB, "memory_high_bytes": 6 * GB, "cpu_quota_cpus": 2.5,
        "sources": {"memory_max_bytes": "/cg/memory.max", "memory_high_bytes": "/cg/memory.high",
                    "cpu_quota_cpus": "/cg/cpu.max"}}))
    assert (b.memory_bytes, b.memory_source, b.memory_file) == \
        (6 * GB, "cgroup memory.high", "/cg/memory.high")
    assert (b.cpus, b.whole_cpus, b.cpus_source) == (2.5, 2, "cgroup cpu.max")
    assert b.describe()[:2] == ["memory: 6.0 GiB from cgroup memory.high (host 64.0 GiB; "
                                "/cg/memory.high)",
                                "cpus: 2.5 from cgroup cpu.max (host 16; /cg/cpu.max)"]


def test_small_quota_still_gives_one_cpu_for_counts():
    b = effective_budget(_profile({"cpu_quota_cpus": 0.5}))
    assert b.cpus == 0.5 and b.whole_cpus == 1


def test_numa_binding_limits_memory_and_cpus():
    b = effective_budget(_profile(), numa_node=1)
    assert b.nodes == [1] and b.cpu_list == list(range(8, 16))
    assert (b.memory_bytes, b.cpus) == (32 * GB, 8.0)
    assert b.memory_source == "NUMA node(s) 1 memory" and b.cpus_source == "NUMA node 1's CPUs"
    assert effective_budget(_profile(), numa_node=7).notes == [
        "--numa-node 7: no such node in the profile; ignored"]


def test_cpuset_intersects_the_bound_node():
    b = effective_budget(_profile({"cpuset_cpus": [6, 7, 8, 9]}), numa_node=1)
    assert b.cpu_list == [8, 9] and b.cpus == 2.0


def test_cpuset_mems_equal_to_all_nodes_is_no_restriction():
    b = effective_budget(_profile({"cpuset_mems": [0, 1], "cpuset_cpus": list(range(16))}))
    assert b.nodes is None and b.cpu_list is None and b.cpus_source == "host online CPUs"


def test_flags_tighten_but_never_loosen():
    p = _profile({"memory_max_bytes": 4 * GB, "sources": {"memory_max_bytes": "/cg/memory.max"}})
    loose = effective_budget(p, memory_bytes=16 * GB, cpus=32)
    assert (loose.memory_bytes, loose.cpus) == (4 * GB, 16.0)
    assert "--memory 16.0 GiB is more than the cgroup memory.max allows: using 4.0 GiB" \
        in loose.notes
    assert "--cpus 32 is more than the host online CPUs allows: using 16" in loose.notes
    tight = effective_budget(p, memory_bytes=2 * GB, cpus=3)
    assert (tight.memory_source, tight.cpus_source) == ("--memory", "--cpus")


def test_warnings_and_notes_reach_the_output():
    b = effective_budget(_profile({
        "warnings": ["/cg/memory.max: malformed (expected bytes or 'max', got '4G'); using the "
                     "host value"],
        "notes": ["/cg/cpu.max = max: no CPU limit"],
        "hugepages": {"default_size_bytes": 2 << 20,
                      "pools": [{"size_bytes": 2 << 20, "total": 1024, "free": 1024}]}}))
    text = "\n".join(b.describe())
    assert "limit not read: /cg/memory.max: malformed" in text
    assert "/cg/cpu.max = max: no CPU limit" in text
    assert "2.0 GiB of it is reserved as huge pages" in text
    assert b.memory_source == "host MemTotal"


def test_profile_without_limits_section():
    p = _profile()
    del p["limits"]
    assert effective_budget(p).memory_bytes == 64 * GB
    assert effective_budget({}).notes == ["the profile has no memory size: pass --memory"]


def test_to_dict_carries_the_lines():
    d = effective_budget(_profile()).to_dict()
    assert d["memory_bytes"] == 64 * GB and d["describe"][0].startswith("memory: 64.0 GiB")
