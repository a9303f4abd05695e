"""Snapshots: a tar.gz of exactly what a probe read, analysable offline with ``--root``.

Layout inside the archive: the files at their machine paths (``sys/...``, ``proc/...``),
symlinks as symlinks (so ``realpath`` inside the snapshot works like on the machine), tool
outputs under ``.pmem-advisor/commands/``, non-file facts in ``.pmem-advisor/facts.json`` and
``.pmem-advisor/meta.json`` marking the archive as ours.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import posixpath
import shutil
import tarfile
import tempfile
import time
import zlib

from pmem_advisor import __version__
from pmem_advisor.errors import InputError, UsageError
from pmem_advisor.fileio import write_file_safely
from pmem_advisor.probes.sysaccess import (
    COMMANDS_DIR,
    FACTS_FILE,
    META_DIR,
    META_FILE,
    Recording,
    SysAccess,
    loads_strict,
)

SNAPSHOT_SCHEMA = "pmem-advisor.snapshot/1"
MAX_MEMBERS = 50_000  # a real probe records a few thousand entries
MAX_BYTES = 64 << 20  # and a few MB of content (sysaccess.MAX_READ per file)


def _canonical(access: SysAccess, path: str) -> str:
    """The path with its parent resolved, so files never sit below a recorded symlink.

    ``/proc/self`` stays as it is: the link points at a pid that means nothing offline.
    """
    if path.startswith("/proc/"):
        return path
    parent, name = posixpath.split(path)
    return posixpath.join(access.realpath(parent), name)


def save_snapshot(access: SysAccess, dest: str, profile: dict | None = None) -> int:
    """Write the recording of ``access`` to ``dest`` (tar.gz); returns the member count."""
    rec = access.recording
    if rec is None:
        raise UsageError("internal: the probe was not recording, nothing to save")
    rec = Recording(files=dict(rec.files), dirs=dict(rec.dirs), links=dict(rec.links),
                    present=set(rec.present), commands=dict(rec.commands), facts=rec.facts)
    members: dict[str, tuple[str, bytes | str]] = {}  # path -> (kind, data)

    def put(path: str, kind: str, data: bytes | str = b"") -> None:
        path = path.lstrip("/")
        if path and (path not in members or members[path][0] == "placeholder"):
            members[path] = (kind, data)

    for path, target in rec.links.items():
        put(_canonical(access, path), "link", target)
    for path, data in rec.files.items():
        put(_canonical(access, path), "file", data)
    for path, entries in rec.dirs.items():
        base = _canonical(access, path)
        put(base, "dir")
        for name, kind in entries.items():
            child = posixpath.join(base, name)
            if kind.startswith("link:"):
                put(child, "link", kind[5:])
            elif kind == "dir":
                put(child, "dir")
            else:
                put(child, "placeholder")
    for path in rec.present:
        put(_canonical(access, path), "placeholder")
    for name, result in rec.commands.items():
        put(f"{COMMANDS_DIR}/{name}.out", "file", result.stdout.encode())
        put(f"{COMMANDS_DIR}/{name}.err", "file", result.stderr.encode())
        put(f"{COMMANDS_DIR}/{name}.rc", "file", f"{result.returncode}\n".encode())
    put(FACTS_FILE, "file", json.dumps(rec.facts, indent=1, sort_keys=True).encode())
    meta = {"schema": SNAPSHOT_SCHEMA, "tool_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "source": access.kind}
    put(META_FILE, "file", json.dumps(meta, indent=1).encode())
    if profile is not None:
        put(f"{META_DIR}/profile.json", "file", json.dumps(profile, indent=1).encode())

    # A file recorded where a symlink also sits would clash: the symlink wins (the file was
    # read through it and lives at its canonical place too).
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        dirs = {posixpath.dirname(p) for p in members}
        for path in sorted(set(members) | _ancestors(dirs)):
            kind, data = members.get(path, ("dir", b""))
            info = tarfile.TarInfo(path)
            info.mtime = int(time.time())
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif kind == "link":
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, str(data), 0o777
                tar.addfile(info)
            else:
                payload = data if isinstance(data, bytes) else b""
                info.size, info.mode = len(payload), 0o444
                tar.addfile(info, io.BytesIO(payload))
    # O_EXCL temp + fsync + rename, the old snapshot kept as .bak (issue 17 items 3 and 9).
    write_file_safely(dest, buf.getvalue(), mode=0o600)
    return len(members)


def _ancestors(dirs: set[str]) -> set[str]:
    out: set[str] = set()
    for d in dirs:
        while d and d not in out:
            out.add(d)
            d = posixpath.dirname(d)
    return out


def _capped(tar: tarfile.TarFile, path: str):
    """The archive's members, stopping with InputError past MAX_MEMBERS or MAX_BYTES: a few
    hundred KB of gzip can expand to gigabytes (issue 17 item 5: 415 KB became 400 MB)."""
    count = total = 0
    for member in tar:
        count += 1
        total += max(member.size, 0)
        if count > MAX_MEMBERS or total > MAX_BYTES:
            raise InputError(
                f"{path}: snapshot larger than a probe's ({count} files, {total >> 20} MiB "
                f"so far; limits {MAX_MEMBERS} files, {MAX_BYTES >> 20} MiB): refused")
        yield member


def _data_only(members):
    """What tarfile's "data" filter refuses, for Pythons without it: absolute names, names
    or link targets that leave the tree, devices and FIFOs; modes kept to the owner's bits
    plus read for others, no set-id or group/other write. A refusal is a TarError, as the
    filter's own are, so both Pythons give the same one-line "corrupt" error."""
    for m in members:
        name = m.name
        if name.startswith("/") or ".." in name.split("/"):
            raise tarfile.TarError(f"member {name!r} leaves the snapshot: refused")
        if m.isdev() or m.isfifo():
            raise tarfile.TarError(f"member {name!r} is a device or FIFO: refused")
        if m.issym() or m.islnk():
            target = m.linkname if m.islnk() else posixpath.join(posixpath.dirname(name),
                                                                m.linkname)
            if m.linkname.startswith("/") or posixpath.normpath(target).startswith(".."):
                raise tarfile.TarError(f"link {name!r} -> {m.linkname!r} leaves the "
                                 "snapshot: refused")
        m.mode &= 0o755
        yield m


