"""The probe's report against the kernel's own tools, field by field.

Used by the fixture tests (snapshots a real 6.1 kernel produced in QEMU, tests/probes/fixtures/
kernel-6.1-*) and by the live guest tests (tests/kernel). The tools' outputs (``ndctl list
-NRD``, ``daxctl list``, ``numactl -H``, ``/proc/mounts``) were captured in the guest by
separate commands, not by the probe, so they are an independent oracle.
"""

from __future__ import annotations

import json
import re


def ndctl_items(text: str) -> dict[str, list[dict]]:
    """``ndctl list -NRD`` as {dimms, regions, namespaces}, namespaces flattened with their
    region. The nesting varies (one object, a list, ``{"dimms":[...],"regions":[...]}``)."""
    data = json.loads(text) if text.strip() else []
    dimms, regions, namespaces = [], [], []
    if isinstance(data, dict):
        dimms = data.get("dimms", [])
        regions = data.get("regions", [])
    elif isinstance(data, list):
        regions = [d for d in data if str(d.get("dev", "")).startswith("region")]
        dimms = [d for d in data if str(d.get("dev", "")).startswith("nmem")]
    for r in regions:
        for ns in r.get("namespaces", []):
            namespaces.append(dict(ns, region=r["dev"]))
    return {"dimms": dimms, "regions": regions, "namespaces": namespaces}


def compare_pmem(pmem: dict, ndctl_text: str) -> list[str]:
    """Every field ``ndctl list -NRD`` prints that the probe reports, as mismatches."""
    tool = ndctl_items(ndctl_text)
    bad: list[str] = []

    def eq(what: str, ours, theirs) -> None:
        if ours != theirs:
            bad.append(f"{what}: probe {ours!r}, ndctl {theirs!r}")

    regions = {r["name"]: r for r in pmem["regions"]}
    eq("region names", sorted(regions), sorted(r["dev"] for r in tool["regions"]))
    for r in tool["regions"]:
        ours = regions.get(r["dev"], {})
        eq(f"{r['dev']}.size", ours.get("size_bytes"), r["size"])
        eq(f"{r['dev']}.available_size", ours.get("available_bytes"), r["available_size"])
        eq(f"{r['dev']}.type", ours.get("type"), r["type"])
        if "align" in r:
            eq(f"{r['dev']}.align", ours.get("align"), r["align"])
        for key in ("numa_node", "target_node"):
            if key in r:
                eq(f"{r['dev']}.{key}", ours.get(key), r[key])
        if "mappings" in r:  # ways = len(mappings): ndctl has no interleave key
            eq(f"{r['dev']}.interleave_ways", ours.get("interleave_ways"), len(r["mappings"]))
            eq(f"{r['dev']}.dimms", sorted(ours.get("dimms") or []),
               sorted(m["dimm"] for m in r["mappings"]))
        if "persistence_domain" in r:
            eq(f"{r['dev']}.persistence_domain", ours.get("persistence_domain"),
               r["persistence_domain"])
        if "iset_id" in r:
            # the probe prints it as 0x%016x; ndctl as a decimal (signed on old builds), and
            # 0 for a region with no interleave-set cookie (a CXL region on 6.1 has no
            # set_cookie), which the probe reports as None
            iset = ours.get("iset_id")
            eq(f"{r['dev']}.iset_id", int(iset, 16) if iset else None,
               (r["iset_id"] & (2**64 - 1)) or None)
    live = [n for n in pmem["namespaces"] if n.get("size_bytes")]
    namespaces = {n["name"]: n for n in live}
    eq("namespace names", sorted(namespaces), sorted(n["dev"] for n in tool["namespaces"]))
    for n in tool["namespaces"]:
        ours = namespaces.get(n["dev"], {})
        for ours_key, key in (("region", "region"), ("mode", "mode"), ("size_bytes", "size"),
                              ("map", "map"), ("align", "align"), ("uuid", "uuid"),
                              ("sector_size", "sector_size"), ("blockdev", "blockdev"),
                              ("chardev", "chardev"), ("numa_node", "numa_node"),
                              ("target_node", "target_node")):
            if key in n:
                eq(f"{n['dev']}.{key}", ours.get(ours_key), n[key])
    dimms = {d["name"]: d for d in pmem["dimms"]}
    eq("dimm names", sorted(dimms), sorted(d["dev"] for d in tool["dimms"]))
    for d in tool["dimms"]:
        ours = dimms.get(d["dev"], {})
        if "id" in d:
            eq(f"{d['dev']}.id", ours.get("id"), d["id"])
        if "handle" in d:
            eq(f"{d['dev']}.handle", int(ours.get("handle") or "-1", 16), d["handle"])
        if "phys_id" in d:
            eq(f"{d['dev']}.phys_id", ours.get("phys_id"), d["phys_id"])
    return bad


