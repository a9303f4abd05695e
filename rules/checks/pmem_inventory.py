"""Lookups in a profile's PMEM inventory the host checks share: which namespace and region a
mount or a database path sits on."""

from __future__ import annotations

import os


def namespace_of(profile: dict, device: str | None) -> dict | None:
    """The namespace whose block or character device is ``device`` (/dev/pmem0, pmem0)."""
    if not device:
        return None
    dev = os.path.basename(device)
    for ns in (profile.get("pmem") or {}).get("namespaces") or []:
        if dev in (ns.get("blockdev"), ns.get("chardev")):
            return ns
    return None


def region_of(profile: dict, namespace: dict | None) -> dict | None:
    if namespace is None:
        return None
    for r in (profile.get("pmem") or {}).get("regions") or []:
        if r.get("name") == namespace.get("region"):
            return r
    return None


def mount_namespace(profile: dict, mount: dict) -> dict | None:
    for dev in list(mount.get("base_devices") or []) + [mount.get("device")]:
        ns = namespace_of(profile, dev)
        if ns is not None:
            return ns
    return None


def paths_on_mount(facts, mountpoint: str | None) -> list:
    """The placed database paths (data, WAL) below ``mountpoint``."""
    return [p for p in facts.placed if mountpoint and p.mountpoint == mountpoint]
