"""The live machine as the bandwidth probe needs it: CPUs per NUMA node, LLC size, the node
a path's device sits on, and the filesystem type under a path.

The probe measures only the live host (it maps real memory), so it reads /sys and /proc
directly; ``root`` exists for tests.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from pmem_advisor.probes.reading import parse_cpulist


def parse_size(text: str) -> int:
    """sysfs cache sizes: '516096K', '32M', '1024'."""
    text = text.strip().upper()
    mult = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * mult


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


@dataclass(frozen=True)
class Topology:
    nodes: dict[int, list[int]]  # node -> allowed CPUs (nodes without CPUs left out)
    distances: dict[int, list[int]]
    llc_bytes: int | None

    @classmethod
    def live(cls, root: str = "/") -> Topology:
        sys_dir = Path(root, "sys/devices/system")
        allowed = set(os.sched_getaffinity(0)) if root == "/" else None
        nodes: dict[int, list[int]] = {}
        distances: dict[int, list[int]] = {}
        for node_dir in sorted(sys_dir.glob("node/node[0-9]*")):
            node = int(node_dir.name[4:])
            cpus = parse_cpulist(_read(node_dir / "cpulist") or "") or []
            if allowed is not None:
                cpus = [c for c in cpus if c in allowed]
            if cpus:
                nodes[node] = cpus
            dist = _read(node_dir / "distance")
            if dist:
                distances[node] = [int(x) for x in dist.split()]
        if not nodes:  # no NUMA in sysfs (or containers hiding it): one node with our CPUs
            nodes = {0: sorted(allowed) if allowed else [0]}
        return cls(nodes, distances, _llc_bytes(sys_dir))

    def default_node(self) -> int:
        """The node of the first CPU we may run on."""
        return min(self.nodes, key=lambda n: self.nodes[n][0])

    def far_node(self, near: int) -> int | None:
        """The farthest other node with CPUs (by SLIT distance), or None with one node."""
        others = [n for n in self.nodes if n != near]
        if not others:
            return None
        row = self.distances.get(near, [])
        return max(others, key=lambda n: (row[n] if n < len(row) else 0, -n))


def _llc_bytes(sys_dir: Path) -> int | None:
    """The largest cache of CPU 0 (the last level)."""
    best = None
    for idx in sys_dir.glob("cpu/cpu0/cache/index[0-9]*"):
        size = _read(idx / "size")
        if size and size.strip():
            try:
                value = parse_size(size)
            except ValueError:
                continue
            best = value if best is None else max(best, value)
    return best


def device_numa_node(path: str, root: str = "/") -> int | None:
    """NUMA node of the device behind ``path`` (devdax char device or a file's block
    device), from sysfs; None when unknown (-1, virtual filesystems)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if stat.S_ISCHR(st.st_mode):
        dev, kind = st.st_rdev, "char"
    else:
        dev, kind = st.st_dev, "block"
    base = Path(root, f"sys/dev/{kind}/{os.major(dev)}:{os.minor(dev)}")
    for candidate in (base / "device/numa_node", base / "numa_node",
                      base / "../device/numa_node"):
        text = _read(candidate)
        if text and text.strip().lstrip("-").isdigit():
            node = int(text)
            return node if node >= 0 else None
    return None


def fs_type(path: str, mounts_file: str = "/proc/self/mounts") -> str | None:
    """Filesystem type of the mount holding ``path`` (longest mount-point prefix)."""
    real = os.path.realpath(path)
    best, best_len = None, -1
    text = _read(Path(mounts_file)) or ""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        mnt = fields[1].replace("\\040", " ")
        inside = real == mnt or real.startswith(mnt.rstrip("/") + "/")
        if inside and len(mnt) > best_len:
            best, best_len = fields[2], len(mnt)
    return best


def char_device_size(path: str, root: str = "/") -> int | None:
    """Size of a devdax character device from sysfs (fstat says 0 for char devices)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    base = Path(root, f"sys/dev/char/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
    text = _read(base / "size")
    return int(text) if text and text.strip().isdigit() else None