def compare_dax(dax_devices: list[dict], daxctl_text: str) -> list[str]:
    """``daxctl list`` (chardev, size, target_node, align, mode) against the probe's."""
    tool = json.loads(daxctl_text) if daxctl_text.strip() else []
    tool = [tool] if isinstance(tool, dict) else tool
    ours = {d["name"]: d for d in dax_devices}
    bad = []
    if sorted(ours) != sorted(t["chardev"] for t in tool):
        bad.append(f"dax devices: probe {sorted(ours)}, daxctl {[t['chardev'] for t in tool]}")
    for t in tool:
        o = ours.get(t["chardev"], {})
        # align: daxctl prints it, the probe does not report a dax device's align
        for ours_key, key in (("size_bytes", "size"), ("target_node", "target_node")):
            if key in t and o.get(ours_key) != t[key]:
                bad.append(f"{t['chardev']}.{key}: probe {o.get(ours_key)!r}, daxctl {t[key]!r}")
        # daxctl's mode: devdax (driver device_dax) or system-ram (driver kmem)
        want = {"devdax": "device_dax", "system-ram": "kmem"}.get(t.get("mode"), t.get("mode"))
        if o.get("driver") != want:
            bad.append(f"{t['chardev']}.mode: probe driver {o.get('driver')!r}, "
                       f"daxctl {t.get('mode')!r}")
    return bad


def parse_numactl(text: str) -> dict:
    """``numactl -H``: {node: {"cpus": [...], "size_mb": n}}, and the distance matrix."""
    nodes: dict[int, dict] = {}
    distances: dict[int, list[int]] = {}
    in_dist = False
    for line in text.splitlines():
        if m := re.match(r"node (\d+) cpus:(.*)", line):
            nodes.setdefault(int(m[1]), {})["cpus"] = [int(c) for c in m[2].split()]
        elif m := re.match(r"node (\d+) size: (\d+) MB", line):
            nodes.setdefault(int(m[1]), {})["size_mb"] = int(m[2])
        elif line.startswith("node distances"):
            in_dist = True
        elif in_dist and (m := re.match(r"\s*(\d+):\s+(.*)", line)):
            distances[int(m[1])] = [int(v) for v in m[2].split()]
    return {"nodes": nodes, "distances": distances}


def compare_numa(numa: list[dict], numactl_text: str) -> list[str]:
    """Node ids, CPUs, CPU-less nodes, memory (MB, as numactl rounds) and distances."""
    tool = parse_numactl(numactl_text)
    ours = {n["node"]: n for n in numa}
    bad = []
    if sorted(ours) != sorted(tool["nodes"]):
        bad.append(f"nodes: probe {sorted(ours)}, numactl {sorted(tool['nodes'])}")
    for node, t in tool["nodes"].items():
        o = ours.get(node, {})
        if o.get("cpus") != t.get("cpus"):
            bad.append(f"node{node}.cpus: probe {o.get('cpus')}, numactl {t.get('cpus')}")
        if o.get("has_cpu") != bool(t.get("cpus")):
            bad.append(f"node{node}.has_cpu: probe {o.get('has_cpu')}, numactl cpus "
                       f"{t.get('cpus')}")
        mb = (o.get("memory_bytes") or 0) >> 20
        if abs(mb - t.get("size_mb", 0)) > 1:
            bad.append(f"node{node}.memory: probe {mb} MB, numactl {t.get('size_mb')} MB")
        if node in tool["distances"] and o.get("distances") != tool["distances"][node]:
            bad.append(f"node{node}.distances: probe {o.get('distances')}, numactl "
                       f"{tool['distances'][node]}")
    return bad


def dax_mounts(proc_mounts: str) -> dict[str, str]:
    """{mountpoint: the dax option as /proc/mounts spells it} for mounts with one."""
    out = {}
    for line in proc_mounts.splitlines():
        fields = line.split()
        if len(fields) >= 4:
            opts = [o for o in fields[3].split(",") if o == "dax" or o.startswith("dax=")]
            if opts:
                out[fields[1]] = opts[0]
    return out


def compare_mounts(mounts: list[dict], proc_mounts: str) -> list[str]:
    """Every mount /proc/mounts shows with a dax option is a DAX mount in the probe, and no
    other mount is."""
    want = dax_mounts(proc_mounts)
    have = {m["mountpoint"]: m.get("dax") for m in mounts if m.get("dax")}
    bad = []
    if sorted(have) != sorted(want):
        bad.append(f"DAX mounts: probe {have}, /proc/mounts {want}")
    return bad


def _cxl_memdevs(node, out: dict) -> None:
    if isinstance(node, list):
        for item in node:
            _cxl_memdevs(item, out)
    elif isinstance(node, dict):
        if "memdev" in node and isinstance(node["memdev"], str):
            out[node["memdev"]] = node
        for value in node.values():
            if isinstance(value, (list, dict)):
                _cxl_memdevs(value, out)


