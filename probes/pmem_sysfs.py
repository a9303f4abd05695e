"""PMEM from the kernel's libnvdimm sysfs ABI alone (``/sys/bus/nd``, ``/sys/bus/dax``).

Works without ndctl: buses and their provider, NFIT DIMMs, regions with their interleave
mappings, namespaces with the claim (pfn/btt/dax device) that gives them their mode.
"""

from __future__ import annotations

import posixpath
import re

from pmem_advisor.probes import pmem_model as pm
from pmem_advisor.probes.reading import ProbeContext

ND_DEVICES = "/sys/bus/nd/devices"
DAX_DEVICES = "/sys/bus/dax/devices"
REGION_TYPES = {"nd_pmem": "pmem", "nd_blk": "blk", "nd_volatile": "volatile"}


def read_sysfs(ctx: ProbeContext) -> dict:
    """The inventory as the kernel shows it; empty when there is no nd bus."""
    inv = pm.empty_inventory()
    names = ctx.access.listdir(ND_DEVICES)
    real = {n: ctx.access.realpath(f"{ND_DEVICES}/{n}") for n in names}
    claims: dict[str, dict] = {}  # namespace name -> claim facts
    for name in names:
        path = real[name]
        if re.fullmatch(r"ndbus\d+", name):
            inv["buses"].append({"name": name, "provider": ctx.text(f"{path}/provider")})
        elif re.fullmatch(r"nmem\d+", name):
            dimm = _dimm(ctx, name, path)
            if dimm:
                inv["dimms"].append(dimm)
        elif re.fullmatch(r"region\d+", name):
            inv["regions"].append(_region(ctx, name, path))
        elif re.fullmatch(r"(pfn|btt|dax)\d+\.\d+", name):
            claim = _claim(ctx, name, path)
            if claim:
                claims[claim["namespace"]] = claim
    for name in names:
        if re.fullmatch(r"namespace\d+\.\d+", name):
            ns = _namespace(ctx, name, real[name], claims.get(name))
            if ns:
                inv["namespaces"].append(ns)
    _dimm_sizes(inv)
    providers = {b["name"]: b["provider"] for b in inv["buses"]}
    for region in inv["regions"]:
        region["provider"] = providers.get(region["bus"])
    return pm.sort_inventory(inv)


def _bus_of(path: str) -> str | None:
    m = re.search(r"/(ndbus\d+)(/|$)", path)
    return m.group(1) if m else None


def _dimm(ctx: ProbeContext, name: str, path: str) -> dict | None:
    """A DIMM of the nd bus. An NFIT one has ``nfit/`` (handle, id, phys_id); the nmemN a
    CXL memdev gives libnvdimm (cxl_pmem, on the CXL nvdimm bridge's bus) has none, but it is
    the DIMM behind that bus's regions (regionN/mapping0 names it, ndctl lists it: seen on
    6.1 in QEMU), so it is reported by name."""
    nfit = f"{path}/nfit"
    dimm = pm.new_dimm(name)
    if not ctx.access.is_dir(nfit):
        return dimm
    handle = ctx.integer(f"{nfit}/handle", required=True, base=16)
    if handle is not None:
        pm.decode_handle(dimm, handle)
    dimm["id"] = ctx.text(f"{nfit}/id")
    dimm["phys_id"] = ctx.integer(f"{nfit}/phys_id", base=16)
    return dimm


def nfit_flags(ctx: ProbeContext, name: str) -> list[str] | None:
    """The kernel's NFIT state flags of DIMM ``name`` (``nmemX/nfit/flags``), ``None`` if absent.

    Words as the kernel prints them: ``save_fail restore_fail flush_fail not_armed smart_event
    map_fail smart_notify`` (an empty line: none set). Kernels without the file: ``None``.
    """
    raw = ctx.text(f"{ND_DEVICES}/{name}/nfit/flags")
    return None if raw is None else sorted(set(raw.split()))


def _region(ctx: ProbeContext, name: str, path: str) -> dict:
    region = pm.new_region(name)
    region["bus"] = _bus_of(path)
    devtype = ctx.text(f"{path}/devtype")
    region["type"] = REGION_TYPES.get(devtype or "", devtype)
    region["size_bytes"] = ctx.integer(f"{path}/size", required=True)
    region["available_bytes"] = ctx.integer(f"{path}/available_size")
    # The kernel prints a region's align in hex ("0x1000000", region_align_show's %#lx; seen
    # on 6.1 in QEMU), a claim's in decimal: base 0 takes both spellings.
    region["align"] = ctx.integer(f"{path}/align", base=0)
    region["numa_node"] = ctx.integer(f"{path}/numa_node")
    region["target_node"] = ctx.integer(f"{path}/target_node")
    domain = ctx.text(f"{path}/persistence_domain")
    region["persistence_domain"] = domain or "unknown"
    cookie = ctx.integer(f"{path}/set_cookie", base=16)
    region["iset_id"] = pm.iset_hex(cookie) if cookie else None
    ways = ctx.integer(f"{path}/mappings", required=True)
    members = []
    for k in range(ways or 0):
        mapping = _mapping(ctx, f"{path}/mapping{k}")
        if mapping:
            members.append((mapping[3] if mapping[3] is not None else k, mapping[0], mapping[2]))
    region["interleave_ways"] = ways or None  # 0 mappings: no DIMMs behind it (e820, virtual)
    region["dimms"] = [dimm for _, dimm, _ in sorted(members)]
    region["_mapped"] = {dimm: length for _, dimm, length in members}
    region["state"] = None if ctx.access.exists(f"{path}/driver") else "disabled"
    return region


