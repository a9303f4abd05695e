"""A real Linux kernel under the probe: Debian's 6.1 kernel in QEMU (TCG) with emulated NVDIMMs,
NUMA nodes and a CXL type-3 device, one command run in the guest, its output brought back.

    python scripts/qemu_guest.py run --topology nvdimm2 -- ndctl list -NRD
    python scripts/qemu_guest.py capture --topology nvdimm2 --out DIR

The guest is small: an initramfs of busybox and the few modules it needs to reach the host
(virtio-pci, 9p). The host's own root is shared read-only over 9p and the command runs
chrooted into it, with the guest's /proc, /sys, /dev and fresh tmpfs mounted over it, so the
guest uses the very ndctl, daxctl, numactl, cxl, mkfs.ext4, Python and .venv of the host (no
copy of a userland that could drift from the one the tests run). Everything else the kernel
needs (nfit, libnvdimm, nd_pmem, device_dax, kmem, dax_pmem, ext4, cxl_*) is loaded in the
guest by modprobe from the host's /lib/modules, which the kernel package installed.

Output comes back through a second, writable 9p share (a temporary directory on the host):
the command's stdout, stderr and exit code as files, and a marker line on the serial console
(the console log is a file here) that the host polls for, with a deadline. On every path
out, success, timeout or error, the guest is killed and its files (backing files of the
NVDIMMs, initramfs, share) removed.

Exit codes: 0 the guest ran the command (its own rc is printed and returned with `run`),
2 usage, 3 qemu or the kernel cannot be installed, 4 the guest did not boot or finish in time
or the topology was refused (the one-line reason and the console's last lines on stderr).
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QEMU = "qemu-system-x86_64"
DEB_PACKAGES = ("qemu-system-x86", "linux-image-amd64", "busybox-static", "cpio")
BUSYBOX = "/bin/busybox"
DONE_MARKER = "PMEM-GUEST-DONE"  # printed by the guest's init as "PMEM-GUEST-DONE rc=N"
READY_MARKER = "PMEM-GUEST-READY"  # the host's root is mounted, the command starts
# Modules the initramfs loads itself to reach the 9p share; everything else is modprobe'd
# from the chroot (the host's /lib/modules over 9p).
INITRAMFS_MODULES = ("virtio_pci", "9pnet_virtio", "9p")
# What a pmem guest loads: there is no udev in the guest to load them on device discovery.
PMEM_MODULES = ("nfit", "libnvdimm", "nd_pmem", "dax_pmem", "device_dax", "kmem", "ext4")
CXL_MODULES = ("cxl_acpi", "cxl_pci", "cxl_port", "cxl_mem", "cxl_pmem")

EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_GUEST = 2, 3, 4


class GuestError(Exception):
    """The guest could not run: one line of reason, and the console's last lines."""

    exit_code = EXIT_GUEST

    def __init__(self, reason: str, console_tail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.console_tail = console_tail


class GuestUnavailable(GuestError):
    """qemu or the kernel is missing and cannot be installed here."""

    exit_code = EXIT_UNAVAILABLE


# -- what the host needs -------------------------------------------------------------------

def kernel_release() -> str | None:
    """The newest Debian kernel installed on the host with its modules (6.1.0-N-amd64)."""
    found = []
    for vmlinuz in glob.glob("/boot/vmlinuz-*"):
        release = vmlinuz.split("vmlinuz-", 1)[1]
        if os.path.isfile(f"/lib/modules/{release}/modules.dep"):
            found.append(release)
    key = lambda r: [int(x) if x.isdigit() else x for x in re.split(r"[.-]", r)]  # noqa: E731
    return max(found, key=key) if found else None


def missing_packages() -> list[str]:
    missing = []
    if shutil.which(QEMU) is None:
        missing.append("qemu-system-x86")
    if kernel_release() is None:
        missing.append("linux-image-amd64")
    if not os.access(BUSYBOX, os.X_OK):
        missing.append("busybox-static")
    if shutil.which("cpio") is None:  # builds the initramfs
        missing.append("cpio")
    return missing


def ensure_xfsprogs(install: bool = True) -> str | None:
    """mkfs.xfs on the host (the guest runs the host's userland), installed with apt-get as
    root when missing; None when present, else the one-line reason it is not."""
    if shutil.which("mkfs.xfs"):
        return None
    if not install or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "mkfs.xfs is missing (xfsprogs) and not root with apt-get to install it"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        proc = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                               "xfsprogs"], env=env, capture_output=True, text=True,
                              timeout=600)
    except subprocess.TimeoutExpired:
        return "apt-get install xfsprogs took more than 600 s"
    if proc.returncode != 0 or not shutil.which("mkfs.xfs"):
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        return f"apt-get install xfsprogs failed (rc {proc.returncode}): {last[0]}"
    return None


