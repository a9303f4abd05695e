"""The normalised PMEM inventory both readers (ndctl JSON and raw sysfs) produce.

Keeping one shape lets the profile compare the two paths and fill gaps in one from the other.
"""

from __future__ import annotations

import re

U64 = (1 << 64) - 1

# Kernel sysfs and ndctl < v60 used other words for the namespace modes.
MODE_ALIASES = {
    "fsdax": "fsdax", "memory": "fsdax",
    "devdax": "devdax", "dax": "devdax",
    "sector": "sector", "safe": "sector",
    "raw": "raw",
}
# Claim (pfn/dax device) ``mode`` file: where the struct pages live.
MAP_ALIASES = {"pmem": "dev", "ram": "mem", "dev": "dev", "mem": "mem"}

REGION_KEYS = ("name", "bus", "provider", "type", "size_bytes", "available_bytes", "align",
               "numa_node", "target_node", "interleave_ways", "dimms", "persistence_domain",
               "iset_id", "state")
NAMESPACE_KEYS = ("name", "region", "mode", "map", "size_bytes", "align", "sector_size",
                  "blockdev", "chardev", "numa_node", "target_node", "uuid", "state")
DIMM_KEYS = ("name", "id", "handle", "phys_id", "socket", "imc", "channel", "slot",
             "size_bytes")


def empty_inventory() -> dict:
    return {"buses": [], "dimms": [], "regions": [], "namespaces": []}


def new_region(name: str) -> dict:
    return dict.fromkeys(REGION_KEYS) | {"name": name, "dimms": []}


def new_namespace(name: str) -> dict:
    return dict.fromkeys(NAMESPACE_KEYS) | {"name": name}


def new_dimm(name: str) -> dict:
    return dict.fromkeys(DIMM_KEYS) | {"name": name}


def decode_handle(dimm: dict, handle: int) -> None:
    """NFIT device handle: socket, memory controller, channel and slot bit-fields."""
    dimm["handle"] = f"0x{handle:04x}"
    dimm["socket"] = (handle >> 12) & 0xF
    dimm["imc"] = (handle >> 8) & 0xF
    dimm["channel"] = (handle >> 4) & 0xF
    dimm["slot"] = handle & 0xF


def iset_hex(value: int) -> str:
    """Interleave-set cookie as u64 hex: ndctl's signed decimal and ipmctl's ISetID agree."""
    return f"0x{value & U64:016x}"


def region_of_namespace(name: str) -> str | None:
    m = re.fullmatch(r"namespace(\d+)\.\d+", name)
    return f"region{m.group(1)}" if m else None


def natural_key(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name or ""))


def sort_inventory(inv: dict) -> dict:
    for key in ("buses", "dimms", "regions", "namespaces"):
        inv[key].sort(key=lambda item: natural_key(item["name"]))
    return inv


def merge_inventory(primary: dict, secondary: dict) -> dict:
    """Fill the ``None`` (or empty-list) fields of ``primary`` from ``secondary``, item by item.

    The item set stays the primary's: a tool that ran is trusted about what exists.
    """
    for key in ("buses", "dimms", "regions", "namespaces"):
        others = {item["name"]: item for item in secondary.get(key, [])}
        for item in primary.get(key, []):
            other = others.get(item["name"])
            if not other:
                continue
            for field, value in other.items():
                if item.get(field) in (None, []) and value not in (None, []):
                    item[field] = value
    return primary
