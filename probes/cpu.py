"""CPU topology: sockets, physical cores, hardware threads, model and last-level cache."""

from __future__ import annotations

import re

from pmem_advisor.probes.reading import ProbeContext, parse_cpulist

CPU_DIR = "/sys/devices/system/cpu"


def probe_cpu(ctx: ProbeContext) -> dict:
    """Counts from sysfs topology; /proc/cpuinfo fills in when sysfs lacks it."""
    cpus = parse_cpulist(ctx.text(f"{CPU_DIR}/online", required=True))
    if cpus is None:
        cpus = sorted(
            int(n[3:]) for n in ctx.access.listdir(CPU_DIR) if re.fullmatch(r"cpu\d+", n)
        )
    packages: set[int] = set()
    cores: set[tuple[int, int, int]] = set()
    for cpu in cpus:
        topo = f"{CPU_DIR}/cpu{cpu}/topology"
        pkg = ctx.integer(f"{topo}/physical_package_id")
        die = ctx.integer(f"{topo}/die_id") or 0
        core = ctx.integer(f"{topo}/core_id")
        if pkg is None or core is None:
            continue
        packages.add(pkg)
        cores.add((pkg, die, core))
    info = _cpuinfo(ctx)
    return {
        "sockets": len(packages) or info["sockets"],
        "cores": len(cores) or info["cores"],
        "threads": len(cpus) or info["threads"],
        "model": info["model"],
        "llc_bytes": _llc_bytes(ctx, cpus[0] if cpus else 0),
    }


def _cpuinfo(ctx: ProbeContext) -> dict:
    text = ctx.text("/proc/cpuinfo", required=True) or ""
    model = None
    packages: set[str] = set()
    cores: set[tuple[str, str]] = set()
    threads = 0
    pkg = ""
    for line in text.splitlines():
        key, _, value = (s.strip() for s in line.partition(":"))
        if key == "processor":
            threads += 1
        elif key == "model name" and model is None:
            model = " ".join(value.split()) or None
        elif key == "physical id":
            pkg = value
            packages.add(value)
        elif key == "core id":
            cores.add((pkg, value))
    return {
        "model": model,
        "sockets": len(packages) or None,
        "cores": len(cores) or None,
        "threads": threads or None,
    }


def _llc_bytes(ctx: ProbeContext, cpu: int) -> int | None:
    """Size of the highest cache level seen by one CPU (the L3 on servers)."""
    base = f"{CPU_DIR}/cpu{cpu}/cache"
    best: tuple[int, int] | None = None
    for index in ctx.access.listdir(base):
        if not index.startswith("index"):
            continue
        level = ctx.integer(f"{base}/{index}/level")
        size = ctx.size(f"{base}/{index}/size")
        if level is not None and size is not None and (best is None or level > best[0]):
            best = (level, size)
    return best[1] if best else None
