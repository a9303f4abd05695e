"""NUMA nodes: CPUs, memory, distances, and which nodes have no CPU (CXL, PMEM as kmem)."""

from __future__ import annotations

import re

from pmem_advisor.probes.reading import ProbeContext, parse_cpulist

NODE_DIR = "/sys/devices/system/node"


def probe_numa(ctx: ProbeContext) -> list[dict]:
    """One entry per online node; ``kind`` is filled in later by the profile (needs CXL/PMEM)."""
    online = parse_cpulist(ctx.text(f"{NODE_DIR}/online"))
    if online is None:
        online = sorted(
            int(n[4:]) for n in ctx.access.listdir(NODE_DIR) if re.fullmatch(r"node\d+", n)
        )
    nodes = []
    for node in online:
        base = f"{NODE_DIR}/node{node}"
        cpus = parse_cpulist(ctx.text(f"{base}/cpulist", required=True))
        if cpus is None and ctx.access.exists(f"{base}/cpulist"):
            ctx.warn(f"{base}/cpulist: malformed")
        nodes.append({
            "node": node,
            "cpus": cpus,
            "memory_bytes": _node_memory(ctx, node),
            "has_cpu": bool(cpus) if cpus is not None else None,
            "kind": "unknown",
            "distances": _distances(ctx, f"{base}/distance"),
            "memory_side_cache_bytes": _side_cache(ctx, base),
        })
    return nodes


def _node_memory(ctx: ProbeContext, node: int) -> int | None:
    path = f"{NODE_DIR}/node{node}/meminfo"
    text = ctx.text(path, required=True)
    if text is None:
        return None
    m = re.search(rf"Node\s+{node}\s+MemTotal:\s+(\d+)\s*kB", text)
    if not m:
        ctx.warn(f"{path}: malformed (no MemTotal line)")
        return None
    return int(m.group(1)) * 1024


def _distances(ctx: ProbeContext, path: str) -> list[int] | None:
    text = ctx.text(path)
    if text is None:
        return None
    try:
        return [int(x) for x in text.split()]
    except ValueError:
        ctx.warn(f"{path}: malformed")
        return None


def _side_cache(ctx: ProbeContext, base: str) -> int | None:
    """HMAT memory-side cache in front of this node: DRAM caching PMEM in Memory mode."""
    cache_dir = f"{base}/memory_side_cache"
    total = 0
    found = False
    for index in ctx.access.listdir(cache_dir):
        if index.startswith("index"):
            size = ctx.integer(f"{cache_dir}/{index}/size")
            if size is not None:
                total += size
                found = True
    return total if found else None


def memory_total(ctx: ProbeContext) -> int | None:
    text = ctx.text("/proc/meminfo", required=True)
    if text is None:
        return None
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, re.MULTILINE)
    if not m:
        ctx.warn("/proc/meminfo: malformed (no MemTotal line)")
        return None
    return int(m.group(1)) * 1024