def open_snapshot(path: str) -> SysAccess:
    """Extract a snapshot to a private temporary directory and return access to it."""
    if not os.path.exists(path):
        raise UsageError(f"snapshot {path} does not exist")
    if not os.path.isfile(path):
        raise InputError(f"snapshot {path} is not a regular file")
    workdir = tempfile.mkdtemp(prefix="pmem-advisor-snap-")
    atexit.register(shutil.rmtree, workdir, True)
    try:
        with tarfile.open(path, "r:*") as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(workdir, members=_capped(tar, path), filter="data")
            else:  # Python before 3.11.4 (Debian 12's 3.11.2): the same refusals, by hand
                tar.extractall(workdir, members=_data_only(_capped(tar, path)))
    except InputError:
        shutil.rmtree(workdir, True)
        raise
    except (tarfile.TarError, EOFError, zlib.error, OSError, ValueError) as e:
        shutil.rmtree(workdir, True)
        raise InputError(f"{path}: corrupt or unreadable snapshot ({type(e).__name__}: {e})"
                         ) from e
    access = SysAccess(workdir, kind="snapshot")
    try:  # through the jail, like every read of the tree
        meta = loads_strict(access.read_bytes("/" + META_FILE, record=False))
        if meta.get("schema") != SNAPSHOT_SCHEMA:
            raise ValueError(meta.get("schema"))
    except (OSError, ValueError, AttributeError) as e:
        shutil.rmtree(workdir, True)
        raise InputError(f"{path}: not a pmem-advisor snapshot (no valid {META_FILE})") from e
    return access


def open_root(root: str) -> SysAccess:
    """``--root``: a directory shaped like ``/``, or a snapshot archive."""
    if os.path.isfile(root):
        return open_snapshot(root)
    if not os.path.isdir(root):
        raise UsageError(f"--root {root} does not exist")
    if not any(os.path.isdir(os.path.join(root, d)) for d in ("sys", "proc")):
        raise InputError(f"--root {root} does not look like a captured system (no sys/ or proc/)")
    return SysAccess(root, kind="root")
