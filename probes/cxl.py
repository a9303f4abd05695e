"""CXL memory: memory devices, CXL regions, and the CPU-less NUMA nodes they back.

``cxl list -MR`` JSON is used when the tool exists; sysfs (``/sys/bus/cxl/devices``) fills in
or stands alone. When the BIOS maps CXL memory as plain RAM ("legacy type 3") there is no
region or dax device at all: a CPU-less node on a machine with CXL memdevs is then reported as
CXL with that reasoning in ``evidence``.
"""

from __future__ import annotations

import re

from pmem_advisor.probes.pmem_model import natural_key
from pmem_advisor.probes.pmem_ndctl import NdctlFormatError, load_json, number
from pmem_advisor.probes.reading import ProbeContext

CXL_DEVICES = "/sys/bus/cxl/devices"
CXL_ARGV = ["cxl", "list", "-MR"]


def read_cxl(ctx: ProbeContext) -> dict:
    memdevs: dict[str, dict] = {}
    regions: dict[str, dict] = {}
    result = ctx.command(CXL_ARGV)
    if result is not None:
        try:
            _walk_tool(load_json(result.stdout), memdevs, regions)
        except NdctlFormatError as e:
            ctx.warn(f"`{result.source}` output: malformed JSON ({e}); using sysfs")
    _read_sysfs(ctx, memdevs, regions)
    return {
        "memdevs": sorted(memdevs.values(), key=lambda m: natural_key(m["name"])),
        "regions": sorted(regions.values(), key=lambda r: natural_key(r["name"])),
        "nodes": [],
    }


def _memdev(name: str) -> dict:
    return {"name": name, "ram_bytes": None, "pmem_bytes": None, "numa_node": None,
            "serial": None, "host": None, "host_bridge": None}


def _region(name: str) -> dict:
    return {"name": name, "mode": None, "size_bytes": None, "interleave_ways": None,
            "interleave_granularity": None, "committed": None, "targets": [],
            "dax_devices": []}


def _walk_tool(node, memdevs: dict, regions: dict) -> None:
    if isinstance(node, list):
        for item in node:
            _walk_tool(item, memdevs, regions)
        return
    if not isinstance(node, dict):
        return
    if "memdev" in node:
        m = memdevs.setdefault(node["memdev"], _memdev(node["memdev"]))
        m["ram_bytes"] = number(node.get("ram_size"))[0]
        m["pmem_bytes"] = number(node.get("pmem_size"))[0]
        m["numa_node"] = number(node.get("numa_node"))[0]
        serial = number(node.get("serial"))[0]
        m["serial"] = f"0x{serial:x}" if serial is not None else None
        m["host"] = node.get("host")
    elif "region" in node and str(node["region"]).startswith("region"):
        r = regions.setdefault(node["region"], _region(node["region"]))
        r["mode"] = {"ram": "ram", "pmem": "pmem"}.get(node.get("type"), node.get("type"))
        r["size_bytes"] = number(node.get("size"))[0]
        r["interleave_ways"] = number(node.get("interleave_ways"))[0]
        r["interleave_granularity"] = number(node.get("interleave_granularity"))[0]
        if node.get("decode_state"):
            r["committed"] = node["decode_state"] == "commit"
        for m in node.get("mappings") or []:  # cxl list -T / -vvv: position, memdev, decoder
            if isinstance(m, dict) and not any(t["position"] == m.get("position")
                                               for t in r["targets"]):
                r["targets"].append({"position": number(m.get("position"))[0],
                                     "decoder": m.get("decoder"), "memdev": m.get("memdev")})
    for value in node.values():
        if isinstance(value, (list, dict)):
            _walk_tool(value, memdevs, regions)


def _fill(item: dict, key: str, value) -> None:
    if item.get(key) is None and value is not None:
        item[key] = value


