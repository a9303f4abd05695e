"""The human summary of a probe profile (rich renderables; the CLI prints them)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from pmem_advisor.probes.reading import format_cpulist

MODE_TEXT = {
    "none": "no persistent memory",
    "app_direct": "App Direct (persistent, byte-addressable)",
    "memory": "Memory mode (PMEM is volatile RAM, DRAM is its cache)",
    "mixed": "mixed (part Memory mode, part App Direct)",
}


def human_bytes(value: int | None) -> str:
    if value is None:
        return "?"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(value)


def _v(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "-"
    return str(value)


def _cpus(cpus: list[int] | None) -> str:
    return format_cpulist(cpus) if cpus else "none"


def render_summary(profile: dict) -> Group:
    parts: list = []
    host, cpu, pmem = profile["host"], profile["cpu"], profile["pmem"]
    src = profile["source"]
    where = "this machine" if src["kind"] == "live" else f"{src['kind']} {src['root']}"
    parts.append(Text.assemble(
        ("Machine ", "bold"), f"{host.get('hostname') or '?'} ({where}), kernel "
        f"{host.get('kernel') or '?'}, page size {_v(host.get('page_size'))}\n",
        ("CPU ", "bold"), f"{_v(cpu['model'])}: {_v(cpu['sockets'])} socket(s), "
        f"{_v(cpu['cores'])} cores, {_v(cpu['threads'])} threads, "
        f"LLC {human_bytes(cpu['llc_bytes'])}; RAM {human_bytes(profile['memory']['total_bytes'])}",
    ))
    numa = Table(title="NUMA nodes", title_justify="left")
    for col in ("node", "cpus", "memory", "kind", "distances"):
        numa.add_column(col)
    for n in profile["numa"]:
        numa.add_row(str(n["node"]), _cpus(n["cpus"]), human_bytes(n["memory_bytes"]),
                     n["kind"], _v(n["distances"]))
    parts.append(numa)

    mode_style = "green" if pmem["mode"] != "none" else "yellow"
    parts.append(Text.assemble(("Persistent memory: ", "bold"),
                               (MODE_TEXT.get(pmem["mode"], pmem["mode"]), mode_style),
                               f"  [source: {pmem['source']}]"
                               + ("  (legacy memmap= emulation)" if pmem["legacy_memmap"] else "")))
    for line in pmem["mode_evidence"]:
        parts.append(Text(f"  - {line}", style="dim"))
    if pmem["regions"]:
        t = Table(title="PMEM regions", title_justify="left")
        for col in ("region", "type", "size", "free", "node", "ways", "dimms", "persistence"):
            t.add_column(col)
        for r in pmem["regions"]:
            t.add_row(r["name"], _v(r["type"]), human_bytes(r["size_bytes"]),
                      human_bytes(r["available_bytes"]), _v(r["numa_node"]),
                      _v(r["interleave_ways"]), _v(r["dimms"]), _v(r["persistence_domain"]))
        parts.append(t)
    if pmem["namespaces"]:
        t = Table(title="PMEM namespaces", title_justify="left")
        for col in ("namespace", "region", "mode", "map", "size", "align", "device", "node"):
            t.add_column(col)
        for ns in pmem["namespaces"]:
            t.add_row(ns["name"], _v(ns["region"]), _v(ns["mode"]), _v(ns["map"]),
                      human_bytes(ns["size_bytes"]), human_bytes(ns["align"])
                      if ns["align"] else "-", _v(ns["blockdev"] or ns["chardev"]),
                      _v(ns["numa_node"]))
        parts.append(t)
    cxl = profile["cxl"]
    if cxl["memdevs"] or cxl["regions"]:
        t = Table(title="CXL memory devices", title_justify="left")
        for col in ("memdev", "ram", "pmem", "node", "serial"):
            t.add_column(col)
        for m in cxl["memdevs"]:
            t.add_row(m["name"], human_bytes(m["ram_bytes"]) if m["ram_bytes"] else "-",
                      human_bytes(m["pmem_bytes"]) if m["pmem_bytes"] else "-",
                      _v(m["numa_node"]), _v(m["serial"]))
        parts.append(t)
        if cxl["nodes"]:
            parts.append(Text(f"CXL memory appears as CPU-less NUMA node(s) {cxl['nodes']}"))
    if profile["paths"]:
        t = Table(title="Paths", title_justify="left")
        for col in ("path", "mount", "fs", "device", "medium", "dax", "block", "node"):
            t.add_column(col, overflow="fold")
        notes = []
        for p in profile["paths"]:
            medium = p["medium"] + (" (emulated PMEM)" if p["emulated_pmem"] else "")
            t.add_row(p["path"], _v(p["mountpoint"]), _v(p["fstype"]),
                      _v(p["base_device"] or p["device"]), medium, _v(p["dax"]),
                      _v(p["block_size"]), _v(p["numa_node"]))
            notes += [f"  {p['path']}: {note}" for note in p["notes"]]
        parts.append(t)
        parts += [Text(line, style="dim") for line in notes]
    dax_mounts = [m for m in profile["mounts"] if m["dax"]]
    for m in dax_mounts:
        parts.append(Text(f"DAX mount: {m['device']} on {m['mountpoint']} ({m['fstype']}, "
                          f"dax={m['dax']}, block size {_v(m['block_size'])})"))
    for w in profile["warnings"]:
        parts.append(Text(f"warning: {w}", style="yellow"))
    return Group(*parts)
