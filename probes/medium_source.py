"""Which source decides a path's medium, and the one sentence every output prints about it.

Order (first that applies wins):
1. ``--medium PATH=CLASS`` (``override``): the user knows the hardware;
2. the filesystem itself (``filesystem``): tmpfs is DRAM;
3. a physical device whose kind the kernel knows (``kernel``): PMEM namespaces, NVMe, a SATA/SAS
   disk's ``rotational`` flag;
4. a device whose flag cannot be trusted (virtio, Xen, Hyper-V, NBD, RBD, iSCSI, cloud
   volumes, and any of those as a leaf of a dm/md/LVM stack) or a filesystem without a local
   block device (overlay, NFS): a measurement (``measured``, probes/medium.py), from the cache
   when this device was measured before, else measured now on a live machine;
5. when it cannot be measured (``--no-measure``, a captured tree, a read-only or full
   filesystem, no O_DIRECT, a device that does not answer in time): the kernel's flag, marked
   ``unverified`` with the reason.
A measurement overrides the flag in both directions ("flash wins" on a rotational=1 virtual
disk that reads like flash; a cloud volume on spinning disks reads like one).

Caches, so repeated commands do not re-measure: this process's memo; ``profile["media"]`` of
a profile or a snapshot's ``facts.json`` (``probe --save`` keeps measurements there); and for
live runs ``media.json`` in a cache directory only we can write (``cache_file``).
"""

from __future__ import annotations

import calendar
import json
import os
import time

from pmem_advisor.probes import medium as measuring
from pmem_advisor.probes.sysaccess import FACTS_FILE, SysAccess, loads_strict

SOURCES = ("kernel", "measured", "override", "filesystem", "unverified")
OVERRIDE_CLASSES = ("hdd", "ssd", "nvme")
CACHE_MAX_AGE_S = 30 * 24 * 3600  # a disk does not change class; a VM can move: re-measure monthly
CACHE_NAME = "media.json"
_MEMO: dict[str, dict] = {}  # device key -> measured, for this process


def device_key(entry: dict) -> str | None:
    """The cache key of a path's device: the block device under its mount (``vda``, ``dm-0``)."""
    return entry.get("block_device") or entry.get("base_device")


# -- the file cache of live runs -----------------------------------------------------------------
def cache_file() -> str | None:
    """``<cache>/media/media.json`` in the tool's trusted state directory (fileio: ours, 0700,
    no parent writable by others without the sticky bit); None when it cannot be had
    (read-only /var/tmp, a foreign owner): then nothing is cached on disk."""
    try:
        from pmem_advisor.fileio import trusted_state_dir

        return os.path.join(str(trusted_state_dir("media")), CACHE_NAME)
    except Exception:  # noqa: BLE001 - a directory we cannot trust is simply not used
        return None


def _load_file_cache() -> dict:
    path = cache_file()
    if path is None:
        return {}
    try:
        from pmem_advisor.fileio import read_text_nofollow

        data = json.loads(read_text_nofollow(path))
    except Exception:  # noqa: BLE001 - a missing or damaged cache is an empty one
        return {}
    return data if isinstance(data, dict) else {}


def _store_file_cache(key: str, measured: dict) -> bool:
    path = cache_file()
    if path is None:
        return False
    try:
        from pmem_advisor.fileio import write_file_safely

        data = _load_file_cache()
        data[key] = measured
        write_file_safely(path, json.dumps(data, indent=1, sort_keys=True) + "\n",
                          backup=False, mode=0o600)
    except Exception:  # noqa: BLE001 - a cache we cannot write costs a re-measurement only
        return False
    return True


def stored_media(access: SysAccess) -> dict:
    """Measurements kept in a captured tree or snapshot (``facts.json`` "media")."""
    if access.live:
        return {}
    try:  # through the jail: facts.json may be a link to /dev/zero, a FIFO, a chain of links
        media = loads_strict(access.read_bytes("/" + FACTS_FILE, record=False)).get("media")
    except (OSError, ValueError, AttributeError):
        return {}
    return media if isinstance(media, dict) else {}