def _read_sysfs(ctx: ProbeContext, memdevs: dict, regions: dict) -> None:
    for name in ctx.access.listdir(CXL_DEVICES):
        path = ctx.access.realpath(f"{CXL_DEVICES}/{name}")
        if re.fullmatch(r"mem\d+", name):
            m = memdevs.setdefault(name, _memdev(name))
            _fill(m, "ram_bytes", ctx.integer(f"{path}/ram/size", base=0))
            _fill(m, "pmem_bytes", ctx.integer(f"{path}/pmem/size", base=0))
            _fill(m, "numa_node", ctx.integer(f"{path}/numa_node"))
            serial = ctx.integer(f"{path}/serial", base=0)
            _fill(m, "serial", f"0x{serial:x}" if serial is not None else None)
        elif re.fullmatch(r"region\d+", name):
            r = regions.setdefault(name, _region(name))
            _fill(r, "mode", ctx.text(f"{path}/mode"))
            _fill(r, "size_bytes", ctx.integer(f"{path}/size", base=0))
            _fill(r, "interleave_ways", ctx.integer(f"{path}/interleave_ways"))
            _fill(r, "interleave_granularity", ctx.integer(f"{path}/interleave_granularity"))
            commit = ctx.integer(f"{path}/commit")
            _fill(r, "committed", bool(commit) if commit is not None else None)
            subs = ctx.access.listdir(path)
            for sub in subs:
                if sub.startswith("dax_region"):
                    r["dax_devices"] += [d for d in ctx.access.listdir(f"{path}/{sub}")
                                         if re.fullmatch(r"dax\d+\.\d+", d)]
            # 6.1 has no region "mode" (nor does its cxl list print a "type"): a pmem
            # region is the one with a pmem_regionN child (handed to libnvdimm), a ram
            # region has a dax_regionN
            if any(re.fullmatch(r"pmem_region\d+", sub) for sub in subs):
                _fill(r, "mode", "pmem")
            elif any(re.fullmatch(r"dax_region\d+", sub) for sub in subs):
                _fill(r, "mode", "ram")
            if not r["targets"]:
                r["targets"] = _sysfs_targets(ctx, path, r["interleave_ways"])
    for endpoint in [n for n in ctx.access.listdir(CXL_DEVICES)
                     if re.fullmatch(r"endpoint\d+", n)]:
        memdev, bridge = _endpoint_bridge(ctx, endpoint)
        if memdev in memdevs:
            _fill(memdevs[memdev], "host_bridge", bridge)
    # sizes in sysfs are 0 for absent partitions; keep None for "none" as cxl list does
    for m in memdevs.values():
        for key in ("ram_bytes", "pmem_bytes"):
            if m[key] == 0:
                m[key] = None


def _uport(ctx: ProbeContext, port: str) -> str:
    """The device a CXL port stands for (its ``uport`` link's last part: an endpoint's is the
    memdev, a host bridge port's the ACPI0016 device)."""
    return ctx.access.realpath(f"{CXL_DEVICES}/{port}/uport").rsplit("/", 1)[-1]


def _endpoint_bridge(ctx: ProbeContext, endpoint: str) -> tuple[str | None, str | None]:
    """(memdev, host bridge) of a CXL endpoint port: its uport is the memdev; the port under
    rootN on its path is the host bridge's, whose uport is the ACPI0016 device (cxl list
    calls it that port's host)."""
    try:
        path = ctx.access.realpath(f"{CXL_DEVICES}/{endpoint}")
        memdev = _uport(ctx, endpoint)
        m = re.search(r"/root\d+/(port\d+)/", path)
        bridge = _uport(ctx, m.group(1)) if m else None
    except OSError:
        return None, None
    return memdev, bridge if bridge and bridge != "uport" else None


def _sysfs_targets(ctx: ProbeContext, path: str, ways: int | None) -> list[dict]:
    """A region's targetN (the endpoint decoders, by interleave position) and the memdev of
    each: the decoder sits under its endpoint port, whose uport is the memdev."""
    targets = []
    for pos in range(ways or 0):
        decoder = ctx.text(f"{path}/target{pos}")
        if not decoder:
            continue
        try:
            endpoint = ctx.access.realpath(f"{CXL_DEVICES}/{decoder}").rsplit("/", 2)[-2]
            memdev = _uport(ctx, endpoint)
        except OSError:  # a link loop: the decoder is named, its memdev not
            memdev = ""
        targets.append({"position": pos, "decoder": decoder,
                        "memdev": memdev if re.fullmatch(r"mem\d+", memdev) else None})
    return targets


def classify_nodes(numa: list[dict], cxl: dict, dax: list[dict], inv: dict) -> None:
    """Fill ``numa[].kind`` and ``cxl.nodes``: dram, cxl, pmem-kmem or unknown."""
    cxl_dax = {d for r in cxl["regions"] for d in r["dax_devices"]}
    kmem_nodes: dict[int, str] = {}
    for dev in dax:
        if dev.get("driver") != "kmem" or dev.get("target_node") is None:
            continue
        if dev["backing"] == "cxl" or dev["name"] in cxl_dax:
            kmem_nodes[dev["target_node"]] = "cxl"
        elif dev["backing"] == "hmem":
            kmem_nodes[dev["target_node"]] = "cxl" if cxl["memdevs"] else "unknown"
        else:
            kmem_nodes[dev["target_node"]] = "pmem-kmem"
    for ns in inv["namespaces"]:
        if ns.get("dax_driver") == "kmem" and ns.get("target_node") is not None:
            kmem_nodes.setdefault(ns["target_node"], "pmem-kmem")
    for node in numa:
        if node.get("has_cpu"):
            node["kind"] = "dram"
        elif node["node"] in kmem_nodes:
            node["kind"] = kmem_nodes[node["node"]]
        elif node.get("has_cpu") is False and cxl["memdevs"] and node.get("memory_bytes"):
            node["kind"] = "cxl"  # BIOS-mapped CXL RAM: no region, no dax device
        if node["kind"] == "cxl":
            cxl["nodes"].append(node["node"])
