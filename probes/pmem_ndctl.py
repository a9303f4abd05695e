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
from pmem_advisor.probes.sysaccess import loads_strict

NDCTL_ARGV = ["ndctl", "list", "-BDRNv"]
# Health is a second, separate call: the inventory call stays what captured trees recorded,
# and a firmware that hangs on the SMART query cannot cost us the inventory.
HEALTH_ARGV = ["ndctl", "list", "-DH"]
# ndctl's health_state words (ndctl-list(1), util/json-smart.c); anything else is "unknown".
HEALTH_STATES = ("ok", "non-critical", "critical", "fatal", "unknown")
# ndctl's flag_* names for the NFIT state flags -> the kernel's words in nmemX/nfit/flags, so a
# flag reads the same whichever source saw it.
NFIT_FLAG_WORDS = {"failed_save": "save_fail", "failed_restore": "restore_fail",
                   "failed_flush": "flush_fail", "failed_arm": "not_armed",
                   "failed_map": "map_fail", "smart_event": "smart_event"}
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
        return loads_strict(text)  # NaN/Infinity are malformed, not numbers
    except json.JSONDecodeError as e:
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


def health_from_ndctl(node: dict) -> dict | None:
    """One DIMM's profile ``health`` from its ``ndctl list -DH`` object (``None``: no health).

    Keeps the state, spares, life used, media temperature, last shutdown and its count; the
    alarms that are set (``alarm_spares`` ...) and the DIMM's ``flag_*`` (the NFIT state
    flags ndctl copies, named as the kernel does: ``flag_failed_flush`` -> ``flush_fail``)
    become ``flags``.
    """
    raw = node.get("health")
    flags = sorted(NFIT_FLAG_WORDS.get(k[5:], k[5:]) for k, v in node.items()
                   if k.startswith("flag_") and v is True)
    if not isinstance(raw, dict):
        return new_health("ndctl", flags=flags) if flags else None
    state = str(raw.get("health_state") or "unknown").strip().lower()
    health = new_health("ndctl", state=state if state in HEALTH_STATES else "unknown",
                        reported=raw.get("health_state"))
    for key in ("spares_percentage", "life_used_percentage", "temperature_celsius",
                "shutdown_count"):
        value = raw.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            health[key] = value
    if raw.get("shutdown_state") in ("clean", "dirty"):
        health["shutdown_state"] = raw["shutdown_state"]
    health["flags"] = sorted({*flags, *(k for k, v in raw.items()
                                         if k.startswith("alarm_") and v is True
                                         and not k.startswith("alarm_enabled"))})
    return health


def new_health(source: str, *, state: str = "unknown", reported=None, flags=()) -> dict:
    """The profile's ``pmem.dimms[].health`` shape, every key present."""
    return {"state": state, "reported": reported, "source": source,
            "spares_percentage": None, "life_used_percentage": None,
            "temperature_celsius": None, "shutdown_state": None, "shutdown_count": None,
            "flags": list(flags)}


def parse_health(text: str) -> dict[str, dict]:
    """``{nmemX: health}`` from any ``ndctl list`` JSON with DIMMs (``-DH``, ``-BDRNHv``...)."""
    found: dict[str, dict] = {}

    def walk(node) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            dev = str(node.get("dev", ""))
            if dev.startswith("nmem"):
                health = health_from_ndctl(node)
                if health is not None:
                    found[dev] = health
            for value in node.values():
                if isinstance(value, list | dict):
                    walk(value)

    walk(load_json(text))
    return found


def read_ndctl_health(ctx: ProbeContext) -> dict[str, dict]:
    """DIMM health by name from ``ndctl list -DH``; empty when ndctl or SMART is absent."""
    result = ctx.command(HEALTH_ARGV)
    if result is None:
        return {}
    try:
        return parse_health(result.stdout)
    except NdctlFormatError as e:
        ctx.warn(f"`{result.source}` output: malformed JSON ({e}); no DIMM health from ndctl")
        return {}