def _mapping(ctx: ProbeContext, path: str) -> tuple[str, int, int, int | None] | None:
    """``nmemX,<dpa>,<length>[,<position>]`` (older kernels omit the position)."""
    raw = ctx.text(path, required=True)
    if raw is None:
        return None
    parts = raw.split(",")
    try:
        if len(parts) not in (3, 4) or not parts[0].startswith("nmem"):
            raise ValueError(raw)
        position = int(parts[3]) if len(parts) == 4 else None
        return parts[0], int(parts[1]), int(parts[2]), position
    except ValueError:
        ctx.warn(f"{path}: malformed (expected nmemX,offset,length[,position])")
        return None


def _claim(ctx: ProbeContext, name: str, path: str) -> dict | None:
    """A pfn/btt/dax device; ``N.0`` seeds have an empty ``namespace`` and are skipped."""
    namespace = ctx.text(f"{path}/namespace")
    if not namespace:
        return None
    claim = {"name": name, "namespace": namespace, "kind": name.rstrip("0123456789.")}
    claim["size"] = ctx.integer(f"{path}/size")
    claim["align"] = ctx.integer(f"{path}/align")
    # A claimed namespace's uuid, as ndctl shows it, is the claim's (pfn/dax/btt info block);
    # the namespace's own label uuid is ndctl's raw_uuid (seen on 6.1 in QEMU).
    claim["uuid"] = ctx.text(f"{path}/uuid") or None
    claim["map"] = pm.MAP_ALIASES.get(ctx.text(f"{path}/mode") or "")
    claim["sector_size"] = _sector_size(ctx.text(f"{path}/sector_size"))
    entries = ctx.access.listdir(path)
    claim["blockdev"] = _first(ctx.access.listdir(f"{path}/block"))
    claim["chardev"] = next((e for e in entries if re.fullmatch(r"dax\d+\.\d+", e)), None)
    if claim["chardev"]:
        dax_dir = f"{path}/{claim['chardev']}"
        claim["target_node"] = ctx.integer(f"{dax_dir}/target_node")
        link = ctx.access.readlink(f"{dax_dir}/driver")
        claim["dax_driver"] = posixpath.basename(link) if link else None
    return claim


def _namespace(ctx: ProbeContext, name: str, path: str, claim: dict | None) -> dict | None:
    size = ctx.integer(f"{path}/size", required=True)
    if size == 0:  # an idle seed namespace
        return None
    ns = pm.new_namespace(name)
    region = posixpath.basename(posixpath.dirname(path))
    ns["region"] = region if region.startswith("region") else pm.region_of_namespace(name)
    raw_mode = ctx.text(f"{path}/mode")
    if raw_mode is None and claim:
        raw_mode = {"pfn": "memory", "dax": "dax", "btt": "safe"}[claim["kind"]]
    mode = pm.MODE_ALIASES.get(raw_mode or "raw")
    if mode is None:
        ctx.warn(f"{path}/mode: unknown namespace mode {raw_mode!r}")
    ns["mode"] = mode
    ns["uuid"] = ctx.text(f"{path}/uuid") or None
    ns["numa_node"] = ctx.integer(f"{path}/numa_node")
    ns["target_node"] = ctx.integer(f"{path}/target_node")
    ns["size_bytes"] = size
    if claim:
        ns["size_bytes"] = claim["size"] or size
        ns["align"] = claim["align"]
        ns["uuid"] = claim["uuid"] or ns["uuid"]
        if claim["kind"] != "btt":
            ns["map"] = claim["map"]
        ns["sector_size"] = claim["sector_size"] or _sector_size(ctx.text(f"{path}/sector_size"))
        ns["blockdev"] = claim["blockdev"]
        ns["chardev"] = claim["chardev"]
        if claim.get("dax_driver"):
            ns["dax_driver"] = claim["dax_driver"]
            ns["target_node"] = claim.get("target_node", ns["target_node"])
    else:
        ns["blockdev"] = _first(ctx.access.listdir(f"{path}/block"))
        ns["sector_size"] = _sector_size(ctx.text(f"{path}/sector_size"))
    if ns["mode"] == "devdax":
        ns["sector_size"] = None
    return ns


def _sector_size(raw: str | None) -> int | None:
    """``512 [4096]``: the bracketed value is the one in use."""
    if not raw:
        return None
    m = re.search(r"\[(\d+)\]", raw) or re.match(r"(\d+)", raw)
    return int(m.group(1)) if m else None


def _first(items: list[str]) -> str | None:
    return items[0] if items else None


def _dimm_sizes(inv: dict) -> None:
    """A DIMM's size here is the capacity it contributes to regions (App Direct capacity)."""
    totals: dict[str, int] = {}
    for region in inv["regions"]:
        for dimm, length in region.pop("_mapped", {}).items():
            totals[dimm] = totals.get(dimm, 0) + length
    for dimm in inv["dimms"]:
        dimm["size_bytes"] = totals.get(dimm["name"])


def dax_devices(ctx: ProbeContext) -> list[dict]:
    """Every device-dax instance (nd-backed, CXL region, or hmem soft-reserved)."""
    devices = []
    for name in ctx.access.listdir(DAX_DEVICES):
        path = ctx.access.realpath(f"{DAX_DEVICES}/{name}")
        driver = ctx.access.readlink(f"{path}/driver")
        devices.append({
            "name": name,
            "size_bytes": ctx.integer(f"{path}/size"),
            "target_node": ctx.integer(f"{path}/target_node"),
            "numa_node": ctx.integer(f"{path}/numa_node"),
            "driver": posixpath.basename(driver) if driver else None,
            "backing": _dax_backing(path),
        })
    return devices


def _dax_backing(path: str) -> str:
    if "/ndbus" in path:
        return "nd"
    if re.search(r"/region\d+/dax_region\d+/", path) or "/cxl" in path:
        return "cxl"
    if "/hmem" in path:
        return "hmem"
    return "unknown"
