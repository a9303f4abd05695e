"""The one door to the machine: every read of /sys, /proc, /dev and every external tool.

Below a root the tree is a jail, and every read of it (``facts.json`` included) goes through
this object: symlinks are resolved inside it (absolute targets re-rooted, ``..`` stops at the
root, more than ``_MAX_LINK_HOPS`` links is ELOOP, never "left as is"), files and directories
are opened one component at a time from a descriptor of the root without following links
(``O_NOFOLLOW``; a FIFO's open does not block: ``O_NONBLOCK``, then ``fstat``), only regular
files are read and none beyond ``MAX_READ``, and the whole tree within ``JAIL_SECONDS``.

A ``SysAccess`` has a root. ``/`` is the live machine; any other directory (an extracted
snapshot, a hand-built test tree) stands in for one. Inside a root, the outputs of external
tools are files under ``<root>/.pmem-advisor/commands/`` and the few facts that are not files
(statvfs, page size) live in ``<root>/.pmem-advisor/facts.json``. On the live machine the
object can record every read, so a snapshot holds exactly what the probe looked at.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import os
import posixpath
import re
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass, field

META_DIR = ".pmem-advisor"
COMMANDS_DIR = f"{META_DIR}/commands"
FACTS_FILE = f"{META_DIR}/facts.json"
META_FILE = f"{META_DIR}/meta.json"
COMMAND_TIMEOUT_S = 10
_MAX_LINK_HOPS = 40
MAX_READ = 64 << 20  # no probed file is near this; /dev/zero in a tree is endless
JAIL_SECONDS = 120  # reading a captured tree: a probe reads one in well under a second


def _no_constant(name: str) -> None:
    raise json.JSONDecodeError(f"{name} is not a number", name, 0)


def loads_strict(text: str | bytes) -> object:
    """JSON as the tools write it: NaN/Infinity (which Python's json accepts and which then
    crash int()) are malformed input, a ValueError like any other."""
    return json.loads(text, parse_constant=_no_constant)


@dataclass
class CommandResult:
    """What an external tool printed. ``None`` instead of this means: the tool is absent."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str = ""

    @property
    def source(self) -> str:
        return " ".join(self.argv)


def command_file_name(argv: list[str]) -> str:
    """``["ndctl", "list", "-BDRNv"]`` -> ``ndctl_list_-BDRNv`` (stable, filesystem-safe)."""
    return re.sub(r"[^A-Za-z0-9_.=+-]", "%", "_".join(argv))


@dataclass
class Recording:
    """Everything a live probe read: file contents, listed dirs, links, tool outputs, facts."""

    files: dict[str, bytes] = field(default_factory=dict)
    dirs: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> {name: kind}
    links: dict[str, str] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)  # checked with exists() only
    commands: dict[str, CommandResult] = field(default_factory=dict)
    facts: dict = field(default_factory=lambda: {"statvfs": {}})


