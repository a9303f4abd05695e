"""Make preallocated log files behave as they do in steady state before a golden copy is kept.

InnoDB creates its redo log with fallocate(): on ext4 and XFS the blocks are "unwritten"
extents, and every first write to one turns into a metadata change that the next fdatasync
must journal. A server in production pays this once, until the log has wrapped; a 10-second
trial pays it on every commit. Measured on this project's CI VM (ext4 on virtio), MariaDB
10.11 sysbench write-only lost 10-20% with any redo log larger than the workload writes in a
trial, so short trials penalised larger logs for a reason that does not exist in production.
Writing every block once (the same bytes back: unwritten extents read as zeros) removes it;
the content of the file does not change.
"""

from __future__ import annotations

import os
from pathlib import Path

from pmem_advisor.fileio import held_parent, open_checked

CHUNK = 8 << 20


def materialize(path: str | Path, owners: tuple[int, ...] | None = None) -> int:
    """Write every block of ``path`` back with its own content; returns bytes written.
    Only for files no process has open (the server is stopped). The file lies in the server
    user's tree (``owners`` may own it): opened relative to its held directory, never through
    a link, and only a regular file with one name (fileio.open_checked), so root never
    rewrites a device or another file the server pointed it at. ``owners`` defaults to the
    managed servers' user."""
    if owners is None:
        from pmem_advisor.instances.privileges import server_user

        owners = (server_user().uid,)
    written = 0
    with held_parent(path, "prepare") as (dfd, name):
        fd = open_checked(dfd, name, str(path), owners=owners, flags=os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        offset = 0
        while offset < size:
            data = os.pread(fd, min(CHUNK, size - offset), offset)
            if not data:
                break
            written += os.pwrite(fd, data, offset)
            offset += len(data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return written
