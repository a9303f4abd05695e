"""Intel ``ipmctl`` outputs: v1 key=value lists, v2 pipe tables (with or without the ``====``
line), ``-o nvmxml`` XML. Only what the platform-mode decision and region cross-check need.

ipmctl prints absurd values sometimes (17179869056 GiB DDR) and some versions fail outright in
Memory/Mixed mode (``Error: GetMemoryResourcesInfo Failed``): we tolerate and report both.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from pmem_advisor.probes.reading import ProbeContext

MEMORY_RESOURCES_ARGV = ["ipmctl", "show", "-memoryresources"]
REGION_ARGV = ["ipmctl", "show", "-o", "nvmxml", "-region"]
CAPABILITIES_ARGV = ["ipmctl", "show", "-system", "-capabilities"]
DIMM_ARGV = ["ipmctl", "show", "-dimm"]
# ipmctl's HealthState words -> ndctl's health_state words (one vocabulary in the profile).
# "Non-functional" is a module that no longer answers: as bad as critical for its data.
HEALTH_WORDS = {"healthy": "ok", "noncritical failure": "non-critical",
                "critical failure": "critical", "fatal failure": "fatal",
                "non-functional": "critical"}
_UNITS = {"B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}
_ABSURD_BYTES = 1 << 60  # more than any platform can hold: a firmware/ipmctl bug


class IpmctlFormatError(ValueError):
    """The text is not a format we know."""


def capacity(text: str | None) -> int | None:
    """``"2024.000 GiB"`` -> bytes; ``"-"`` or junk -> ``None``."""
    if not text:
        return None
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]iB|B)\s*", text, re.IGNORECASE)
    if not m:
        return None
    return int(round(float(m.group(1)) * _UNITS[m.group(2).upper()]))


def parse_table(text: str) -> list[dict[str, str]]:
    """A v2 pipe table (header line, optional ``===`` line, rows) as dicts."""
    rows = [ln for ln in text.splitlines() if "|" in ln]
    if not rows:
        return []
    header = [c.strip() for c in rows[0].split("|")]
    return [dict(zip(header, (c.strip() for c in row.split("|")), strict=False))
            for row in rows[1:]]


def parse_memory_resources(text: str) -> dict:
    """Bytes of volatile/App Direct PMem and DDR cache; raises on ipmctl's error line."""
    if re.search(r"^\s*Error:", text, re.MULTILINE):
        raise IpmctlFormatError(text.strip().splitlines()[-1].strip())
    result: dict[str, int | None] = {}
    table = parse_table(text)
    if table:
        by_type = {row.get("MemoryType", ""): row for row in table}
        pmem_col = "PMemModule" if "PMemModule" in table[0] else "DCPMM"
        result["volatile_pmem_bytes"] = capacity(by_type.get("Volatile", {}).get(pmem_col))
        result["appdirect_pmem_bytes"] = capacity(by_type.get("AppDirect", {}).get(pmem_col))
        result["cache_ddr_bytes"] = capacity(by_type.get("Cache", {}).get("DDR"))
        result["volatile_ddr_bytes"] = capacity(by_type.get("Volatile", {}).get("DDR"))
    else:
        kv = dict(re.findall(r"^\s*(\w+)=(.+?)\s*$", text, re.MULTILINE))
        if not kv:
            raise IpmctlFormatError("no table and no key=value lines")
        result["volatile_pmem_bytes"] = capacity(kv.get("MemoryCapacity"))
        result["appdirect_pmem_bytes"] = capacity(kv.get("AppDirectCapacity"))
        result["cache_ddr_bytes"] = None
        result["volatile_ddr_bytes"] = None
    absurd = [k for k, v in result.items() if v is not None and v > _ABSURD_BYTES]
    for key in absurd:
        result[key] = None
    if absurd:
        result["absurd"] = absurd  # type: ignore[assignment]
    return result


def parse_regions(text: str) -> list[dict]:
    """``show -region`` as nvmxml or a pipe table: socket, ISetID, type, capacities, DIMMs."""
    stripped = text.strip()
    if stripped.startswith("<"):
        try:
            root = ET.fromstring(stripped)
        except ET.ParseError as e:
            raise IpmctlFormatError(f"bad XML: {e}") from e
        rows = [{child.tag: (child.text or "").strip() for child in region}
                for region in root.iter("Region")]
    else:
        rows = parse_table(text)
    regions = []
    for row in rows:
        socket = row.get("SocketID")
        dimms = [d.strip() for d in row.get("DimmID", "").split(",") if d.strip()]
        regions.append({
            "socket": int(socket, 0) if socket and re.fullmatch(r"(0x)?[0-9a-fA-F]+", socket)
            else None,
            "iset_id": (row.get("ISetID") or "").lower() or None,
            "type": row.get("PersistentMemoryType"),
            "capacity_bytes": capacity(row.get("Capacity")),
            "free_bytes": capacity(row.get("FreeCapacity")),
            "dimms": dimms,
        })
    return regions


def parse_capabilities(text: str) -> dict:
    kv = dict(re.findall(r"^\s*(\w+)=(.+?)\s*$", text, re.MULTILINE))
    return {"current_volatile_mode": kv.get("CurrentVolatileMode")}


def parse_dimms(text: str) -> list[dict]:
    """``show -dimm``: DimmID (the NFIT handle), HealthState and its normalised ``state``.

    Both the v1/v2 pipe table and the ``---DimmID=0x0001---`` key=value blocks of ``-a``.
    """
    if re.search(r"^\s*Error:", text, re.MULTILINE):
        raise IpmctlFormatError(text.strip().splitlines()[-1].strip())
    rows = parse_table(text)
    if not rows:
        rows = []
        for block in re.split(r"^\s*---(?=DimmID=)", text, flags=re.MULTILINE)[1:]:
            block = block.replace("---", "\n", 1)
            rows.append(dict(re.findall(r"^\s*(\w+)=(.*?)\s*$", block, re.MULTILINE)))
    dimms = []
    for row in rows:
        dimm_id = (row.get("DimmID") or "").strip().lower()
        if not re.fullmatch(r"0x[0-9a-f]+", dimm_id):
            continue
        reported = (row.get("HealthState") or "").strip() or None
        dimms.append({"dimm_id": dimm_id, "health_state": reported,
                      "state": HEALTH_WORDS.get((reported or "").lower(), "unknown"),
                      "health_reason": (row.get("HealthStateReason") or "").strip() or None})
    if not dimms and "DimmID" in text:
        raise IpmctlFormatError("DimmID header without a readable module row")
    return dimms  # "No PMem modules in the system.": none, not an error


def read_ipmctl(ctx: ProbeContext) -> dict | None:
    """What ipmctl says, or ``None`` when it is not installed. Failures become warnings."""
    facts: dict = {}
    ran = False
    for key, argv, parse in (
        ("memory_resources", MEMORY_RESOURCES_ARGV, parse_memory_resources),
        ("regions", REGION_ARGV, parse_regions),
        ("capabilities", CAPABILITIES_ARGV, parse_capabilities),
        ("dimms", DIMM_ARGV, parse_dimms),
    ):
        result = ctx.access.run(argv)
        if result is None:
            continue
        ran = True
        output = result.stdout + ("\n" + result.stderr if result.returncode else "")
        try:
            facts[key] = parse(output)
        except IpmctlFormatError as e:
            ctx.warn(f"`{result.source}`: {e}")
            facts[key] = None
            continue
        absurd = facts[key].get("absurd") if isinstance(facts[key], dict) else None
        if absurd:
            ctx.warn(f"`{result.source}`: ignored absurd values for {', '.join(absurd)}")
    return facts if ran else None
