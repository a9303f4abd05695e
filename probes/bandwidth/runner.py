"""measure_paths: run the planned sweep on each path with the native kernel.

Points run one at a time from Python, so Ctrl-C (checked by the kernel when each point's
threads have joined) stops within one point; the scratch file goes in every case.
"""

from __future__ import annotations

import importlib
import math
import os
import time
from collections.abc import Callable

from pmem_advisor.errors import CapabilityMissing, EnvironmentProblem, Interrupted, UsageError

from . import facts, plan
from .scratch import ScratchTarget, open_target
from .topology import Topology, device_numa_node, fs_type

Progress = Callable[[str, float], None]
PREFAULT_CHUNK = 64 * plan.MIB
# msync on a real block device writes everything a point dirtied; cap it per point.
MSYNC_DEVICE_CAP = 256 * plan.MIB
LATENCY_SECONDS = {True: 0.2, False: 0.4}
PERSIST_LINES = 4096  # 256 KB of lines: the flush cost, not the capacity, is measured


def load_kernel():
    """The compiled kernel, or CapabilityMissing saying how to build it."""
    try:
        return importlib.import_module("pmem_advisor.probes._pmembw")
    except ImportError as e:
        from pmem_advisor.capabilities import native_kernel

        raise CapabilityMissing(f"the native bandwidth kernel is not built ({e})",
                                hint=native_kernel().how_to_get) from None


def measure_paths(paths: list[str], *, quick: bool = True, destructive: bool = False,
                  numa_node: int | None = None, threads: list[int] | None = None,
                  plot: str | None = None, progress: Progress | None = None) -> list[dict]:
    """One ``bandwidth[]`` entry per path (see issue 3 and docs/design.md)."""
    if not paths:
        raise UsageError("no path to measure")
    kernel = load_kernel()
    topo = Topology.live()
    if numa_node is not None and numa_node not in topo.nodes:
        raise UsageError(f"NUMA node {numa_node} has no CPUs we may use",
                         hint=f"nodes with CPUs: {sorted(topo.nodes)}")
    if threads is not None and (not threads or min(threads) < 1):
        raise UsageError("thread counts must be positive integers")
    report = progress or (lambda _msg, _frac: None)
    results = []
    try:
        for i, path in enumerate(paths):
            def sub(msg: str, frac: float, i: int = i) -> None:
                report(msg, (i + frac) / len(paths))

            results.append(_measure_one(kernel, topo, path, quick=quick,
                                        destructive=destructive, numa_node=numa_node,
                                        threads=threads, progress=sub))
    except KeyboardInterrupt:
        raise Interrupted("bandwidth probe interrupted: threads stopped, scratch file "
                          "removed") from None
    if plot:
        from .heatmap import save_heatmap

        save_heatmap(results, plot)
    report("done", 1.0)
    return results


def _measure_one(kernel, topo: Topology, path: str, *, quick: bool, destructive: bool,
                 numa_node: int | None, threads: list[int] | None,
                 progress: Progress) -> dict:
    path_node = device_numa_node(path)
    near = numa_node if numa_node is not None else (
        path_node if path_node in topo.nodes else topo.default_node())
    near_cpus = topo.nodes[near]
    far = topo.far_node(near)
    if threads and max(threads) > len(near_cpus):
        raise UsageError(f"{max(threads)} threads asked but NUMA node {near} has "
                         f"{len(near_cpus)} CPUs we may use")
    far_cpus = topo.nodes[far] if far is not None else []
    if far is not None and len(far_cpus) < max(threads or [len(near_cpus)]):
        far = None  # cannot run the same thread count over there: no like-for-like ratio
    points = plan.plan_sweep(len(near_cpus), quick=quick, threads=threads,
                             far_node=far is not None)
    ws_wanted = plan.working_set_bytes(topo.llc_bytes)
    t_start = time.monotonic()
    target = open_target(path, ws_wanted, destructive=destructive)
    try:
        return _run_target(kernel, target, points, near_cpus, far_cpus, quick=quick,
                           progress=progress, meta={
                               "numa_node": near, "path_numa_node": path_node,
                               "far_numa_node": far, "t_start": t_start})
    finally:
        target.cleanup()


