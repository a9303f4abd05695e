"""Small hand-written probe profiles for the rule tests (schema pmem-advisor.probe/1).

``make_profile(spec)`` builds one from a preset name or a dict
``{preset, memory_gb, cores, threads, sockets, pmem_mode, mounts: {mountpoint: overrides},
regions, namespaces, cxl_nodes}`` so YAML cases stay short.
"""

from __future__ import annotations

import copy

GB = 1 << 30


def _numa(sockets: int, threads: int) -> list[dict]:
    per = threads // sockets
    nodes = []
    for n in range(sockets):
        nodes.append({"node": n, "cpus": list(range(n * per, (n + 1) * per)),
                      "memory_bytes": 64 * GB, "has_cpu": True, "kind": "dram",
                      "distances": [10 if i == n else 21 for i in range(sockets)]})
    return nodes


SSD_ROOT = {"device": "/dev/nvme0n1p2", "mountpoint": "/", "fstype": "ext4",
            "options": "rw,relatime", "dax": None, "block_size": 4096, "medium": "ssd"}
SHM = {"device": "tmpfs", "mountpoint": "/dev/shm", "fstype": "tmpfs", "options": "rw",
       "dax": None, "block_size": 4096, "medium": "tmpfs"}


def _pmem_mount(n: int, **over) -> dict:
    m = {"device": f"/dev/pmem{n}", "mountpoint": f"/mnt/pmem{n}", "fstype": "ext4",
         "options": "rw,dax=always", "dax": "always", "block_size": 4096, "medium": "pmem"}
    m.update(over)
    return m


def _pmem_inventory(sockets: int) -> dict:
    regions, namespaces, dimms = [], [], []
    for n in range(sockets):
        regions.append({"name": f"region{n}", "size_bytes": 512 * GB,
                        "available_bytes": 0, "numa_node": n, "target_node": sockets + n,
                        "interleave_ways": 4, "dimms": [f"nmem{4 * n + i}" for i in range(4)],
                        "persistence_domain": "memory_controller", "type": "pmem",
                        "iset_id": f"0x{n:x}"})
        namespaces.append({"name": f"namespace{n}.0", "region": f"region{n}", "mode": "fsdax",
                           "map": "dev", "size_bytes": 500 * GB, "align": 2 << 20,
                           "blockdev": f"pmem{n}", "chardev": None, "numa_node": n})
    return {"mode": "app_direct", "mode_evidence": ["test"], "source": "ndctl",
            "regions": regions, "namespaces": namespaces, "dimms": dimms}


PRESETS = {
    # two sockets, 24 cores / 48 threads, 192 GB DRAM, interleaved fsdax PMEM per socket
    "pmem": {"sockets": 2, "cores": 24, "threads": 48, "memory_gb": 192, "pmem": True},
    "ssd": {"sockets": 1, "cores": 8, "threads": 16, "memory_gb": 32, "pmem": False},
    "small": {"sockets": 1, "cores": 2, "threads": 2, "memory_gb": 4, "pmem": False},
}


def make_profile(spec: str | dict) -> dict:
    if isinstance(spec, str):
        spec = {"preset": spec}
    spec = copy.deepcopy(spec)
    base = dict(PRESETS[spec.pop("preset", "pmem")])
    base.update({k: v for k, v in spec.items() if k in base})
    sockets, threads = base["sockets"], base["threads"]
    numa = _numa(sockets, threads)
    mounts = [dict(SSD_ROOT), dict(SHM)]
    pmem = {"mode": "none", "mode_evidence": [], "source": "none", "regions": [],
            "namespaces": [], "dimms": []}
    if base["pmem"]:
        pmem = _pmem_inventory(sockets)
        mounts += [_pmem_mount(n) for n in range(sockets)]
    if "pmem_mode" in spec:
        pmem["mode"] = spec["pmem_mode"]
    for key in ("regions", "namespaces"):
        if key in spec:
            pmem[key] = spec[key]
    for mp, over in (spec.get("mounts") or {}).items():
        found = next((m for m in mounts if m["mountpoint"] == mp), None)
        if over is None:
            mounts = [m for m in mounts if m["mountpoint"] != mp]
        elif found is None:
            mounts.append({"device": "/dev/sdz1", "mountpoint": mp, "fstype": "ext4",
                           "options": "rw", "dax": None, "block_size": 4096,
                           "medium": "ssd", **over})
        else:
            found.update(over)
    for i in range(spec.get("cxl_nodes", 0)):
        numa.append({"node": sockets + i, "cpus": [], "memory_bytes": 64 * GB,
                     "has_cpu": False, "kind": "cxl", "distances": []})
    cxl = {"memdevs": [], "regions": [], "nodes": []}
    if spec.get("cxl_nodes"):
        cxl["memdevs"] = [{"name": f"mem{i}", "ram_bytes": 64 * GB, "pmem_bytes": 0,
                           "numa_node": 0, "serial": str(i)} for i in range(spec["cxl_nodes"])]
    return {
        "schema": "pmem-advisor.probe/1", "tool_version": "test",
        "source": {"kind": "snapshot", "root": None},
        "host": {"hostname": "test", "kernel": "6.1.0", "page_size": 4096},
        "cpu": {"sockets": sockets, "cores": base["cores"], "threads": threads,
                "model": "test cpu", "llc_bytes": 32 << 20},
        "memory": {"total_bytes": base["memory_gb"] * GB},
        "numa": numa, "pmem": pmem, "cxl": cxl, "mounts": mounts, "paths": [],
        "bandwidth": [], "warnings": [],
    }