def _fresh(measured: object) -> bool:
    if not isinstance(measured, dict) or measured.get("class") not in measuring.CLASSES:
        return False
    if not isinstance(measured.get("read_lat_ms"), (int, float)):
        return False
    try:
        at = calendar.timegm(time.strptime(str(measured.get("at")), "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return True  # a hand-made cache entry without a date: trusted as given
    return time.time() - at < CACHE_MAX_AGE_S


# -- the decision ---------------------------------------------------------------------------------
def _kernel_words(entry: dict) -> str:
    """What the kernel said, and why it is not believed: "the kernel reports rotational=1, a
    virtio disk"."""
    rot = entry.get("rotational")
    if rot is not None:
        flag = f"the kernel reports rotational={rot}"
    elif entry.get("medium") == "nvme":
        flag = "the kernel sees an NVMe device"
    elif not entry.get("base_device"):
        flag = f"{entry.get('fstype') or 'the filesystem'} has no block device of its own"
    else:
        flag = "the kernel does not say"
    why = entry.get("virtual")
    return f"{flag}, {why}" if why else flag


def _needs_measuring(entry: dict) -> bool:
    if entry.get("virtual"):
        return True
    # A real filesystem with no local block device we can see (overlay, NFS, FUSE).
    return (entry.get("medium") == "unknown" and entry.get("fstype") is not None
            and entry.get("dax") != "devdax" and not entry.get("base_device"))


def settle(entry: dict, *, access: SysAccess, measure: bool, override: str | None,
           cache: dict, skip_reason: str | None = None) -> dict:
    """Fill ``medium``, ``medium_source``, ``medium_note``, ``measured`` of one ``paths[]`` entry.

    ``cache`` (device -> measured) is read and completed in place: it becomes
    ``profile["media"]``.
    """
    entry.setdefault("measured", None)
    medium = entry.get("medium") or "unknown"
    if override is not None:
        entry["medium"], entry["medium_source"] = override, "override"
        entry["medium_note"] = f"medium: {override} (set by --medium; {_kernel_words(entry)})"
        return entry
    if medium == "tmpfs" or entry.get("fstype") in ("tmpfs", "ramfs"):
        entry["medium_source"] = "filesystem"
        entry["medium_note"] = ("medium: tmpfs (the filesystem is tmpfs: DRAM standing in for "
                                "PMEM, not durable)")
        return entry
    if not _needs_measuring(entry):
        entry["medium_source"] = "kernel"
        entry["medium_note"] = f"medium: {medium} ({_kernel_text(entry)})"
        return entry
    key = device_key(entry) or f"mount:{entry.get('mountpoint')}"
    measured = cache.get(key)
    if not _fresh(measured):
        measured = None
    if measured is None and access.live and measure:
        measured = _MEMO.get(key)
        if measured is None:
            file_cache = _load_file_cache().get(key)
            if _fresh(file_cache):
                measured = file_cache
        if measured is None:
            try:
                measured = measuring.measure(entry.get("resolved") or entry["path"])
            except measuring.MeasureError as e:
                skip_reason = f"could not measure: {e}"
            else:
                measured["device"] = key
                _MEMO[key] = measured
                if not _store_file_cache(key, measured):
                    entry.setdefault("notes", []).append(
                        "the measurement is kept in this profile only (no cache directory "
                        "only we can write): the next command measures again")
    elif measured is None:
        skip_reason = skip_reason or ("--no-measure" if access.live
                                      else "a captured tree cannot be measured")
    if measured is not None:
        cache[key] = measured
        entry["measured"] = measured
        entry["medium"], entry["medium_source"] = measured["class"], "measured"
        # The same sentence whether measured now or taken from a cache (outputs stay stable).
        words = measuring.describe(measured) + (f" at {measured['at']}" if measured.get("at")
                                                else "")
        away = _measured_elsewhere(entry, measured)
        if away:  # an ordinary user cannot write beside / or a server's directory
            words += f", in {away} on the same filesystem"
        entry["medium_note"] = (f"medium: {measured['class']}"
                                f"{'-class' if measured['class'] == 'nvme' else ''} ({words}; "
                                f"{_kernel_words(entry)})")
        return entry
    entry["medium_source"] = "unverified"
    flag = _kernel_words(entry)
    entry["medium_note"] = (f"medium: {medium}, unverified ({flag}: that may not be the real "
                            f"medium; not measured: {skip_reason}; measure on the machine or "
                            "pass --medium PATH=hdd|ssd|nvme)")
    return entry


def _measured_elsewhere(entry: dict, measured: dict) -> str | None:
    """The scratch directory of a measurement made away from the path (not one of its
    ancestors): the writable directory on the same filesystem an ordinary user measured in."""
    where = measured.get("directory")
    path = entry.get("resolved") or entry.get("path")
    if not isinstance(where, str) or not isinstance(path, str):
        return None
    where, path = os.path.normpath(where), os.path.normpath(path)
    if path == where or path.startswith(where.rstrip("/") + "/"):
        return None
    return where


def _kernel_text(entry: dict) -> str:
    dev = entry.get("base_device") or entry.get("device") or "?"
    medium = entry.get("medium")
    if medium in ("pmem", "cxl"):
        kind = "CXL memory" if medium == "cxl" else "a persistent memory namespace"
        extra = ": legacy memmap= emulation, DRAM" if entry.get("emulated_pmem") else ""
        return f"{kind}, {dev}{extra}"
    if medium == "nvme":
        return f"an NVMe device, {dev}"
    if medium in ("hdd", "ssd"):
        return f"the kernel reports rotational={entry.get('rotational')} for {dev}"
    return f"no block device the kernel can describe under {entry.get('fstype') or '?'}"


def parse_overrides(items: list[str]) -> dict[str, str]:
    """``--medium PATH=CLASS`` items -> {path: class}; ValueError with one line on bad input."""
    out: dict[str, str] = {}
    for item in items:
        path, sep, klass = item.rpartition("=")
        klass = klass.strip().lower()
        if not sep or not path:
            raise ValueError(f"--medium {item!r}: expected PATH=CLASS, e.g. /var/lib/pg=ssd")
        if klass not in OVERRIDE_CLASSES:
            raise ValueError(f"--medium {item!r}: CLASS must be one of "
                             f"{', '.join(OVERRIDE_CLASSES)}")
        out[os.path.normpath(path)] = klass
    return out
