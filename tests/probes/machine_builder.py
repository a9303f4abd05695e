"""Build a fake machine tree (sysfs/procfs shaped like the kernel's ABI) from machine.yaml.

Each ``tests/probes/machines/<name>/`` holds ``machine.yaml`` (a compact description) and
optionally ``files/`` (literal files copied over the generated tree: hand-written tool outputs,
or a whole captured tree). The sysfs layout follows the kernel: real directories under
``/sys/devices``, relative symlinks from ``/sys/bus/*/devices``, ``/sys/block``,
``/sys/class/block`` and ``/sys/dev/block``; libnvdimm claims (pfn/btt/dax) as children of
their region with ``N.0`` seeds; ``ndctl list -BDRNv`` JSON is generated in ndctl's own key
order when ``tools.ndctl: generate``. ``files`` (in-tree path -> content) writes literal files
such as cgroup interface files (``/sys/fs/cgroup/.../memory.max``) and ``/proc/self/cgroup``;
``hugepages`` ({size_kb: {total, free, reserved, surplus}}) and ``thp`` (always|madvise|never)
lay out ``/sys/kernel/mm`` and the ``HugePages_*`` lines of ``/proc/meminfo`` as the kernel
prints them.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import yaml

from pmem_advisor.probes.reading import format_cpulist

MACHINES = Path(__file__).resolve().parent / "machines"
NDCTL_OUT = ".pmem-advisor/commands/ndctl_list_-BDRNv.out"


def machine_names() -> list[str]:
    return sorted(p.name for p in MACHINES.iterdir() if (p / "machine.yaml").is_file())


def load_description(name: str) -> dict:
    return yaml.safe_load((MACHINES / name / "machine.yaml").read_text()) or {}


class Tree:
    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, path: str, content) -> None:
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else str(content)
        target.write_text(text if text.endswith("\n") or text == "" else text + "\n")

    def mkdir(self, path: str) -> None:
        (self.root / path.lstrip("/")).mkdir(parents=True, exist_ok=True)

    def link(self, path: str, target: str) -> None:
        """A relative symlink at ``path`` pointing at the absolute in-tree ``target``."""
        link = self.root / path.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        rel = os.path.relpath(target, os.path.dirname(path))
        if link.is_symlink():
            link.unlink()
        link.symlink_to(rel)


def build(name: str, dest: Path) -> Path:
    """Materialise machine ``name`` under ``dest`` (created); returns ``dest``."""
    desc = load_description(name)
    dest.mkdir(parents=True, exist_ok=True)
    tree = Tree(dest)
    if desc.get("generate", True):
        _generate(tree, desc)
    files = MACHINES / name / "files"
    if files.is_dir():
        shutil.copytree(files, dest, symlinks=True, dirs_exist_ok=True)
    return dest


# -- generation ------------------------------------------------------------------------------
def _generate(t: Tree, d: dict) -> None:
    t.write("/proc/sys/kernel/hostname", d.get("hostname", "fake"))
    t.write("/proc/sys/kernel/osrelease", d.get("kernel", "5.15.0-91-generic"))
    t.write("/proc/meminfo", f"MemTotal:       {d['memory_kb']} kB\nMemFree:        1024 kB\n"
            + _meminfo_huge(d))
    if "iomem" in d:
        t.write("/proc/iomem", d["iomem"])
    if "mountinfo" in d:
        t.write("/proc/self/mountinfo", d["mountinfo"])
    facts = {"page_size": d.get("page_size", 4096),
             "statvfs": {mp: {"f_bsize": b} for mp, b in (d.get("statvfs") or {}).items()}}
    t.write("/.pmem-advisor/facts.json", json.dumps(facts, indent=1))
    _cpus(t, d["cpu"])
    _nodes(t, d)
    devno = iter(range(0, 1000))
    nd = d.get("nd")
    if nd:
        _nd(t, nd, devno)
    for disk in d.get("block") or []:
        _disk(t, disk)
    if d.get("cxl"):
        _cxl(t, d["cxl"])
    _hugepages(t, d)
    for path, text in (d.get("files") or {}).items():
        t.write(path, "" if text is None else str(text))
    for name, text in (d.get("commands") or {}).items():
        if text == "generate-ndctl":
            t.write(f"/.pmem-advisor/commands/{name}.out", ndctl_json(nd))
        else:
            t.write(f"/.pmem-advisor/commands/{name}.out", text)


def _meminfo_huge(d: dict) -> str:
    """The default pool's lines (the first size given) as /proc/meminfo prints them."""
    pools = d.get("hugepages") or {}
    if not pools:
        return ""
    size_kb = next(iter(pools))
    p = pools[size_kb]
    return (f"HugePages_Total:   {p.get('total', 0):5d}\nHugePages_Free:    {p.get('free', 0):5d}\n"
            f"HugePages_Rsvd:    {p.get('reserved', 0):5d}\n"
            f"HugePages_Surp:    {p.get('surplus', 0):5d}\nHugepagesize:       {size_kb} kB\n")


