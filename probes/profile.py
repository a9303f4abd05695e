"""Assemble the probe profile (schema ``pmem-advisor.probe/1``) from the individual probes."""

from __future__ import annotations

from pmem_advisor import __version__
from pmem_advisor.probes import pmem_model as pm
from pmem_advisor.probes.cpu import probe_cpu
from pmem_advisor.probes.cxl import classify_nodes, read_cxl
from pmem_advisor.probes.ipmctl import read_ipmctl
from pmem_advisor.probes.mounts import (
    MediumResolver,
    devdax_path,
    mounts_summary,
    read_mount_table,
)
from pmem_advisor.probes.numa import memory_total, probe_numa
from pmem_advisor.probes.platform_mode import decide_mode, iomem_signals, read_iomem
from pmem_advisor.probes.pmem_ndctl import read_ndctl
from pmem_advisor.probes.pmem_sysfs import dax_devices, read_sysfs
from pmem_advisor.probes.reading import ProbeContext
from pmem_advisor.probes.sysaccess import SysAccess

SCHEMA = "pmem-advisor.probe/1"


def probe(access: SysAccess, paths: list[str] | None = None) -> dict:
    """The JSON-ready profile of the machine behind ``access``; never raises on bad files."""
    ctx = ProbeContext(access)
    numa = probe_numa(ctx)
    pmem, inv, dax = _pmem(ctx, numa)
    cxl = read_cxl(ctx)
    classify_nodes(numa, cxl, dax, inv)
    _cross_check(ctx, inv)
    providers = {b["name"]: b.get("provider") for b in inv["buses"]}
    resolver = MediumResolver(ctx, providers, read_mount_table(ctx))
    path_entries = []
    for path in paths or []:
        entry = devdax_path(path, inv, dax) or resolver.path_facts(path)
        if entry["dax"] == "devdax" and entry["medium"] == "unknown":
            ctx.warn(f"path {path}: no such device-dax device on this machine")
        path_entries.append(entry)
    return {
        "schema": SCHEMA,
        "tool_version": __version__,
        "source": {"kind": access.kind, "root": None if access.live else access.root},
        "host": {
            "hostname": ctx.text("/proc/sys/kernel/hostname"),
            "kernel": ctx.text("/proc/sys/kernel/osrelease", required=True),
            "page_size": access.page_size(),
        },
        "cpu": probe_cpu(ctx),
        "memory": {"total_bytes": memory_total(ctx)},
        "numa": numa,
        "pmem": pmem,
        "cxl": cxl,
        "dax_devices": dax,
        "mounts": mounts_summary(resolver),
        "paths": path_entries,
        "bandwidth": [],
        "warnings": ctx.warnings,
    }


def pmem_inventory(ctx: ProbeContext, *, use_tools: bool = True) -> tuple[dict, str]:
    """(inventory, source): ndctl JSON completed from sysfs, or sysfs alone."""
    sysfs = read_sysfs(ctx)
    tool = read_ndctl(ctx) if use_tools else None
    inv, source = (pm.merge_inventory(tool, sysfs), "ndctl") if tool is not None else (sysfs,
                                                                                       "sysfs")
    has_any = any(inv[k] for k in ("buses", "dimms", "regions", "namespaces"))
    return inv, source if has_any else "none"


def _pmem(ctx: ProbeContext, numa: list[dict]) -> tuple[dict, dict, list[dict]]:
    inv, source = pmem_inventory(ctx)
    iomem = iomem_signals(read_iomem(ctx))
    ipmctl = read_ipmctl(ctx)
    dax = dax_devices(ctx)
    mode, evidence = decide_mode(inv, numa, ipmctl, iomem, ctx)
    providers = {b["name"]: b.get("provider") for b in inv["buses"]}
    for region in inv["regions"]:
        if region.get("provider") is None and region.get("bus"):
            region["provider"] = providers.get(region["bus"])
    legacy = bool(iomem["legacy"]) or "e820" in providers.values()
    pmem = {
        "mode": mode,
        "mode_evidence": evidence,
        "source": source,
        "legacy_memmap": legacy,
        "buses": inv["buses"],
        "regions": inv["regions"],
        "namespaces": inv["namespaces"],
        "dimms": inv["dimms"],
        "ipmctl": ipmctl,
    }
    return pmem, inv, dax


def _cross_check(ctx: ProbeContext, inv: dict) -> None:
    """Firmware bugs: a region's numa_node can disagree with its DIMMs' socket bits."""
    sockets = {d["name"]: d.get("socket") for d in inv["dimms"]}
    for region in inv["regions"]:
        socks = {sockets.get(d) for d in region.get("dimms") or []} - {None}
        node = region.get("numa_node")
        if len(socks) == 1 and node is not None and node != next(iter(socks)):
            ctx.warn(f"{region['name']}: numa_node {node} but its DIMMs sit on socket "
                     f"{next(iter(socks))} (a known firmware bug; trust the DIMM handles)")
