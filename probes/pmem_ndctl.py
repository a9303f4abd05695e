"""PMEM from ``ndctl list`` and ``daxctl list`` JSON, in every nesting variant they print.

Variants handled (see design/probe-formats.md): a bare object (one result, or ndctl < v62), an
array, ``{"dimms": [...], "regions": [...]}`` wrappers, buses nesting dimms/regions nesting
namespaces (``-B``), human units (``-u``: sizes like ``"249.00 GiB (267.36 GB)"`` and hex
strings), signed ``iset_id``, old mode names, idle (zero-size) namespaces, empty output.
"""

from __future__ import annotations

import json
import re

from pmem_advisor.probes import pmem_model as pm
from pmem_advisor.probes.reading import ProbeContext

NDCTL_ARGV = ["ndctl", "list", "-BDRNv"]
DAXCTL_ARGV = ["daxctl", "list", "-RD"]
_UNITS = {"B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40,
          "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


class NdctlFormatError(ValueError):
    """The text is not ndctl JSON."""


def load_json(text: str):
    """JSON or ``None`` for empty output (ndctl prints nothing when nothing matches)."""
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError as e:
        raise NdctlFormatError(f"not JSON ({e.msg} at line {e.lineno})") from e


def number(value) -> tuple[int | None, bool]:
    """(bytes or int, approximate?) from an int, a hex string, or a human size string."""
    if isinstance(value, bool) or value is None:
        return None, False
    if isinstance(value, int):
        return value, False
    if isinstance(value, float):
        return int(value), False
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?0x[0-9a-fA-F]+", text):
            return int(text, 16), False
        if re.fullmatch(r"-?\d+", text):
            return int(text), False
        m = re.match(r"([\d.]+)\s*([KMGT]i?B|B)\b", text, re.IGNORECASE)
        if m:
            return int(float(m.group(1)) * _UNITS[m.group(2).upper()]), True
    return None, False


def parse_ndctl(text: str) -> tuple[dict, list[str]]:
    """Inventory from ``ndctl list`` output; returns (inventory, notes). Raises on non-JSON."""
    data = load_json(text)
    inv = pm.empty_inventory()
    notes: list[str] = []
    if data is None:
        return inv, notes
    regions_by_name: dict[str, dict] = {}
    mapped: dict[str, int] = {}

    def num(obj: dict, key: str) -> int | None:
        value, approx = number(obj.get(key))
        if approx and "ndctl printed human-readable sizes (-u); sizes are rounded" not in notes:
            notes.append("ndctl printed human-readable sizes (-u); sizes are rounded")
        return value

    def walk(node, bus: dict | None, region: str | None) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, bus, region)
            return
        if not isinstance(node, dict):
            return
        dev = str(node.get("dev", ""))
        if dev.startswith("ndbus"):
            bus = {"name": dev, "provider": node.get("provider")}
            inv["buses"].append(bus)
        elif dev.startswith("nmem"):
            inv["dimms"].append(_dimm(node, num))
        elif dev.startswith("region"):
            reg = _region(node, num, bus, mapped)
            if reg["name"] not in regions_by_name:
                regions_by_name[reg["name"]] = reg
                inv["regions"].append(reg)
            region = reg["name"]
        elif dev.startswith("namespace"):
            ns = _namespace(node, num, region)
            if ns is not None:
                inv["namespaces"].append(ns)
            return
        for key, value in node.items():
            if key != "mappings" and isinstance(value, (list, dict)):
                walk(value, bus, region)

    walk(data, None, None)
    for dimm in inv["dimms"]:
        dimm["size_bytes"] = mapped.get(dimm["name"], dimm["size_bytes"])
    return pm.sort_inventory(inv), notes


def _dimm(node: dict, num) -> dict:
    dimm = pm.new_dimm(node["dev"])
    handle = num(node, "handle")
    if handle is not None:
        pm.decode_handle(dimm, handle)
    dimm["id"] = node.get("id")
    dimm["phys_id"] = num(node, "phys_id")
    return dimm


def _region(node: dict, num, bus: dict | None, mapped: dict[str, int]) -> dict:
    region = pm.new_region(node["dev"])
    if bus:
        region["bus"], region["provider"] = bus["name"], bus["provider"]
    region["type"] = node.get("type")
    region["size_bytes"] = num(node, "size")
    region["available_bytes"] = num(node, "available_size")
    region["align"] = num(node, "align")
    region["numa_node"] = num(node, "numa_node")
    region["target_node"] = num(node, "target_node")
    region["persistence_domain"] = node.get("persistence_domain") or "unknown"
    iset = num(node, "iset_id")
    region["iset_id"] = pm.iset_hex(iset) if iset else None
    region["state"] = node.get("state")
    mappings = node.get("mappings")
    if isinstance(mappings, list):  # only with -D; there is no interleave_ways key
        members = []
        for k, m in enumerate(mappings):
            if isinstance(m, dict) and m.get("dimm"):
                position, _ = number(m.get("position"))
                members.append((position if position is not None else k, m["dimm"]))
                length, _ = number(m.get("length"))
                mapped[m["dimm"]] = mapped.get(m["dimm"], 0) + (length or 0)
        region["interleave_ways"] = len(members)
        region["dimms"] = [d for _, d in sorted(members)]
    return region


def _namespace(node: dict, num, region: str | None) -> dict | None:
    size = num(node, "size")
    if size == 0:  # idle or destroyed namespace (shown with -i)
        return None
    ns = pm.new_namespace(node["dev"])
    ns["region"] = region or pm.region_of_namespace(ns["name"])
    mode = str(node.get("mode", "raw")).strip()
    ns["mode"] = pm.MODE_ALIASES.get(mode, mode)
    ns["map"] = pm.MAP_ALIASES.get(str(node.get("map", "")).strip())
    ns["size_bytes"] = size
    ns["align"] = num(node, "align")
    ns["sector_size"] = num(node, "sector_size") if ns["mode"] != "devdax" else None
    ns["blockdev"] = node.get("blockdev")
    ns["chardev"] = node.get("chardev")
    daxregion = node.get("daxregion")
    if not ns["chardev"] and isinstance(daxregion, dict):
        devices = daxregion.get("devices") or []
        if devices and isinstance(devices[0], dict):
            ns["chardev"] = devices[0].get("chardev")
    ns["numa_node"] = num(node, "numa_node")
    ns["target_node"] = num(node, "target_node")
    ns["uuid"] = node.get("uuid")
    ns["state"] = node.get("state")
    return ns


def read_ndctl(ctx: ProbeContext) -> dict | None:
    """The inventory from the ndctl tool, or ``None`` if ndctl is absent or unusable."""
    result = ctx.command(NDCTL_ARGV)
    if result is None:
        return None
    try:
        inv, notes = parse_ndctl(result.stdout)
    except NdctlFormatError as e:
        ctx.warn(f"`{result.source}` output: malformed JSON ({e}); using sysfs")
        return None
    for note in notes:
        ctx.warn(note)
    return inv


def parse_daxctl(text: str) -> list[dict]:
    """``daxctl list`` devices (nested in regions with -R, or bare) as flat dicts."""
    found: list[dict] = []

    def walk(node) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if str(node.get("chardev", "")).startswith("dax"):
                size, _ = number(node.get("size"))
                target, _ = number(node.get("target_node"))
                found.append({"name": node["chardev"], "size_bytes": size,
                              "target_node": target, "mode": node.get("mode")})
            for value in node.values():
                if isinstance(value, (list, dict)):
                    walk(value)

    walk(load_json(text))
    return found
