"""Mounts and the medium under any path: filesystem, block size, DAX state, base device.

The device of a mount comes from ``/proc/self/mountinfo`` (major:minor, so ``/dev/root`` and
``/dev/mapper`` names need no guessing) and is followed through partitions and
device-mapper/md/LVM ``slaves`` to the base disks (the leaves); the medium is read off the
leaves. A leaf whose ``rotational`` flag cannot be trusted is marked ``virtual`` with the
reason (virtio, Xen, Hyper-V/vmbus, NBD, RBD, iSCSI, a cloud NVMe/SCSI volume, an emulated
QEMU/VMware disk): probes/medium.py measures those instead of believing the flag.
"""

from __future__ import annotations

import posixpath
import re

from pmem_advisor.probes.reading import ProbeContext

MOUNTINFO = "/proc/self/mountinfo"
MOUNTS = "/proc/mounts"
PSEUDO_FS = {
    "proc", "sysfs", "cgroup", "cgroup2", "devpts", "devtmpfs", "mqueue", "debugfs", "tracefs",
    "securityfs", "pstore", "bpf", "configfs", "fusectl", "autofs", "binfmt_misc", "efivarfs",
    "rpc_pipefs", "nsfs", "hugetlbfs", "selinuxfs",
}
RAM_FS = {"tmpfs", "ramfs"}
_MAX_DEPTH = 8
# Models and vendors of block devices that are volumes behind a hypervisor or a network, whatever
# their bus says (NVMe and SCSI emulations): their rotational flag is the hypervisor's choice.
_VIRTUAL_MODELS = re.compile(
    r"Amazon Elastic Block Store|PersistentDisk|nvme_card-pd|Google|MSFT|Microsoft|Virtual|"
    r"QEMU|VMware|VBOX|Xen|Alibaba|Oracle BlockVolume", re.IGNORECASE)