def ensure_packages(install: bool = True) -> str:
    """qemu and the kernel present, installed with apt-get as root when missing; returns the
    kernel release. Raises GuestUnavailable with the reason when they cannot be had."""
    missing = missing_packages()
    if missing and install:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            raise GuestUnavailable(f"missing {' '.join(missing)} and not root with apt-get "
                                   "to install them")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for argv in (["apt-get", "update", "-qq"],
                     ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]):
            try:
                proc = subprocess.run(argv, env=env, capture_output=True, text=True,
                                      timeout=900)
            except subprocess.TimeoutExpired:
                raise GuestUnavailable(f"{' '.join(argv[:2])} took more than 900 s") from None
            if proc.returncode != 0:
                last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
                raise GuestUnavailable(f"{' '.join(argv[:2])} failed (rc {proc.returncode}): "
                                       f"{last[0]}")
        missing = missing_packages()
    if missing:
        raise GuestUnavailable(f"missing {' '.join(missing)}")
    release = kernel_release()
    assert release is not None
    return release


# -- topologies ----------------------------------------------------------------------------

@dataclass
class Topology:
    """A machine for QEMU and what the guest does before the command (namespaces, mounts)."""

    name: str
    doc: str
    machine: str = "pc,nvdimm=on"
    memory: str = "1G,slots=4,maxmem=8G"
    cpus: int = 2
    numa: list[str] = field(default_factory=list)  # extra -numa / -object for the nodes
    nvdimms: list[dict] = field(default_factory=list)  # {"size": "262272K", "node": 0}
    extra: list[str] = field(default_factory=list)  # further qemu arguments
    backing: list[tuple[str, str]] = field(default_factory=list)  # (file name, size) for extra
    modules: tuple[str, ...] = PMEM_MODULES
    setup: str = ""  # shell run in the guest before the command; its failure ends the run
    cmdline: str = ""


# ndctl on a labelled QEMU NVDIMM: the label area starts empty, and a namespace needs an
# initialised label index, so the regions are disabled, labels initialised, and re-enabled.
INIT_LABELS = """
ndctl disable-region all
ndctl init-labels -f all
ndctl enable-region all
"""

FSDAX_DEVDAX = INIT_LABELS + """
ndctl create-namespace -r region0 -m fsdax
ndctl create-namespace -r region1 -m devdax -a 2M
mkfs.ext4 -q -F -b 4096 /dev/pmem0
mkdir -p /mnt/pmem0
mount -o dax /dev/pmem0 /mnt/pmem0
"""

KMEM = INIT_LABELS + """
ndctl create-namespace -r region0 -m fsdax
ndctl create-namespace -r region1 -m devdax -a 2M
mkfs.ext4 -q -F -b 4096 /dev/pmem0
mkdir -p /mnt/pmem0
mount -o dax /dev/pmem0 /mnt/pmem0
daxctl reconfigure-device --mode=system-ram --no-online dax1.0 || \
  daxctl reconfigure-device --mode=system-ram dax1.0
daxctl online-memory dax1.0 || true
"""

