"""What the probe maps: a scratch file it creates in a directory, or (only with
``destructive``) an existing file or devdax character device whose content it overwrites.

The scratch file is checked (free space, writability) and fully allocated before any
measurement, and removed on every exit path, Ctrl-C included.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from dataclasses import dataclass

from pmem_advisor.errors import EnvironmentProblem, UsageError

from .topology import char_device_size

SCRATCH_PREFIX = ".pmem-advisor-bw-"
# Leave this much free beside the scratch file so a nearly full filesystem stays usable.
FREE_MARGIN = 16 * 1024 * 1024


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


@dataclass
class ScratchTarget:
    requested: str  # what the user gave
    path: str  # what is mapped
    kind: str  # scratch-file | file | devdax
    size: int  # bytes usable for the working set
    created: bool  # the probe created it and must remove it

    def cleanup(self) -> None:
        if self.created:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            self.created = False


def inspect_target(path: str, *, destructive: bool) -> tuple[str, int | None]:
    """Validate ``path`` without touching it: returns (kind, size limit or None)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"bandwidth path {path} does not exist",
                         hint="give a directory on the device to measure, e.g. /mnt/pmem0"
                         ) from None
    except OSError as e:
        raise UsageError(f"cannot access bandwidth path {path}: {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        return "scratch-file", None
    if stat.S_ISCHR(st.st_mode):
        if not destructive:
            raise UsageError(f"{path} is a character device: measuring it overwrites its data",
                             hint="pass --destructive for a devdax device you can wipe")
        size = char_device_size(path)
        if not size:
            raise UsageError(f"{path} is a character device but not a devdax device")
        return "devdax", size
    if stat.S_ISREG(st.st_mode):
        if not destructive:
            raise UsageError(f"{path} is an existing file: the probe only writes files it "
                             "creates", hint="give its directory, or --destructive to overwrite")
        return "file", st.st_size
    if stat.S_ISBLK(st.st_mode):
        raise UsageError(f"{path} is a block device, which cannot be mapped with DAX",
                         hint="mount it (fsdax, -o dax) and give the mount point")
    raise UsageError(f"{path} is neither a directory, a regular file nor a devdax device")


def free_bytes(directory: str) -> int:
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


def create_scratch(directory: str, size: int) -> ScratchTarget:
    """Create and fully allocate a scratch file of ``size`` bytes in ``directory``.

    Creating first makes an unwritable directory say so (rather than "0 bytes free").
    """
    path = os.path.join(directory, f"{SCRATCH_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR):
            raise UsageError(f"{directory} is not writable: cannot create a file there "
                             f"({e.strerror})",
                             hint="choose a directory you can write to") from None
        raise EnvironmentProblem(f"cannot create a scratch file in {directory}: "
                                 f"{e.strerror}") from None
    target = ScratchTarget(directory, path, "scratch-file", size, created=True)
    try:
        free = free_bytes(directory)
        if free < size + FREE_MARGIN:
            raise EnvironmentProblem(
                f"{directory} has {_gib(free)} free; the bandwidth probe needs "
                f"{_gib(size + FREE_MARGIN)} (a working set of {_gib(size)}, 2x the CPU cache)",
                hint="free some space or choose a larger filesystem")
        os.posix_fallocate(fd, 0, size)
    except OSError as e:
        target.cleanup()
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise EnvironmentProblem(f"{directory} ran out of space allocating the "
                                     f"{_gib(size)} scratch file; it was removed") from None
        raise EnvironmentProblem(f"cannot allocate the scratch file in {directory}: "
                                 f"{e.strerror}; it was removed") from None
    except BaseException:
        target.cleanup()
        raise
    finally:
        os.close(fd)
    return target


def open_target(path: str, working_set: int, *, destructive: bool) -> ScratchTarget:
    """The target to map for ``path``; creates (and allocates) a scratch file for a
    directory."""
    kind, limit = inspect_target(path, destructive=destructive)
    if kind == "scratch-file":
        return create_scratch(path, working_set)
    if limit is not None and limit < working_set:
        raise UsageError(f"{path} holds {_gib(limit)}, smaller than the {_gib(working_set)} "
                         "working set the probe needs")
    if not os.access(path, os.R_OK | os.W_OK):
        raise UsageError(f"{path} is not readable and writable")
    return ScratchTarget(path, path, kind, working_set, created=False)