def _unescape(text: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (``\\040``)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def read_mount_table(ctx: ProbeContext) -> list[dict]:
    """Every mount, in mount order (later mounts on the same point hide earlier ones)."""
    text = ctx.text(MOUNTINFO)
    if text is not None:
        return _parse_mountinfo(ctx, text)
    text = ctx.text(MOUNTS, required=True)
    if text is None:
        ctx.warn(f"{MOUNTINFO}: missing")
        return []
    table = []
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if len(fields) < 4:
            ctx.warn(f"{MOUNTS}:{n}: malformed line")
            continue
        table.append({"device": _unescape(fields[0]), "mountpoint": _unescape(fields[1]),
                      "fstype": fields[2], "options": fields[3].split(","), "devno": None})
    return table


def _parse_mountinfo(ctx: ProbeContext, text: str) -> list[dict]:
    table = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 6 or len(tail) < 2 or ":" not in fields[2]:
            ctx.warn(f"{MOUNTINFO}:{n}: malformed line")
            continue
        options = fields[5].split(",") + (tail[2].split(",") if len(tail) > 2 else [])
        table.append({
            "device": _unescape(tail[1]), "mountpoint": _unescape(fields[4]),
            "fstype": tail[0], "options": list(dict.fromkeys(options)), "devno": fields[2],
            "root": _unescape(fields[3]),
        })
    return table


def dax_state(options: list[str]) -> str | None:
    """``dax`` (pre-5.8/5.9 kernels) and ``dax=always`` mean on; ``dax=inode`` per file."""
    for opt in options:
        if opt in ("dax", "dax=always"):
            return "always"
        if opt in ("dax=inode", "dax=never"):
            return opt.split("=", 1)[1]
    return None


class MediumResolver:
    """Block device -> base disks -> medium, with per-disk caching."""

    def __init__(self, ctx: ProbeContext, nd_providers: dict[str, str | None],
                 mount_table: list[dict]) -> None:
        self.ctx = ctx
        self.access = ctx.access
        self.providers = nd_providers
        self.table = mount_table

    # -- block devices ------------------------------------------------------------------------
    def block_dir(self, mount: dict) -> str | None:
        """The sysfs directory of a mount's block device (``/sys/devices/.../block/vda``)."""
        devno = mount.get("devno")
        if devno and not devno.startswith("0:"):
            path = f"/sys/dev/block/{devno}"
            if self.access.exists(path):
                return self.access.realpath(path)
        device = mount["device"]
        if device.startswith("/dev/"):
            name = posixpath.basename(self.access.realpath(device))
            path = f"/sys/class/block/{name}"
            if self.access.exists(path):
                return self.access.realpath(path)
        return None

    def base_disks(self, block_dir: str, depth: int = 0) -> list[str]:
        """Partitions up to their disk; dm/md down through ``slaves`` to the real disks."""
        if depth > _MAX_DEPTH:
            return []
        if self.access.exists(f"{block_dir}/partition"):
            return [posixpath.dirname(block_dir)]
        slaves = self.access.listdir(f"{block_dir}/slaves")
        if slaves:
            disks: list[str] = []
            for slave in slaves:
                target = self.access.realpath(f"{block_dir}/slaves/{slave}")
                for disk in self.base_disks(target, depth + 1):
                    if disk not in disks:
                        disks.append(disk)
            return disks
        return [block_dir]

    def disk_facts(self, disk_dir: str, depth: int = 0) -> dict:
        """medium, transport, dax capability, NUMA node and notes for one base disk."""
        name = posixpath.basename(disk_dir)
        device = self.access.realpath(f"{disk_dir}/device")
        facts = {"name": name, "medium": "unknown", "transport": None, "dax_capable": None,
                 "numa_node": None, "emulated_pmem": False, "notes": [], "rotational": None,
                 "virtual": None}
        dax = self.ctx.integer(f"{disk_dir}/queue/dax")
        facts["dax_capable"] = bool(dax) if dax is not None else None
        if re.fullmatch(r"pmem\d+(\.\d+)?s?", name):
            bus = re.search(r"/(ndbus\d+)/", device + "/")
            provider = self.providers.get(bus.group(1)) if bus else None
            facts["medium"] = "cxl" if provider == "CXL" else "pmem"
            facts["transport"] = "nd"
            if provider == "e820":
                facts["emulated_pmem"] = True
                facts["notes"].append("legacy memmap= pmem (e820 type 12): DRAM, not PMEM")
        elif name.startswith("nvme"):
            facts["medium"], facts["transport"] = "nvme", "nvme"
        elif name.startswith("loop"):
            backing = self.ctx.text(f"{disk_dir}/loop/backing_file")
            if backing and depth < _MAX_DEPTH:
                inner = self.path_facts(backing, depth + 1)
                facts["medium"] = inner["medium"]
                facts["notes"].append(f"loop device backed by {backing}")
        elif re.fullmatch(r"(zram|ram)\d+", name):
            facts["notes"].append("RAM-backed block device")
        else:
            rotational = self.ctx.integer(f"{disk_dir}/queue/rotational")
            facts["rotational"] = rotational
            if rotational is not None:
                facts["medium"] = "hdd" if rotational else "ssd"
        if facts["medium"] in ("hdd", "ssd", "nvme"):
            facts["virtual"] = self._virtual(name, disk_dir, device, facts)
        return self._numa(facts, disk_dir)

    def _virtual(self, name: str, disk_dir: str, device: str, facts: dict) -> str | None:
        """Why this disk's rotational flag cannot be trusted, or None for a physical disk."""
        if "/virtio" in device:
            facts["transport"] = "virtio"
            return "a virtio disk"
        if "/vbd-" in device or name.startswith("xvd"):
            facts["transport"] = "xen"
            return "a Xen disk"
        if "vmbus" in device.lower():
            facts["transport"] = "vmbus"
            return "a Hyper-V disk"
        if re.fullmatch(r"nbd\d+", name):
            facts["transport"] = "nbd"
            return "a network block device (NBD)"
        if re.fullmatch(r"rbd\d+", name):
            facts["transport"] = "rbd"
            return "a Ceph RBD volume"
        if "/session" in device and "/target" in device:
            facts["transport"] = "iscsi"
            return "an iSCSI disk"
        model = " ".join(x for x in (self.ctx.text(f"{disk_dir}/device/vendor"),
                                     self.ctx.text(f"{disk_dir}/device/model")) if x)
        if model and _VIRTUAL_MODELS.search(model):
            return f"a virtual or cloud volume ({model})"
        return None

    def _numa(self, facts: dict, disk_dir: str) -> dict:
        node = self.ctx.integer(f"{disk_dir}/device/numa_node")
        if node is None:
            node = self.ctx.integer(f"{disk_dir}/device/device/numa_node")
        facts["numa_node"] = node if node is not None and node >= 0 else None
        return facts

    def mount_facts(self, mount: dict, depth: int = 0) -> dict:
        if mount["fstype"] in RAM_FS:
            return {"base_devices": [], "medium": "tmpfs", "transport": None,
                    "dax_capable": None, "numa_node": None, "emulated_pmem": True, "notes": []}
        block = self.block_dir(mount)
        if block is None:
            return {"base_devices": [], "medium": "unknown", "transport": None,
                    "dax_capable": None, "numa_node": None, "emulated_pmem": False, "notes": []}
        disks = [self.disk_facts(d, depth) for d in self.base_disks(block)]
        if not disks:
            disks = [self.disk_facts(block, depth)]
        first = disks[0]
        notes = [n for d in disks for n in d["notes"]]
        leaf = next((d for d in disks if d["virtual"]), None)
        virtual = leaf["virtual"] if leaf else None
        if leaf and self.access.listdir(f"{block}/slaves"):  # a dm/md/LVM stack: name the leaf
            virtual = f"{virtual} ({leaf['name']}, under {posixpath.basename(block)})"
        media = {d["medium"] for d in disks}
        if len(media) > 1:
            notes.append(f"spans several media: {sorted(media)}; reporting the first")
        return {
            "base_devices": [d["name"] for d in disks], "medium": first["medium"],
            "transport": first["transport"], "dax_capable": first["dax_capable"],
            "numa_node": first["numa_node"],
            "emulated_pmem": any(d["emulated_pmem"] for d in disks),
            "notes": list(dict.fromkeys(notes)),
            "rotational": first["rotational"], "virtual": virtual,
            "block_device": posixpath.basename(block),
        }

    # -- paths --------------------------------------------------------------------------------
    def mount_of(self, resolved: str) -> dict | None:
        best = None
        for mount in self.table:  # later entries win on equal mountpoints (they hide earlier)
            mp = mount["mountpoint"]
            if resolved == mp or mp == "/" or resolved.startswith(mp.rstrip("/") + "/"):
                if best is None or len(mp) >= len(best["mountpoint"]):
                    best = mount
        return best

    def path_facts(self, path: str, depth: int = 0) -> dict:
        resolved = self.access.realpath(path)
        mount = self.mount_of(resolved)
        entry = {"path": path, "resolved": resolved, "mountpoint": None, "fstype": None,
                 "device": None, "base_device": None, "medium": "unknown", "dax": None,
                 "dax_capable": None, "block_size": None, "numa_node": None,
                 "emulated_pmem": False, "transport": None, "notes": [], "rotational": None,
                 "virtual": None, "block_device": None}
        if mount is None:
            self.ctx.warn(f"path {path}: no mount found for it")
            return entry
        facts = self.mount_facts(mount, depth)
        entry.update({
            "mountpoint": mount["mountpoint"], "fstype": mount["fstype"],
            "device": mount["device"],
            "base_device": facts["base_devices"][0] if facts["base_devices"] else None,
            "medium": facts["medium"], "dax": dax_state(mount["options"]),
            "dax_capable": facts["dax_capable"],
            "block_size": self.access.statvfs_bsize(mount["mountpoint"]),
            "numa_node": facts["numa_node"], "emulated_pmem": facts["emulated_pmem"],
            "transport": facts["transport"], "notes": facts["notes"],
            "rotational": facts.get("rotational"), "virtual": facts.get("virtual"),
            "block_device": facts.get("block_device"),
        })
        if entry["dax_capable"] and entry["dax"] is None and entry["fstype"] in ("ext4", "xfs"):
            entry["notes"].append("DAX-capable device mounted without a dax option")
        if entry["medium"] == "tmpfs":
            entry["notes"].append("tmpfs is DRAM: a stand-in for PMEM, not durable")
        return entry


def devdax_path(path: str, inv: dict, dax: list[dict]) -> dict | None:
    """A ``/dev/daxX.Y`` character device given as a path: PMEM (or CXL) without a filesystem."""
    m = re.fullmatch(r"/dev/(dax\d+\.\d+)", posixpath.normpath(path))
    if not m:
        return None
    name = m.group(1)
    ns = next((n for n in inv["namespaces"] if n.get("chardev") == name), None)
    dev = next((d for d in dax if d["name"] == name), None)
    medium = "pmem" if ns else ("cxl" if dev and dev["backing"] in ("cxl", "hmem") else "unknown")
    return {"path": path, "resolved": path, "mountpoint": None, "fstype": None,
            "device": path, "base_device": name, "medium": medium, "dax": "devdax",
            "dax_capable": True, "block_size": None,
            "numa_node": ns.get("numa_node") if ns else (dev or {}).get("numa_node"),
            "emulated_pmem": False, "transport": "dax", "notes": []}


def mounts_summary(resolver: MediumResolver) -> list[dict]:
    """Real filesystems (no proc/sys/cgroup ...), one per mountpoint, the visible one."""
    visible: dict[str, dict] = {}
    for mount in resolver.table:
        if mount["fstype"] not in PSEUDO_FS:
            visible.pop(mount["mountpoint"], None)
            visible[mount["mountpoint"]] = mount
    result = []
    for mount in visible.values():
        facts = resolver.mount_facts(mount)
        result.append({
            "device": mount["device"], "mountpoint": mount["mountpoint"],
            "fstype": mount["fstype"], "options": mount["options"],
            "dax": dax_state(mount["options"]),
            "block_size": resolver.access.statvfs_bsize(mount["mountpoint"]),
            "medium": facts["medium"], "base_devices": facts["base_devices"],
            "medium_source": "filesystem" if facts["medium"] == "tmpfs" else "kernel",
        })
    return result