def _hugepages(t: Tree, d: dict) -> None:
    for size_kb, p in (d.get("hugepages") or {}).items():
        base = f"/sys/kernel/mm/hugepages/hugepages-{size_kb}kB"
        for file, key in (("nr_hugepages", "total"), ("free_hugepages", "free"),
                          ("resv_hugepages", "reserved"), ("surplus_hugepages", "surplus")):
            t.write(f"{base}/{file}", p.get(key, 0))
    if d.get("thp"):
        t.write("/sys/kernel/mm/transparent_hugepage/enabled", " ".join(
            f"[{m}]" if m == d["thp"] else m for m in ("always", "madvise", "never")))


def _cpus(t: Tree, c: dict) -> None:
    sockets, cores, threads = c["sockets"], c["cores_per_socket"], c["threads_per_core"]
    n = sockets * cores * threads
    t.write("/sys/devices/system/cpu/online", f"0-{n - 1}")
    t.write("/sys/devices/system/cpu/possible", f"0-{n - 1}")
    cpuinfo = []
    for cpu in range(n):
        thread, rest = divmod(cpu, sockets * cores)
        socket, core = divmod(rest, cores)
        base = f"/sys/devices/system/cpu/cpu{cpu}"
        t.write(f"{base}/topology/physical_package_id", socket)
        t.write(f"{base}/topology/die_id", 0)
        t.write(f"{base}/topology/core_id", core)
        siblings = ",".join(str(socket * cores + core + k * sockets * cores)
                            for k in range(threads))
        t.write(f"{base}/topology/thread_siblings_list", siblings)
        if cpu == 0:
            for idx, (level, kind, size) in enumerate(
                    [(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"),
                     (3, "Unified", c.get("l3", "36608K"))]):
                t.write(f"{base}/cache/index{idx}/level", level)
                t.write(f"{base}/cache/index{idx}/type", kind)
                t.write(f"{base}/cache/index{idx}/size", size)
        cpuinfo.append(
            f"processor\t: {cpu}\nvendor_id\t: GenuineIntel\nmodel name\t: {c['model']}\n"
            f"physical id\t: {socket}\nsiblings\t: {cores * threads}\ncore id\t\t: {core}\n"
            f"cpu cores\t: {cores}\n")
    t.write("/proc/cpuinfo", "\n".join(cpuinfo))


def _nodes(t: Tree, d: dict) -> None:
    c = d["cpu"]
    sockets, cores, threads = c["sockets"], c["cores_per_socket"], c["threads_per_core"]
    nodes = d["nodes"]
    t.write("/sys/devices/system/node/online", ",".join(str(n["node"]) for n in nodes))
    for i, n in enumerate(nodes):
        base = f"/sys/devices/system/node/node{n['node']}"
        cpus = []
        if n.get("socket") is not None:
            s = n["socket"]
            cpus = [k * sockets * cores + s * cores + core
                    for k in range(threads) for core in range(cores)]
        t.write(f"{base}/cpulist", format_cpulist(sorted(cpus)))
        t.write(f"{base}/meminfo", f"Node {n['node']} MemTotal:       {n['memory_kb']} kB\n"
                                   f"Node {n['node']} MemFree:        1024 kB\n")
        dist = d.get("distances")
        t.write(f"{base}/distance", " ".join(str(x) for x in dist[i]) if dist else "10")
        if n.get("side_cache_bytes"):
            cache = f"{base}/memory_side_cache/index1"
            t.write(f"{cache}/size", n["side_cache_bytes"])
            t.write(f"{cache}/line_size", 64)
            t.write(f"{cache}/indexing", 0)
            t.write(f"{cache}/write_policy", 0)


def nd_dimms(nd: dict) -> list[dict]:
    """Explicit DIMMs, or ``per_socket`` DIMMs laid out over 2 iMCs x 3 channels (Optane)."""
    if "dimms" in nd:
        return nd["dimms"]
    dimms = []
    for s in range(nd.get("sockets", 0)):
        for k in range(nd["per_socket"]):
            imc, channel = divmod(k, 3)
            handle = (s << 12) | (imc << 8) | (channel << 4) | 1
            idx = len(dimms)
            dimms.append({"name": f"nmem{idx}", "handle": handle, "phys_id": 0x1c + 4 * idx,
                          "id": f"8089-a2-1837-{0x1000 + idx:08x}", "socket": s})
    return dimms


def region_members(nd: dict, r: dict) -> list[str]:
    """``dimms: socket:N`` is shorthand for every DIMM on socket N (one interleave set)."""
    members = r.get("dimms") or []
    if isinstance(members, str) and members.startswith("socket:"):
        socket = int(members.split(":", 1)[1])
        return [x["name"] for x in nd_dimms(nd) if x.get("socket") == socket]
    return list(members)


def _nd_bus_dir(nd: dict) -> str:
    platform = {"e820": "e820_pmem"}.get(nd.get("provider", ""), "ACPI0012:00")
    return f"/sys/devices/platform/{platform}/{nd.get('bus', 'ndbus0')}"


def _nd(t: Tree, nd: dict, devno) -> None:
    bus = _nd_bus_dir(nd)
    t.write(f"{bus}/provider", nd.get("provider", "ACPI.NFIT"))
    t.link(f"/sys/bus/nd/devices/{nd.get('bus', 'ndbus0')}", bus)
    t.mkdir("/sys/bus/nd/drivers/nd_region")
    t.mkdir("/sys/bus/dax/drivers/device_dax")
    t.mkdir("/sys/bus/dax/drivers/kmem")
    for dimm in nd_dimms(nd) if nd.get("provider", "ACPI.NFIT") == "ACPI.NFIT" else []:
        base = f"{bus}/{dimm['name']}"
        t.write(f"{base}/devtype", "nvdimm")
        t.write(f"{base}/nfit/handle", f"0x{dimm['handle']:x}")
        t.write(f"{base}/nfit/phys_id", f"0x{dimm['phys_id']:x}")
        t.write(f"{base}/nfit/id", dimm["id"])
        t.link(f"/sys/bus/nd/devices/{dimm['name']}", base)
    for r in nd.get("regions") or []:
        _nd_region(t, bus, r | {"dimms": region_members(nd, r)}, devno)


def _nd_region(t: Tree, bus: str, r: dict, devno) -> None:
    num = r["name"][len("region"):]
    base = f"{bus}/{r['name']}"
    t.link(f"/sys/bus/nd/devices/{r['name']}", base)
    t.write(f"{base}/devtype", r.get("devtype", "nd_pmem"))
    t.write(f"{base}/nstype", 4)
    t.write(f"{base}/size", r["size"])
    t.write(f"{base}/available_size", r.get("available", 0))
    t.write(f"{base}/numa_node", r.get("numa_node", 0))
    if "target_node" in r:
        t.write(f"{base}/target_node", r["target_node"])
    if "align" in r:
        t.write(f"{base}/align", r["align"])
    if "set_cookie" in r:
        t.write(f"{base}/set_cookie", f"0x{r['set_cookie'] & (2**64 - 1):016x}")
    t.write(f"{base}/persistence_domain", r.get("persistence_domain", ""))
    t.write(f"{base}/read_only", 0)
    members = r.get("dimms") or []
    t.write(f"{base}/mappings", len(members))
    length = r["size"] // max(len(members), 1)
    for k, dimm in enumerate(members):
        t.write(f"{base}/mapping{k}", f"{dimm},268435456,{length},{k}")
    t.link(f"{base}/driver", "/sys/bus/nd/drivers/nd_region")
    seq = {"pfn": 0, "btt": 0, "dax": 0}
    for kind in seq:  # idle seeds: N.0 with an empty namespace file
        t.write(f"{base}/{kind}{num}.0/namespace", "")
        t.link(f"/sys/bus/nd/devices/{kind}{num}.0", f"{base}/{kind}{num}.0")
    for ns in r.get("namespaces") or []:
        _nd_namespace(t, base, num, r, ns, seq, devno)


_KERNEL_MODE = {"fsdax": "memory", "devdax": "dax", "sector": "safe", "raw": "raw"}
_CLAIM = {"fsdax": "pfn", "devdax": "dax", "sector": "btt"}


def _nd_namespace(t: Tree, region: str, num: str, r: dict, ns: dict, seq: dict, devno) -> None:
    base = f"{region}/{ns['name']}"
    t.link(f"/sys/bus/nd/devices/{ns['name']}", base)
    t.write(f"{base}/devtype", "nd_namespace_pmem" if "uuid" in ns else "nd_namespace_io")
    t.write(f"{base}/nstype", 4)
    t.write(f"{base}/mode", _KERNEL_MODE[ns["mode"]])
    t.write(f"{base}/size", ns["size"])
    if "uuid" in ns:  # label-backed pmem namespaces: uuid and a logical sector size
        t.write(f"{base}/uuid", ns["uuid"])
        t.write(f"{base}/sector_size", "[512] 4096")
    t.write(f"{base}/numa_node", ns.get("numa_node", r.get("numa_node", 0)))
    if "target_node" in r:
        t.write(f"{base}/target_node", r["target_node"])
    kind = _CLAIM.get(ns["mode"])
    if kind is None:  # raw: the block device hangs off the namespace itself
        t.write(f"{base}/holder", "")
        _pmem_block(t, base, ns["blockdev"], devno, dax=True)
        return
    seq[kind] += 1
    claim = f"{region}/{kind}{num}.{seq[kind]}"
    t.write(f"{base}/holder", f"{kind}{num}.{seq[kind]}")
    t.link(f"/sys/bus/nd/devices/{kind}{num}.{seq[kind]}", claim)
    t.write(f"{claim}/namespace", ns["name"])
    t.write(f"{claim}/numa_node", ns.get("numa_node", r.get("numa_node", 0)))
    t.write(f"{claim}/size", ns.get("usable", ns["size"]))
    if kind in ("pfn", "dax"):
        t.write(f"{claim}/mode", {"dev": "pmem", "mem": "ram"}[ns.get("map", "dev")])
        t.write(f"{claim}/align", ns.get("align", 2097152))
    if kind == "btt":
        size = ns.get("sector_size", 4096)
        t.write(f"{claim}/sector_size", " ".join(
            f"[{s}]" if s == size else str(s) for s in (512, 520, 528, 4096, 4104, 4160, 4224)))
    if kind == "dax":
        chardev = ns["chardev"]
        dev = f"{claim}/{chardev}"
        t.write(f"{dev}/size", ns.get("usable", ns["size"]))
        t.write(f"{dev}/target_node", r.get("target_node", r.get("numa_node", 0)))
        t.write(f"{dev}/numa_node", r.get("numa_node", 0))
        t.write(f"{dev}/align", ns.get("align", 2097152))
        t.link(f"{dev}/driver", f"/sys/bus/dax/drivers/{ns.get('dax_driver', 'device_dax')}")
        t.link(f"/sys/bus/dax/devices/{chardev}", dev)
        return
    _pmem_block(t, claim, ns["blockdev"], devno, dax=(kind == "pfn"))


def _pmem_block(t: Tree, parent: str, name: str, devno, *, dax: bool) -> None:
    block = f"{parent}/block/{name}"
    number = f"259:{next(devno)}"
    t.write(f"{block}/dev", number)
    t.write(f"{block}/queue/rotational", 0)
    t.write(f"{block}/queue/dax", 1 if dax else 0)
    t.write(f"{block}/queue/logical_block_size", 4096 if name.endswith("s") else 512)
    t.link(f"{block}/device", parent)
    for alias in (f"/sys/block/{name}", f"/sys/class/block/{name}", f"/sys/dev/block/{number}"):
        t.link(alias, block)


def _disk(t: Tree, disk: dict) -> None:
    """A non-PMEM block device: NVMe/SATA/virtio disk with partitions, or a dm device."""
    name = disk["name"]
    if disk.get("slaves"):  # device-mapper (LVM, crypt) or md
        block = f"/sys/devices/virtual/block/{name}"
        for slave in disk["slaves"]:
            t.link(f"{block}/slaves/{slave}", f"/sys/class/block/{slave}")
        t.write(f"{block}/dm/name", disk.get("dm_name", name))
        t.write(f"{block}/queue/rotational", 0)
    else:
        device = f"/sys/devices/{disk['device']}"
        block = f"{device}/block/{name}"
        if disk.get("numa_node") is not None:
            t.write(f"{device}/numa_node", disk["numa_node"])
        for key in ("model", "vendor"):  # NVMe controllers and SCSI disks name themselves
            if disk.get(key):
                t.write(f"{device}/{key}", disk[key])
        t.link(f"{block}/device", device)
        t.write(f"{block}/queue/rotational", disk.get("rotational", 0))
        t.write(f"{block}/queue/dax", 0)
    t.write(f"{block}/dev", disk["devno"])
    for alias in (f"/sys/block/{name}", f"/sys/class/block/{name}",
                  f"/sys/dev/block/{disk['devno']}"):
        t.link(alias, block)
    for part in disk.get("partitions") or []:
        pdir = f"{block}/{part['name']}"
        t.write(f"{pdir}/partition", part["name"][-1])
        t.write(f"{pdir}/dev", part["devno"])
        t.link(f"/sys/class/block/{part['name']}", pdir)
        t.link(f"/sys/dev/block/{part['devno']}", pdir)


def _cxl(t: Tree, cxl: dict) -> None:
    root = "/sys/devices/platform/ACPI0017:00/root0"
    for m in cxl.get("memdevs") or []:
        base = f"/sys/devices/pci0000:{m['host_bridge']}/{m['pci']}/{m['name']}"
        t.write(f"{base}/ram/size", f"0x{m.get('ram_size', 0):x}")
        t.write(f"{base}/pmem/size", f"0x{m.get('pmem_size', 0):x}")
        t.write(f"{base}/serial", f"0x{m['serial']:x}")
        t.write(f"{base}/numa_node", m["numa_node"])
        t.link(f"/sys/bus/cxl/devices/{m['name']}", base)
    for r in cxl.get("regions") or []:
        base = f"{root}/decoder0.0/{r['name']}"
        t.write(f"{base}/mode", r["mode"])
        t.write(f"{base}/size", f"0x{r['size']:x}")
        t.write(f"{base}/interleave_ways", r["ways"])
        t.write(f"{base}/interleave_granularity", r.get("granularity", 256))
        t.write(f"{base}/commit", 1)
        t.link(f"/sys/bus/cxl/devices/{r['name']}", base)
        if r.get("dax"):
            num = r["name"][len("region"):]
            dev = f"{base}/dax_region{num}/{r['dax']}"
            t.write(f"{dev}/size", r["size"])
            t.write(f"{dev}/target_node", r["target_node"])
            t.write(f"{dev}/numa_node", r.get("numa_node", 0))
            t.link(f"{dev}/driver", f"/sys/bus/dax/drivers/{r.get('dax_driver', 'kmem')}")
            t.link(f"/sys/bus/dax/devices/{r['dax']}", dev)
            t.mkdir("/sys/bus/dax/drivers/kmem")


# -- ndctl JSON ------------------------------------------------------------------------------
def _signed(value: int) -> int:
    value &= 2**64 - 1
    return value - 2**64 if value >= 2**63 else value


def ndctl_json(nd: dict) -> str:
    """``ndctl list -BDRNv`` as ndctl v7x prints it (keys in its order, 2-space json-c style)."""
    bus = {"provider": nd.get("provider", "ACPI.NFIT"), "dev": nd.get("bus", "ndbus0"),
           "scrub_state": "idle"}
    if bus["provider"] == "ACPI.NFIT":
        bus["dimms"] = [{"dev": x["name"], "id": x["id"], "handle": x["handle"],
                         "phys_id": x["phys_id"]} for x in reversed(nd_dimms(nd))]
    regions = []
    for r in nd.get("regions") or []:
        out = {"dev": r["name"], "size": r["size"]}
        if "align" in r:
            out["align"] = r["align"]
        out |= {"available_size": r.get("available", 0),
                "max_available_extent": r.get("available", 0),
                "type": {"nd_pmem": "pmem", "nd_volatile": "volatile"}[r.get("devtype", "nd_pmem")],
                "numa_node": r.get("numa_node", 0)}
        if "target_node" in r:
            out["target_node"] = r["target_node"]
        if "set_cookie" in r:
            out["iset_id"] = _signed(r["set_cookie"])
        members = region_members(nd, r)
        if members:
            length = r["size"] // len(members)
            out["mappings"] = [{"dimm": dimm, "offset": 268435456, "length": length,
                                "position": k} for k, dimm in enumerate(members)]
        if r.get("persistence_domain"):
            out["persistence_domain"] = r["persistence_domain"]
        namespaces = []
        for ns in r.get("namespaces") or []:
            o = {"dev": ns["name"], "mode": ns["mode"]}
            if ns["mode"] in ("fsdax", "devdax"):
                o["map"] = ns.get("map", "dev")
            o["size"] = ns.get("usable", ns["size"])
            if "uuid" in ns:
                o["uuid"] = ns["uuid"]
            if ns["mode"] == "sector":
                o["sector_size"] = ns.get("sector_size", 4096)
            elif ns["mode"] != "devdax":
                o["sector_size"] = 512
            if ns["mode"] in ("fsdax", "devdax"):
                o["align"] = ns.get("align", 2097152)
            o["blockdev" if ns["mode"] != "devdax" else "chardev"] = (
                ns.get("blockdev") or ns.get("chardev"))
            o["numa_node"] = ns.get("numa_node", r.get("numa_node", 0))
            if "target_node" in r:
                o["target_node"] = r["target_node"]
            namespaces.append(o)
        if namespaces:
            out["namespaces"] = namespaces
        regions.append(out)
    if regions:
        bus["regions"] = list(reversed(regions))
    return json.dumps([bus], indent=2).replace('": ', '":') + "\n"