class SysAccess:
    """File and tool access below ``root``; every method takes absolute paths (``/sys/..``)."""

    def __init__(self, root: str = "/", *, record: bool = False, kind: str | None = None) -> None:
        self.root = os.path.abspath(root)
        self.live = self.root == "/"
        self.kind = kind or ("live" if self.live else "root")
        self.recording: Recording | None = Recording() if record else None
        self._facts: dict | None = None
        self._deadline = time.monotonic() + JAIL_SECONDS

    # -- paths ------------------------------------------------------------------------------
    def host_path(self, path: str) -> str:
        """The path on this host for the absolute in-root ``path`` (lexical: for the live
        machine and for names; reads below a root go through descriptors: ``_walk_dir``)."""
        path = posixpath.normpath("/" + path.lstrip("/"))
        return path if self.live else self.root + path

    def _check_deadline(self) -> None:
        if not self.live and time.monotonic() > self._deadline:
            raise OSError(errno.ETIMEDOUT, f"reading the tree took more than {JAIL_SECONDS} s",
                          self.root)

    def _walk_dir(self, resolved: str) -> int:
        """A descriptor of the in-root directory ``resolved`` (links already resolved), opened
        one component at a time from the root without following any link."""
        self._check_deadline()
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for name in [p for p in resolved.split("/") if p]:
                nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                              dir_fd=fd)
                os.close(fd)
                fd = nxt
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _lstat_in(self, path: str) -> os.stat_result:
        """lstat of an in-root path whose parent is resolved inside the root."""
        parent, name = posixpath.split(posixpath.normpath("/" + path.lstrip("/")))
        fd = self._walk_dir(self.realpath(parent))
        try:
            return os.stat(name or ".", dir_fd=fd, follow_symlinks=False)
        finally:
            os.close(fd)

    def _is_link(self, path: str) -> bool:
        if self.live:
            return os.path.islink(path)
        try:
            parent, name = posixpath.split(path)
            fd = self._walk_dir(parent)  # ``path``'s parent is already resolved here
        except OSError:
            return False
        try:
            return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            return False
        finally:
            os.close(fd)

    def _open(self, path: str) -> int:
        """An fd for reading ``path``: below a root, opened one component at a time without
        following any link (a link that is still there is a loop, or was swapped in)."""
        if self.live:
            return os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        parent, name = posixpath.split(self.realpath(path))
        dfd = self._walk_dir(parent)
        try:  # the last component: no link followed, and a FIFO's open must not block
            return os.open(name or ".", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                           | os.O_CLOEXEC, dir_fd=dfd)
        finally:
            os.close(dfd)

    def _note_dir(self, path: str, names: list[str] | None = None) -> None:
        """Record a directory (and, once listed, what kind each entry is)."""
        if self.recording is None:
            return
        entries = self.recording.dirs.setdefault(posixpath.normpath(path), {})
        for name in names or ():
            inner = posixpath.join(posixpath.normpath(path), name)
            if self.live:
                host = os.path.join(self.host_path(path), name)
                if os.path.islink(host):
                    entries[name] = "link:" + os.readlink(host)
                else:
                    entries[name] = "dir" if os.path.isdir(host) else "file"
                continue
            try:
                mode = self._lstat_in(inner).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                entries[name] = "link:" + (self.readlink(inner) or "")
            else:
                entries[name] = "dir" if stat.S_ISDIR(mode) else "file"

    # -- reads ------------------------------------------------------------------------------
    def read_bytes(self, path: str, *, record: bool = True) -> bytes:
        """Raw content; raises ``OSError`` (``FileNotFoundError``, ``PermissionError``, a
        symlink loop, a device or FIFO below a root, a file beyond ``MAX_READ``...)."""
        with os.fdopen(self._open(path), "rb") as f:
            if not self.live and not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", path)
            chunks, size = [], 0
            while chunk := f.read(1 << 16):  # small reads: procfs refuses a huge buffer
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_READ:
                    raise OSError(errno.EFBIG, f"larger than {MAX_READ >> 20} MiB", path)
            data = b"".join(chunks)
        if record and self.recording is not None:
            self.recording.files[posixpath.normpath(path)] = data
        return data

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8", errors="replace")

    def exists(self, path: str) -> bool:
        if self.live:
            found = os.path.lexists(path)
        else:
            try:
                self._lstat_in(path)
                found = True
            except OSError:
                found = False
        if found and self.recording is not None:
            if self.is_dir(path):
                self._note_dir(path)
            else:
                self.recording.present.add(posixpath.normpath(path))
        return found

    def is_dir(self, path: str) -> bool:
        if self.live:
            found = os.path.isdir(path)
        else:
            try:
                os.close(self._walk_dir(self.realpath(path)))
                found = True
            except OSError:
                found = False
        if found:
            self._note_dir(path)
        return found

    def listdir(self, path: str) -> list[str]:
        """Sorted entries of a directory; ``[]`` when it does not exist."""
        try:
            if self.live:
                names = sorted(os.listdir(path))
            else:
                fd = self._walk_dir(self.realpath(path))
                try:
                    names = sorted(os.listdir(fd))
                finally:
                    os.close(fd)
        except OSError:  # missing, not a directory, forbidden, a loop
            return []
        self._note_dir(path, names)
        return names

    def readlink(self, path: str) -> str | None:
        try:
            if self.live:
                target = os.readlink(path)
            else:
                parent, name = posixpath.split(posixpath.normpath("/" + path.lstrip("/")))
                fd = self._walk_dir(self.realpath(parent))
                try:
                    target = os.readlink(name, dir_fd=fd)
                finally:
                    os.close(fd)
        except OSError:
            return None
        if self.recording is not None:
            self.recording.links[posixpath.normpath(path)] = target
        return target

    def realpath(self, path: str) -> str:
        """Resolve symlinks inside the root (absolute targets are re-rooted, never escape it).

        Missing components are kept lexically, so a planned directory still resolves. More
        than ``_MAX_LINK_HOPS`` links: OSError(ELOOP), like the kernel.
        """
        parts = [p for p in posixpath.normpath("/" + path.lstrip("/")).split("/") if p]
        resolved = "/"
        hops = 0
        while parts:
            name = parts.pop(0)
            if name == "..":
                resolved = posixpath.dirname(resolved)
                continue
            candidate = posixpath.join(resolved, name)
            if self._is_link(candidate):
                hops += 1
                if hops > _MAX_LINK_HOPS:  # a loop or a long chain: refused, never followed
                    raise OSError(errno.ELOOP, "too many levels of symbolic links", path)
                target = self.readlink(candidate)
                if target is None:
                    raise OSError(errno.ELOOP, "a symbolic link changed while resolving", path)
                base = "/" if target.startswith("/") else resolved
                parts = [p for p in posixpath.join(base, target).split("/") if p] + parts
                resolved = "/"
                continue
            resolved = candidate
        return resolved

    def glob(self, pattern: str) -> list[str]:
        """Absolute in-root paths matching a glob (``*`` does not cross ``/``)."""
        parts = [p for p in pattern.split("/") if p]
        current = ["/"]
        for part in parts:
            nxt = []
            for base in current:
                if any(ch in part for ch in "*?["):
                    nxt += [posixpath.join(base, n) for n in self.listdir(base)
                            if fnmatch.fnmatchcase(n, part)]
                else:
                    candidate = posixpath.join(base, part)
                    if self.exists(candidate):
                        nxt.append(candidate)
            current = nxt
        return sorted(current)

    # -- facts that are not files -------------------------------------------------------------
    def _stored_facts(self) -> dict:
        if self._facts is None:
            self._facts = {}
            if not self.live:
                try:
                    loaded = loads_strict(self.read_bytes("/" + FACTS_FILE, record=False))
                    self._facts = loaded if isinstance(loaded, dict) else {}
                except (OSError, ValueError):
                    self._facts = {}
        return self._facts

    def statvfs_bsize(self, mountpoint: str) -> int | None:
        """The filesystem block size (``statvfs.f_bsize``) of a mount, if known."""
        if self.live:
            try:
                bsize = os.statvfs(mountpoint).f_bsize
            except OSError:
                return None
            if self.recording is not None:
                self.recording.facts["statvfs"][mountpoint] = {"f_bsize": bsize}
            return bsize
        stored = self._stored_facts().get("statvfs", {})
        entry = stored.get(mountpoint) if isinstance(stored, dict) else None
        bsize = entry.get("f_bsize") if isinstance(entry, dict) else None
        if not isinstance(bsize, int) or isinstance(bsize, bool) or bsize <= 0:
            bsize = None
        if bsize is not None and self.recording is not None:
            self.recording.facts["statvfs"][mountpoint] = {"f_bsize": bsize}
        return bsize

    def page_size(self) -> int | None:
        if self.live:
            size = os.sysconf("SC_PAGESIZE")
            if self.recording is not None:
                self.recording.facts["page_size"] = size
            return size
        value = self._stored_facts().get("page_size")
        if not isinstance(value, int):
            return None
        if self.recording is not None:
            self.recording.facts["page_size"] = value
        return value

    def _read_optional(self, path: str) -> str | None:
        try:
            return self.read_bytes(path, record=False).decode("utf-8", errors="replace")
        except OSError:
            return None

    # -- external tools -----------------------------------------------------------------------
    def run(self, argv: list[str]) -> CommandResult | None:
        """Run a tool (live) or read its stored output (root). ``None``: the tool is absent."""
        name = command_file_name(argv)
        if not self.live:
            base = f"/{COMMANDS_DIR}/{name}"
            stdout = self._read_optional(base + ".out")
            if stdout is None:
                return None
            stderr = self._read_optional(base + ".err") or ""
            rc_text = self._read_optional(base + ".rc")
            rc = int(rc_text) if rc_text and rc_text.strip().lstrip("-").isdigit() else 0
            stored = CommandResult(argv, rc, stdout, stderr)
            if self.recording is not None:
                self.recording.commands[name] = stored
            return stored
        exe = shutil.which(argv[0])
        if exe is None:
            return None
        try:
            done = subprocess.run(
                [exe, *argv[1:]], capture_output=True, text=True, errors="replace",
                timeout=COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            result = CommandResult(argv, -1, "", f"{type(e).__name__}: {e}")
        else:
            result = CommandResult(argv, done.returncode, done.stdout, done.stderr)
        if self.recording is not None:
            self.recording.commands[name] = result
        return result