# CK010's positive case: an fsdax namespace on each node's region (numa2-split), each with
# ext4 -o dax, so data can sit on node 0's PMEM and the WAL on node 1's.
FSDAX_BOTH = INIT_LABELS + """
ndctl create-namespace -r region0 -m fsdax
ndctl create-namespace -r region1 -m fsdax
mkfs.ext4 -q -F -b 4096 /dev/pmem0
mkfs.ext4 -q -F -b 4096 /dev/pmem1
mkdir -p /mnt/pmem0 /mnt/pmem1
mount -o dax /dev/pmem0 /mnt/pmem0
mount -o dax /dev/pmem1 /mnt/pmem1
"""

# The bandwidth probe needs a 256 MiB working set (its minimum) plus a margin on the fsdax
# mount and on the devdax device: 640 MiB NVDIMMs. A third NVDIMM carries xfs with -o dax
# (mkfs.xfs wants 300 MiB at least; reflink off: DAX refuses reflink) when the guest (the
# host's userland) has mkfs.xfs; without it the step says so and the xfs mount is absent.
BANDWIDTH = INIT_LABELS + """
ndctl create-namespace -r region0 -m fsdax
ndctl create-namespace -r region1 -m devdax -a 2M
ndctl create-namespace -r region2 -m fsdax
mkfs.ext4 -q -F -b 4096 /dev/pmem0
mkdir -p /mnt/pmem0
mount -o dax /dev/pmem0 /mnt/pmem0
if command -v mkfs.xfs >/dev/null; then mkfs.xfs -q -f -m reflink=0 -b size=4096 \
  /dev/pmem2 && mkdir -p /mnt/xfs0 && mount -o dax /dev/pmem2 /mnt/xfs0; \
  else echo "NO-MKFS-XFS: xfsprogs is not installed" >&2; fi
"""

# A CXL pmem region the way a user makes one on 6.1: the root decoder (the cxl-fmw window)
# over the one memdev, one way. cxl_pmem then gives libnvdimm a region on the CXL nvdimm
# bridge's bus (probed asynchronously: waited for, bounded), where ndctl makes an fsdax
# namespace as on an NFIT region. The LSA holds the labels; no init-labels needed.
# The host bridge needs two root ports (the second empty): with one, 6.1 gives the bridge a
# passthrough decoder and leaves its HDM decoder unprogrammed, QEMU 7.2 routes the window
# through that decoder, and every store to the region is lost (it reads back as zeros:
# mkfs.ext4 "succeeds", mount then finds no ext4 superblock). docs/kernel.md has the details.
CXL_PMEM = """
cxl create-region -t pmem -m -d decoder0.0 -w 1 mem0
i=0; while [ $i -lt 100 ] && [ ! -e /sys/bus/nd/devices/region0 ]; do sleep 0.1; \
  i=$((i+1)); done; [ -e /sys/bus/nd/devices/region0 ]
ndctl create-namespace -r region0 -m fsdax
mkfs.ext4 -q -F -b 4096 /dev/pmem0
mkdir -p /mnt/pmem0
mount -o dax /dev/pmem0 /mnt/pmem0
"""

NUMA2 = ["-object", "memory-backend-ram,id=ram0,size=512M",
         "-object", "memory-backend-ram,id=ram1,size=512M",
         "-numa", "node,nodeid=0,cpus=0,memdev=ram0",
         "-numa", "node,nodeid=1,cpus=1,memdev=ram1",
         "-numa", "dist,src=0,dst=1,val=21"]