def cxl_items(text: str) -> dict[str, dict]:
    """``cxl list`` (any of -M -D -R -E -P, verbose or not) flattened: {"memdevs": {name:
    obj}, "regions": {name: obj}, "endpoint_decoders": {name: obj with the memdev it is in},
    "bridges": {memdev: the host bridge, the host of the depth-1 port above its endpoint}}."""
    out: dict[str, dict] = {"memdevs": {}, "regions": {}, "endpoint_decoders": {},
                            "bridges": {}}

    def walk(node, port_host=None) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, port_host)
            return
        if not isinstance(node, dict):
            return
        if isinstance(node.get("memdev"), str):
            out["memdevs"][node["memdev"]] = node
        elif isinstance(node.get("region"), str) and "decoder" not in node:
            out["regions"][node["region"]] = node
        if "endpoint" in node:
            memdev = node.get("memdev", {}).get("memdev") if isinstance(
                node.get("memdev"), dict) else node.get("host")
            if memdev and port_host:
                out["bridges"][memdev] = port_host
            for key, value in node.items():
                if key.startswith("decoders:") and isinstance(value, list):
                    for d in value:
                        out["endpoint_decoders"][d["decoder"]] = dict(d, memdev=memdev)
        host = node["host"] if "port" in node and node.get("depth") == 1 else port_host
        for value in node.values():
            if isinstance(value, (list, dict)):
                walk(value, host)

    walk(json.loads(text) if text.strip() else [])
    return out


def compare_cxl(cxl: dict, cxl_list_text: str, verbose_text: str = "") -> list[str]:
    """``cxl list -M -D -R -E -P`` against the probe: memdevs (names, pmem/ram size, serial,
    PCI host) and regions (names, size, interleave ways and granularity, committed, mode, and
    the endpoint decoders and memdevs behind them). ``verbose_text`` (the same with -vvv) adds
    each region's mappings with their interleave positions, which the plain listing omits."""
    tool = cxl_items(cxl_list_text)
    verbose = cxl_items(verbose_text) if verbose_text.strip() else None
    ours = {m["name"]: m for m in cxl["memdevs"]}
    bad = []

    def eq(what: str, mine, theirs) -> None:
        if mine != theirs:
            bad.append(f"{what}: probe {mine!r}, cxl {theirs!r}")

    eq("memdevs", sorted(ours), sorted(tool["memdevs"]))
    for name, t in tool["memdevs"].items():
        o = ours.get(name, {})
        eq(f"{name}.pmem_size", o.get("pmem_bytes"), t.get("pmem_size"))  # absent: None
        eq(f"{name}.ram_size", o.get("ram_bytes"), t.get("ram_size"))
        if "serial" in t:
            eq(f"{name}.serial", int(o.get("serial") or "-1", 16), t["serial"])
        if "host" in t:
            eq(f"{name}.host", o.get("host"), t["host"])
        if name in tool["bridges"]:  # listed with -P -E: the port tree
            eq(f"{name}.host_bridge", o.get("host_bridge"), tool["bridges"][name])
    regions = {r["name"]: r for r in cxl["regions"]}
    eq("regions", sorted(regions), sorted(tool["regions"]))
    for name, t in tool["regions"].items():
        o = regions.get(name, {})
        for mine, key in (("size_bytes", "size"), ("interleave_ways", "interleave_ways"),
                          ("interleave_granularity", "interleave_granularity")):
            if key in t:
                eq(f"{name}.{key}", o.get(mine), t[key])
        if "decode_state" in t:
            eq(f"{name}.committed", o.get("committed"), t["decode_state"] == "commit")
        # the region's mode: cxl list's "type" where it prints one (6.1's does not), else
        # the mode of the endpoint decoders that serve it
        decoders = {d: v for d, v in tool["endpoint_decoders"].items()
                    if v.get("region") == name}
        modes = {v.get("mode") for v in decoders.values()} - {None}
        if "type" in t or modes:
            eq(f"{name}.mode", o.get("mode"), t.get("type") or "/".join(sorted(modes)))
        mine_targets = sorted((x["decoder"], x["memdev"]) for x in o.get("targets") or [])
        eq(f"{name}.targets", mine_targets, sorted((d, v["memdev"])
                                                   for d, v in decoders.items()))
        if verbose is not None and name in verbose["regions"]:
            maps = verbose["regions"][name].get("mappings") or []
            eq(f"{name}.mappings", sorted((x["position"], x["decoder"], x["memdev"])
                                          for x in o.get("targets") or []),
               sorted((m["position"], m["decoder"], m["memdev"]) for m in maps))
    return bad


def cxl_bridges(cxl_list_text: str) -> dict[str, str]:
    """{memdev: the host bridge (ACPI0016:NN) its endpoint port sits under}, from cxl list."""
    return cxl_items(cxl_list_text)["bridges"]
