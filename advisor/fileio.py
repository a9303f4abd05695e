"""Writing every file the tool writes: never lose what was there, never follow a planted link.

One helper, :func:`write_file_safely`, for configs, reports, summaries, snapshots and records:

- the new content goes to a temporary file created with ``O_EXCL`` (``tempfile.mkstemp``) in
  the target's own directory, so a name planted there in advance (a symlink at a guessable
  ``.NAME.PID.tmp``) is never opened;
- it is fsynced, renamed over the target (``os.replace`` replaces a symlink itself, never what
  it points to), and the directory is fsynced, so a crash leaves the old or the new file;
- an existing file with other content is kept as ``NAME.bak`` (``NAME.bak.1``, ``.2``... when
  that is taken) by a hard link to its old inode (owner, mode and content for free), or an
  ``O_EXCL|O_NOFOLLOW`` copy where links are impossible;
- a target that is a symlink, a directory or not a regular file is refused.

Errors are one line: a path that cannot be meant (missing directory, a directory, a link) is
bad input (exit 2); a full, read-only or forbidden filesystem is an environment problem (3).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from pmem_advisor.errors import UsageError, as_error

_MAX_BACKUPS = 1000


def write_file_safely(path: str | Path, data: str | bytes, *, backup: bool = True,
                      mode: int = 0o644) -> Path | None:
    """Write ``data`` to ``path`` atomically; returns the backup kept of the old content.

    A new file gets ``mode``; a replaced file keeps its old mode (and, when we are root, its
    owner: a config owned by the server user stays readable by it). ``backup=False`` is for
    files only the tool reads (records, caches): their old content is not worth keeping.
    """
    path = Path(os.path.abspath(path))
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        old = _existing(path)
        if old is not None and _same_content(path, raw):
            return None
        kept = _keep_backup(path) if (backup and old is not None) else None
        _replace(path, raw, old, mode)
        return kept
    except OSError as e:
        raise as_error(e, path) from None


# Kept for callers written before the keywords existed.
def write_keeping_backup(path: str | Path, data: str | bytes) -> Path | None:
    return write_file_safely(path, data)


def _existing(path: Path) -> os.stat_result | None:
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {path}: the directory {parent} does not exist",
                         hint="create it first or choose another path")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise UsageError(f"refusing to write {path}: it is a symbolic link",
                         hint="remove the link or give the real path")
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{path} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"refusing to write {path}: it is not a regular file")
    return st


def _same_content(path: Path, raw: bytes) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return False
        return f.read(len(raw) + 1) == raw


def backup_name(path: Path, n: int) -> Path:
    return path.with_name(path.name + ".bak" + (f".{n}" if n else ""))


def _keep_backup(path: Path) -> Path:
    """Link (or copy) the current file to the first free ``.bak`` name; never overwrites one
    and never follows a link planted at one (link/O_EXCL fail on any existing name)."""
    for n in range(_MAX_BACKUPS):
        candidate = backup_name(path, n)
        try:
            os.link(path, candidate, follow_symlinks=False)
            return candidate
        except FileExistsError:
            continue
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                raise
        try:
            _copy_exclusive(path, candidate)
            return candidate
        except FileExistsError:
            continue
    raise UsageError(f"cannot keep a backup of {path}: {_MAX_BACKUPS} backups exist",
                     hint="remove old .bak files")


def _copy_exclusive(src: Path, dst: Path) -> None:
    sfd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        st = os.fstat(sfd)
        dfd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                      stat.S_IMODE(st.st_mode))
        try:
            while chunk := os.read(sfd, 1 << 20):
                os.write(dfd, chunk)
            os.fsync(dfd)
        except BaseException:
            os.close(dfd)
            os.unlink(dst)
            raise
        os.close(dfd)
    finally:
        os.close(sfd)


def _replace(path: Path, raw: bytes, old: os.stat_result | None, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            if old is not None:
                os.fchmod(f.fileno(), stat.S_IMODE(old.st_mode))
                if os.geteuid() == 0:
                    os.fchown(f.fileno(), old.st_uid, old.st_gid)
            else:
                os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


def read_text_nofollow(path: str | Path, limit: int = 16 << 20) -> str:
    """A regular file's text, refusing a symlink or a device (which could be endless)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise UsageError(f"{path} is not a regular file")
        raw = f.read(limit + 1)
    if len(raw) > limit:
        raise UsageError(f"{path} is larger than {limit >> 20} MiB")
    return raw.decode("utf-8", "replace")


def fsync_dir(directory: Path) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def trusted_state_dir(name: str = "state") -> Path:
    """``<cache>/<name>`` (default /var/tmp/pmem-advisor/state), created 700 and owned by us,
    or refused (UntrustedPath, exit 3) when another user could write it or a parent: for
    files the tool reads back (caches), written with ``write_file_safely(backup=False)``."""
    from pmem_advisor.instances.privileges import CACHE_ROOT
    from pmem_advisor.instances.trust import trusted_dir

    return trusted_dir(CACHE_ROOT / name, f"{name} directory", mode=0o700)