TOPOLOGIES = {
    "nvdimm2": Topology(
        "nvdimm2", "two NVDIMMs on one node: fsdax (ext4 -o dax) on region0, devdax on region1",
        nvdimms=[{"size": "262272K"}, {"size": "262272K"}], setup=FSDAX_DEVDAX),
    "numa2": Topology(
        "numa2", "two NUMA nodes with a CPU and 512 MiB each, one NVDIMM per node",
        numa=NUMA2,
        nvdimms=[{"size": "262272K", "node": 0}, {"size": "262272K", "node": 1}],
        setup=FSDAX_DEVDAX),
    "numa2-split": Topology(
        "numa2-split", "numa2's machine with an fsdax namespace (ext4 -o dax) on each node's "
        "NVDIMM: /mnt/pmem0 on node 0, /mnt/pmem1 on node 1",
        numa=NUMA2, nvdimms=[{"size": "262272K", "node": 0}, {"size": "262272K", "node": 1}],
        setup=FSDAX_BOTH),
    "kmem": Topology(
        "kmem", "one node with the CPUs and RAM, the devdax NVDIMM onlined as system RAM "
        "(kmem): a CPU-less node 1",
        numa=["-object", "memory-backend-ram,id=ram0,size=1G",
              "-numa", "node,nodeid=0,cpus=0-1,memdev=ram0",
              "-numa", "node,nodeid=1",
              "-numa", "dist,src=0,dst=1,val=17"],
        nvdimms=[{"size": "262272K", "node": 0}, {"size": "524416K", "node": 1}],
        setup=KMEM),
    "bandwidth": Topology(
        "bandwidth", "three NVDIMMs on one node: fsdax (ext4 -o dax) and devdax of 640 MiB "
        "for the bandwidth probe, fsdax with xfs -o dax (when mkfs.xfs is there)",
        memory="1G,slots=4,maxmem=8G",
        nvdimms=[{"size": "655488K"}, {"size": "655488K"}, {"size": "524416K"}],
        modules=(*PMEM_MODULES, "xfs"), setup=BANDWIDTH),
    "cxl": Topology(
        "cxl", "q35 with a CXL host bridge, two root ports and a type-3 persistent memory "
        "device (QEMU 7.2: pmem only), a 4 GiB fixed memory window; a pmem region, fsdax, "
        "ext4 -o dax on /mnt/pmem0",
        machine="q35,cxl=on",
        extra=["-object", "memory-backend-file,id=cxl-mem0,share=on,mem-path={cxl0},size=256M",
               "-object", "memory-backend-file,id=cxl-lsa0,share=on,mem-path={lsa0},size=256M",
               "-device", "pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1",
               "-device", "cxl-rp,port=0,bus=cxl.1,id=root_port13,chassis=0,slot=2",
               # a second, empty root port, so the kernel programs the bridge's HDM
               # decoder (see CXL_PMEM)
               "-device", "cxl-rp,port=1,bus=cxl.1,id=root_port14,chassis=0,slot=3",
               "-device", "cxl-type3,bus=root_port13,memdev=cxl-mem0,lsa=cxl-lsa0,id=cxl-pmem0",
               "-M", "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G"],
        backing=[("cxl0", "256M"), ("lsa0", "256M")],
        modules=("libnvdimm", "nd_pmem", "dax_pmem", "device_dax", "kmem", "ext4",
                 *CXL_MODULES),
        setup=CXL_PMEM),
}


# -- the initramfs ---------------------------------------------------------------------------

INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say() { echo "$@" > /dev/ttyS0; }
fail() { say "PMEM-GUEST-FAIL $*"; sync; poweroff -f; }
for m in $(cat /modules.order); do insmod /modules/$m || fail "insmod $m"; done
mkdir -p /host
# The host's root, read-only; msize raised so Python's many small reads are fewer round trips.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /host || fail "9p host"
H=/host
mount -t proc proc $H/proc
mount -t sysfs sysfs $H/sys
mount -t devtmpfs devtmpfs $H/dev
mount -t tmpfs tmpfs $H/tmp
mount -t tmpfs tmpfs $H/run
mount -t tmpfs tmpfs $H/mnt
mount -t tmpfs tmpfs $H/var/tmp
[ -d $H/sys/kernel/debug ] && mount -t debugfs debugfs $H/sys/kernel/debug 2>/dev/null
mkdir -p $H/tmp/out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 guestout $H/tmp/out || fail "9p out"
say "PMEM-GUEST-READY"
chroot $H /bin/sh -c 'cd /tmp/out && exec /bin/sh /tmp/out/job.sh' \
  > $H/tmp/out/stdout 2> $H/tmp/out/stderr < /dev/null
