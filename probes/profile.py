"""Assemble the probe profile (schema ``pmem-advisor.probe/1``) from the individual probes."""

from __future__ import annotations

import posixpath

from pmem_advisor import __version__
from pmem_advisor.probes import pmem_model as pm
from pmem_advisor.probes.cgroup import read_limits
from pmem_advisor.probes.cpu import CPU_DIR, probe_cpu
from pmem_advisor.probes.cxl import classify_nodes, read_cxl
from pmem_advisor.probes.hugepages import read_hugepages
from pmem_advisor.probes.ipmctl import read_ipmctl
from pmem_advisor.probes.medium_source import settle, stored_media
from pmem_advisor.probes.mounts import (
    MediumResolver,
    devdax_path,
    mounts_summary,
    read_mount_table,
)
from pmem_advisor.probes.numa import memory_total, probe_numa
from pmem_advisor.probes.overcommit import read_overcommit
from pmem_advisor.probes.platform_mode import decide_mode, iomem_signals, read_iomem
from pmem_advisor.probes.pmem_ndctl import new_health, read_ndctl, read_ndctl_health
from pmem_advisor.probes.pmem_sysfs import dax_devices, nfit_flags, read_sysfs
from pmem_advisor.probes.reading import ProbeContext
from pmem_advisor.probes.sysaccess import SysAccess

SCHEMA = "pmem-advisor.probe/1"


def probe(access: SysAccess, paths: list[str] | None = None, *, cgroup: str | None = None,
          pid: int | None = None, measure: bool = True,
          medium_overrides: dict[str, str] | None = None,
          media_cache: dict | None = None) -> dict:
    """The JSON-ready profile of the machine behind ``access``; never raises on bad files.

    ``cgroup`` (a cgroup path or a systemd unit) or ``pid`` chooses whose limits the
    ``limits`` section reads; by default this process's. The medium of each path whose
    device's flag cannot be trusted is measured on a live machine unless ``measure`` is
    False (a few seconds per device, cached: probes/medium_source.py); ``medium_overrides``
    ({path: hdd|ssd|nvme}) wins; ``media_cache`` ({device: measured}) is reused.
    """
    ctx = ProbeContext(access)
    numa = probe_numa(ctx)
    pmem, inv, dax = _pmem(ctx, numa)
    cxl = read_cxl(ctx)
    classify_nodes(numa, cxl, dax, inv)
    _cross_check(ctx, inv, numa)
    providers = {b["name"]: b.get("provider") for b in inv["buses"]}
    table = read_mount_table(ctx)
    resolver = MediumResolver(ctx, providers, table)
    path_entries = []
    for path in paths or []:
        entry = devdax_path(path, inv, dax) or resolver.path_facts(path)
        if entry["dax"] == "devdax" and entry["medium"] == "unknown":
            ctx.warn(f"path {path}: no such device-dax device on this machine")
        path_entries.append(entry)
    media = _settle_media(access, path_entries, measure=measure,
                          overrides=medium_overrides or {}, cache=media_cache or {})
    mounts = mounts_summary(resolver)
    for m in mounts:  # a measured or overridden path speaks for its whole mount
        settled = next((p for p in path_entries if p.get("mountpoint") == m["mountpoint"]
                        and p.get("medium_source") in ("measured", "override")), None)
        if settled is not None:
            m["medium"], m["medium_source"] = settled["medium"], settled["medium_source"]
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
        "limits": limits(ctx, table, cgroup=cgroup, pid=pid),
        "numa": numa,
        "pmem": pmem,
        "cxl": cxl,
        "dax_devices": dax,
        "mounts": mounts,
        "paths": path_entries,
        "media": media,
        "bandwidth": [],
        "warnings": ctx.warnings,
    }


def _settle_media(access: SysAccess, entries: list[dict], *, measure: bool,
                  overrides: dict[str, str], cache: dict) -> dict:
    """Decide each path's medium source (and measure where needed); returns profile["media"]."""
    media = {**stored_media(access), **cache}
    for entry in entries:
        override = overrides.get(posixpath.normpath(entry["path"]))
        settle(entry, access=access, measure=measure, override=override, cache=media)
    if access.recording is not None and media:  # probe --save keeps the measurements
        access.recording.facts["media"] = media
    return media


def limits(ctx: ProbeContext, table: list[dict], *, cgroup: str | None = None,
           pid: int | None = None) -> dict:
    """The ``limits`` section: the cgroup's limits, the huge page pools, the THP mode and
    the kernel's memory overcommit policy."""
    section = read_limits(ctx, table, cgroup=cgroup, pid=pid)
    warnings = section.pop("warnings")
    section["hugepages"], section["thp"] = read_hugepages(ctx)
    section["overcommit"] = read_overcommit(ctx)
    section["warnings"] = warnings
    return section


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
    _dimm_health(ctx, inv, ipmctl)
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


def _dimm_health(ctx: ProbeContext, inv: dict, ipmctl: dict | None) -> None:
    """Each DIMM's ``health`` (``None``: no tool or file reports it).

    ndctl's SMART health (``ndctl list -DH``) first; ipmctl's HealthState (matched by NFIT
    handle = ipmctl DimmID) fills the state when ndctl has none; the kernel's NFIT flags
    (``nmemX/nfit/flags``) are added to ``flags`` whoever reported the rest.
    """
    if not inv["dimms"]:
        return
    by_ndctl = read_ndctl_health(ctx)
    by_handle = {}
    for row in (ipmctl or {}).get("dimms") or []:
        by_handle[int(row["dimm_id"], 16)] = row
    for dimm in inv["dimms"]:
        health = by_ndctl.get(dimm["name"])
        handle = int(dimm["handle"], 16) if dimm.get("handle") else None
        row = by_handle.get(handle) if handle is not None else None
        if row is not None and row["health_state"]:
            if health is None:
                health = new_health("ipmctl")
            if health["state"] == "unknown":
                health.update(state=row["state"], reported=row["health_state"], source="ipmctl")
        flags = nfit_flags(ctx, dimm["name"])
        if flags:
            if health is None:
                health = new_health("sysfs")
            health["flags"] = sorted({*health["flags"], *flags})
        dimm["health"] = health


def _cross_check(ctx: ProbeContext, inv: dict, numa: list[dict]) -> None:
    """Firmware bugs: a region's numa_node can disagree with its DIMMs' socket bits.

    A NUMA node is not a socket number: sub-NUMA clustering (and QEMU, whose -numa nodes
    share one package) puts several nodes on one socket, so node 1 on socket 0 is normal.
    The node's socket is the physical_package_id of its CPUs; a CPU-less node has none to
    compare with, so it gets no verdict either way.
    """
    sockets = {d["name"]: d.get("socket") for d in inv["dimms"]}
    cpus = {n["node"]: n.get("cpus") or [] for n in numa}
    for region in inv["regions"]:
        socks = {sockets.get(d) for d in region.get("dimms") or []} - {None}
        node = region.get("numa_node")
        if len(socks) != 1 or node is None:
            continue
        packages = {ctx.integer(f"{CPU_DIR}/cpu{c}/topology/physical_package_id")
                    for c in cpus.get(node, [])} - {None}
        sock = next(iter(socks))
        if packages and sock not in packages:
            ctx.warn(f"{region['name']}: numa_node {node} has its CPUs on socket(s) "
                     f"{','.join(map(str, sorted(packages)))} but its DIMMs sit on socket "
                     f"{sock} (a known firmware bug; trust the DIMM handles)")