def _run_target(kernel, target: ScratchTarget, points: list[plan.Point], near_cpus: list[int],
                far_cpus: list[int], *, quick: bool, progress: Progress, meta: dict) -> dict:
    try:
        mapping = kernel.Mapping(target.path, target.size)
    except OSError as e:
        raise EnvironmentProblem(f"cannot map {target.path}: {e.strerror or e}") from None
    try:
        ws = min(target.size, mapping.size) // (2 * plan.MIB) * (2 * plan.MIB)
        if ws < plan.MIN_WORKING_SET // 4:
            raise UsageError(f"{target.requested} is too small for a meaningful working set")
        fstype = fs_type(target.path)
        real_io = mapping.persist_method == "msync" and fstype not in ("tmpfs", "ramfs")
        cap = MSYNC_DEVICE_CAP if real_io else 0
        seconds = plan.point_seconds(quick)
        steps = len(points) + 3
        for off in range(0, ws, PREFAULT_CHUNK):
            progress(f"{target.requested}: pre-faulting", off / ws / steps)
            mapping.prefault(off, min(PREFAULT_CHUNK, ws - off), near_cpus)
        measured = []
        for k, pt in enumerate(points):
            progress(f"{target.requested}: {pt.op} {pt.pattern} {pt.layout} "
                     f"{pt.access_bytes} B x{pt.threads}", (k + 1) / steps)
            cpus = (far_cpus if pt.node == "far" else near_cpus)[: pt.threads]
            r = mapping.run(pt.op, pt.pattern, pt.layout == "grouped", pt.access_bytes, cpus,
                            seconds, ws, max_bytes=cap)
            nbytes = r["read_bytes"] + r["write_bytes"]
            measured.append({**pt.to_dict(), "gbps": round(facts.gbps(nbytes, r["seconds"]), 3),
                             "bytes": nbytes, "seconds": round(r["seconds"], 6)})
        progress(f"{target.requested}: idle latency", (len(points) + 1) / steps)
        lat_s = LATENCY_SECONDS[quick]
        idle = mapping.idle_latency(ws // 64, lat_s, near_cpus[0])
        progress(f"{target.requested}: persist latency", (len(points) + 2) / steps)
        persist = mapping.persist_latency(min(PERSIST_LINES, ws // 64), lat_s / 2, near_cpus[0])
        entry = {
            "path": target.requested,
            "target": target.kind,
            "fstype": fstype,
            "is_pmem": bool(mapping.is_pmem),
            "persist_method": mapping.persist_method,
            "pmem_is_pmem_forced": os.environ.get("PMEM_IS_PMEM_FORCE") == "1",
            "libpmem": bool(kernel.HAVE_LIBPMEM),
            "isa": getattr(kernel, "ISA", None),
            "numa_node": meta["numa_node"],
            "path_numa_node": meta["path_numa_node"],
            "far_numa_node": meta["far_numa_node"],
            "cpus": near_cpus,
            "working_set_bytes": ws,
            "quick": quick,
            "point_seconds": seconds,
            "idle_latency_ns": _finite(idle["ns"]),
            "persist_latency_ns": _finite(persist["ns"]),
            **facts.derive(measured),
            "points": measured,
        }
        entry["duration_s"] = round(time.monotonic() - meta["t_start"], 3)
        return entry
    except OSError as e:
        raise EnvironmentProblem(f"bandwidth probe on {target.requested} failed: "
                                 f"{e.strerror or e}") from None
    finally:
        mapping.close()


def _finite(v: float) -> float | None:
    return round(v, 1) if math.isfinite(v) and v > 0 else None