rc=$?
echo $rc > $H/tmp/out/rc
sync
umount $H/tmp/out
say "PMEM-GUEST-DONE rc=$rc"
poweroff -f
"""


def module_chain(release: str, names: tuple[str, ...]) -> list[str]:
    """The .ko paths for ``names`` with their dependencies, dependencies first (modules.dep)."""
    base = f"/lib/modules/{release}"
    deps: dict[str, list[str]] = {}
    by_name: dict[str, str] = {}
    with open(f"{base}/modules.dep") as f:
        for line in f:
            path, _, rest = line.partition(":")
            deps[path] = rest.split()
            by_name[os.path.basename(path).split(".ko")[0].replace("-", "_")] = path
    builtin = set()
    if os.path.exists(f"{base}/modules.builtin"):
        with open(f"{base}/modules.builtin") as f:
            builtin = {os.path.basename(p).split(".ko")[0].replace("-", "_") for p in f}
    order: list[str] = []

    def visit(path: str) -> None:
        if path in order:
            return
        for dep in deps.get(path, []):
            visit(dep)
        order.append(path)

    for name in names:
        if name in by_name:
            visit(by_name[name])
        elif name not in builtin:
            raise GuestUnavailable(f"kernel {release} has no module {name}")
    return order


def build_initramfs(workdir: Path, release: str) -> Path:
    """A newc cpio of busybox, the init above and the modules to reach the 9p shares."""
    root = workdir / "initramfs"
    for d in ("bin", "proc", "sys", "dev", "modules", "host"):
        (root / d).mkdir(parents=True, exist_ok=True)
    shutil.copy2(BUSYBOX, root / "bin" / "busybox")
    names = []
    for path in module_chain(release, INITRAMFS_MODULES):
        name = os.path.basename(path)
        shutil.copy2(f"/lib/modules/{release}/{path}", root / "modules" / name)
        names.append(name)
    (root / "modules.order").write_text("\n".join(names) + "\n")
    init = root / "init"
    init.write_text(INIT)
    init.chmod(0o755)
    out = workdir / "initramfs.cpio"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    with open(out, "wb") as f:
        proc = subprocess.run(["cpio", "--quiet", "-o", "-H", "newc"], cwd=root,
                              input="\n".join(["."] + files).encode(), stdout=f,
                              stderr=subprocess.PIPE, timeout=60)
    if proc.returncode != 0:
        raise GuestError(f"cpio failed: {proc.stderr.decode().strip()}")
    return out


# -- running a guest -------------------------------------------------------------------------

@dataclass
class GuestResult:
    rc: int
    stdout: str
    stderr: str
    out_dir: Path  # the share's files, valid until the with-block of run_guest ends
    boot_seconds: float  # qemu start to the READY marker (the host's root mounted)
    total_seconds: float
    console: str


def qemu_argv(topo: Topology, workdir: Path, release: str, initrd: Path, out: Path) -> list[str]:
    argv = [QEMU, "-machine", f"{topo.machine},accel=tcg", "-cpu", "max", "-smp",
            str(topo.cpus), "-m", topo.memory, "-nodefaults", "-display", "none",
            "-no-reboot", "-serial", f"file:{workdir / 'console.log'}",
            "-kernel", f"/boot/vmlinuz-{release}", "-initrd", str(initrd),
            "-append", " ".join(["console=ttyS0", "panic=-1", "quiet", "loglevel=4",
                                 topo.cmdline]).strip(),
            "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,"
                       "multidevs=remap",
            "-virtfs", f"local,path={out},mount_tag=guestout,security_model=none"]
    argv += topo.numa
    for i, nv in enumerate(topo.nvdimms):
        backing = workdir / f"nvdimm{i}.raw"
        argv += ["-object", f"memory-backend-file,id=mem{i},share=on,mem-path={backing},"
                            f"size={nv['size']}",
                 "-device", f"nvdimm,id=nv{i},memdev=mem{i},label-size=128K"
                            + (f",node={nv['node']}" if "node" in nv else "")]
    paths = {name: str(workdir / f"{name}.raw") for name, _ in topo.backing}
    argv += [a.format(**paths) for a in topo.extra]
    return argv


def _job_script(topo: Topology, command: str) -> str:
    """The guest's shell: load the modules, set the topology up (each step echoed, the first
    failure ends it with rc 90 and the step named), then the command with its own rc."""
    mods = " ".join(topo.modules)
    # A continued line (\ at its end) is joined with the next before quoting.
    lines, cur = [], ""
    for line in topo.setup.strip().splitlines():
        cur += line.rstrip()[:-1] + " " if line.rstrip().endswith("\\") else line
        if not line.rstrip().endswith("\\"):
            if cur.strip():
                lines.append(cur.strip())
            cur = ""
    setup = "\n".join(f"step {shlex.quote(line)}" for line in lines)
    return f"""export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8
step() {{ echo "+ $1" >&2; sh -c "$1" >&2 || {{ echo "SETUP-FAILED: $1" >&2; exit 90; }}; }}
for m in {mods}; do modprobe $m 2>&2 || echo "modprobe $m failed" >&2; done
# Without udev nothing waits for the buses to settle: give the probe of each bus a moment
# by waiting for what the topology expects (bounded).
i=0; while [ $i -lt 100 ] && [ -z "$(ls /sys/bus/nd/devices 2>/dev/null)" ] \
  && [ -n "{len(topo.nvdimms) or ''}" ]; do sleep 0.1; i=$((i+1)); done
{setup}
{command}
"""


def run_guest(topo: Topology, command: str, *, timeout: float = 600.0,
              install: bool = True, keep: Path | None = None,
              files: dict[str, bytes] | None = None,
              log=lambda m: print(m, file=sys.stderr)):
    """Boot ``topo``, run ``command`` (shell) in it; returns a GuestResult. The guest is
    killed and every file removed before this returns or raises (``keep``: copy the share's
    files there first). ``files``: {name: content} put in the share, the command's working
    directory (the host's /tmp is not visible in the guest: a tmpfs covers it)."""
    release = ensure_packages(install)
    workdir = Path(tempfile.mkdtemp(prefix="pmem-guest-"))
    proc = None
    console = workdir / "console.log"
    try:
        out = workdir / "out"
        out.mkdir()
        initrd = build_initramfs(workdir, release)
        (out / "job.sh").write_text(_job_script(topo, command))
        for name, content in (files or {}).items():
            if "/" in name or name.startswith("."):
                raise GuestError(f"file name {name!r} for the share: a plain name only")
            (out / name).write_bytes(content)
        argv = qemu_argv(topo, workdir, release, initrd, out)
        log(f"guest {topo.name}: booting {release} under TCG")
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        deadline = start + timeout
        boot = None
        while True:
            text = console.read_text(errors="replace") if console.exists() else ""
            if boot is None and READY_MARKER in text:
                boot = time.monotonic() - start
                log(f"guest {topo.name}: up in {boot:.1f} s, running the command")
            m = re.search(DONE_MARKER + r" rc=(\d+)", text)
            if m:
                break
            fail = re.search(r"PMEM-GUEST-FAIL (.*)", text)
            if fail:
                raise GuestError(f"guest init failed: {fail.group(1).strip()}", _tail(text))
            if proc.poll() is not None:
                qemu_out = proc.stdout.read().decode(errors="replace").strip()
                reason = qemu_out.splitlines()[-1] if qemu_out else f"rc {proc.returncode}"
                raise GuestError(f"qemu exited before the guest finished: {reason}",
                                 _tail(text))
            if time.monotonic() > deadline:
                raise GuestError(f"guest {topo.name} did not finish within {timeout:.0f} s"
                                 + ("" if boot else " (never booted)"), _tail(text))
            time.sleep(0.2)  # a poll interval for the marker, not a wait for the guest
        total = time.monotonic() - start
        try:
            proc.wait(timeout=30)  # poweroff -f follows the marker at once
        except subprocess.TimeoutExpired:
            pass
        rc = int(m.group(1))
        result = GuestResult(rc, (out / "stdout").read_text(errors="replace"),
                             (out / "stderr").read_text(errors="replace"), out,
                             boot or total, total, text)
        if keep is not None:
            shutil.copytree(out, keep, dirs_exist_ok=True)
            (keep / "console.log").write_text(text)
        return result
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def _tail(text: str, n: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


# -- capture: what the fixtures are made of --------------------------------------------------

CAPTURE = r"""
set +e
mkdir -p cap
ndctl list -NRD > cap/ndctl-list-NRD.json 2> cap/ndctl.err
ndctl list -RNDv > cap/ndctl-list-RNDv.json 2>> cap/ndctl.err
daxctl list > cap/daxctl-list.json 2> cap/daxctl.err
cxl list -M -D -R -E -P > cap/cxl-list.json 2> cap/cxl.err
cxl list -M -D -R -E -P -vvv > cap/cxl-list-vvv.json 2>> cap/cxl.err
numactl -H > cap/numactl-H.txt 2>&1
cat /proc/mounts > cap/proc-mounts.txt
uname -r > cap/uname-r.txt
dmesg > cap/dmesg.txt 2>&1
{python} -m pmem_advisor.cli.main probe --json --save cap/snapshot.tar.gz {paths} \
  > cap/probe.json 2> cap/probe.err
echo $? > cap/probe.rc
"""


def capture(topo: Topology, dest: Path, *, timeout: float = 900.0) -> GuestResult:
    python = REPO / ".venv" / "bin" / "python"
    paths = " ".join(f"--path {mp}" for mp in ("/mnt/pmem0", "/mnt/pmem1", "/mnt/xfs0")
                     if mp in topo.setup)
    script = CAPTURE.format(python=shlex.quote(str(python)), paths=paths)
    result = run_guest(topo, script, timeout=timeout, keep=dest / "raw")
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    run = sub.add_parser("run", help="boot a topology and run a shell command in it")
    run.add_argument("--topology", choices=sorted(TOPOLOGIES), default="nvdimm2")
    run.add_argument("--timeout", type=float, default=600.0)
    run.add_argument("--keep", type=Path, help="copy the share's files here")
    run.add_argument("--no-setup", action="store_true",
                     help="skip the topology's namespaces and mounts (modules still load)")
    run.add_argument("command", nargs=argparse.REMAINDER)
    cap = sub.add_parser("capture", help="boot a topology and capture ndctl/daxctl/numactl "
                         "outputs and a probe snapshot")
    cap.add_argument("--topology", choices=sorted(TOPOLOGIES), default="nvdimm2")
    cap.add_argument("--timeout", type=float, default=900.0)
    cap.add_argument("--out", type=Path, required=True)
    sub.add_parser("topologies", help="list the topologies")
    args = ap.parse_args(argv)
    try:
        if args.verb == "topologies":
            for t in TOPOLOGIES.values():
                print(f"{t.name}: {t.doc}")
            return 0
        if args.verb == "run":
            command = " ".join(shlex.quote(a) for a in args.command if a != "--")
            if not command:
                ap.error("run: no command given")
            topo = TOPOLOGIES[args.topology]
            if args.no_setup:
                topo = dataclasses.replace(topo, setup="")
            res = run_guest(topo, command, timeout=args.timeout,
                            keep=args.keep)
            sys.stdout.write(res.stdout)
            sys.stderr.write(res.stderr)
            print(f"guest: boot {res.boot_seconds:.1f} s, total {res.total_seconds:.1f} s, "
                  f"rc {res.rc}", file=sys.stderr)
            return res.rc
        res = capture(TOPOLOGIES[args.topology], args.out, timeout=args.timeout)
        print(json.dumps({"boot_seconds": round(res.boot_seconds, 1),
                          "total_seconds": round(res.total_seconds, 1), "rc": res.rc}))
        return 0 if res.rc == 0 else EXIT_GUEST
    except GuestError as e:
        print(f"qemu_guest: {e.reason}", file=sys.stderr)
        if e.console_tail:
            print("last console lines:\n" + e.console_tail, file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
