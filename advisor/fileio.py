"""Every path the tool creates, writes or removes, by descriptor: never lose what was there,
never follow a planted link, never act on a name another user can swap.

The tool runs as root in directories other users own. A name is checked and then used again
later only through a descriptor held from the check, so swapping a directory for a symlink in
between changes nothing. The constructions:

- **Walking** (:func:`open_dir`): from ``/``, one component at a time with
  ``O_NOFOLLOW|O_DIRECTORY`` relative to the directory held so far. A symlink on the way is
  followed (re-walked from ``/`` or the held directory, at most ``MAX_LINK_HOPS`` hops) only
  when root or we own it: one owned by another user is what that user could point anywhere,
  and is refused with its name (every component, not only the last).
- **Writing** (:func:`write_file_safely`): the new content goes to a temporary file created
  ``O_EXCL|O_NOFOLLOW`` relative to the held parent directory, fsynced, renamed over the
  target relative to the same descriptor (a rename replaces a symlink itself, never what it
  points to) and the directory fsynced, so a crash leaves the old or the new file. An existing
  file with other content is kept as ``NAME.bak`` (``.bak.1``...) by a hard link to its inode
  (owner, mode, content) or an ``O_EXCL`` copy. A target that is a symlink, a directory or not
  a regular file is refused.
- **Creating directories** (:func:`make_dir`, :func:`make_temp_dir`): ``mkdir`` relative to a
  held parent, then opened ``O_NOFOLLOW`` and checked (``fstat``: a directory, ours) before
  its mode is set with ``fchmod``. Nothing the tool did not create is ever chmod-ed.
- **Removing** (:func:`remove_tree`, :func:`empty_dir`): the directory is opened relative to
  its held parent, the caller's check (the reaper's marker) runs on that descriptor, and its
  entries are removed relative to it (``unlinkat``; subtrees by ``shutil.rmtree(dir_fd=...)``,
  whose ``avoids_symlink_attacks`` holds on Linux). The last ``rmdir`` goes through only if the
  name still names the inode checked.

Errors are one line: a path that cannot be meant (missing directory, a directory, a link) is
bad input (exit 2); a full, read-only or forbidden filesystem is an environment problem (3).
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from pmem_advisor.errors import EnvironmentProblem, UsageError, as_error


def default_cache_root(uid: int) -> Path:
    """One per user (/var/tmp/pmem-advisor-0 for root): a shared name would be held by
    whoever made it first, and root rightly refuses a tree another user owns, so one ordinary
    user's run would lock root out until someone removed it. A squatter on our own name is
    refused all the same (require_trusted)."""
    return Path(f"/var/tmp/pmem-advisor-{uid}")


# The root of what the tool keeps between runs (binary cache, work and state directories).
CACHE_ROOT = Path(os.environ.get("PMEM_ADVISOR_CACHE", default_cache_root(os.geteuid())))

_MAX_BACKUPS = 1000
MAX_LINK_HOPS = 40  # the kernel's own limit (MAXSYMLINKS)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

assert shutil.rmtree.avoids_symlink_attacks, "fd-based rmtree is required"  # noqa: S101


class UnsafePath(UsageError):
    """A path we refuse to act on: a link another user owns, a non-directory on the way."""


def who(uid: int) -> str:
    """``uid 65534 (nobody)``: a user as errors name it."""
    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid}"


def _trusted_owner(uid: int) -> bool:
    return uid in (0, os.geteuid())


# -- walking ------------------------------------------------------------------------------------
def open_dir(path: str | Path, *, create: bool = False, mode: int = 0o755) -> int:
    """A descriptor of the directory ``path`` (absolute or relative to the cwd), walked from
    ``/`` without following any link another user owns. ``create`` makes missing components
    (``mode`` for the last, 0755 for parents, set by ``fchmod`` on what we made only).

    Raises UnsafePath (exit 2) for a foreign link or a non-directory on the way, OSError as is
    (FileNotFoundError for a missing component when not ``create``)."""
    text = os.path.abspath(os.fspath(path))
    parts = [p for p in text.split("/") if p]
    fd = os.open("/", _DIR_FLAGS)
    walked = "/"
    hops = 0
    try:
        while parts:
            name = parts.pop(0)
            if name == "..":  # abspath removed these; a link target may hold them
                nxt = os.open("..", _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd, walked = nxt, os.path.dirname(walked)
                continue
            here = os.path.join(walked, name)
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    raise
                last = not parts
                _mkdir_at(fd, name, mode if last else 0o755)
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                if not _trusted_owner(st.st_uid):
                    raise UnsafePath(f"refusing to follow {here}: a symbolic link owned by "
                                     f"{who(st.st_uid)}", hint="give the real path")
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), here)
                target = os.readlink(name, dir_fd=fd)
                parts = [p for p in target.split("/") if p] + parts
                if target.startswith("/"):
                    os.close(fd)
                    fd, walked = os.open("/", _DIR_FLAGS), "/"
                continue
            if not stat.S_ISDIR(st.st_mode):
                raise UnsafePath(f"{here} is not a directory")
            nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd, walked = nxt, here
        return fd
    except BaseException:
        os.close(fd)
        raise


def _mkdir_at(dfd: int, name: str, mode: int) -> None:
    """``mkdir`` relative to ``dfd`` and set ``mode`` on what we made (the umask would narrow
    it; the server user must traverse parents). A name another process made first is used
    as found, never chmod-ed."""
    try:
        os.mkdir(name, 0o700, dir_fd=dfd)
    except FileExistsError:
        return
    os.close(_adopt_made(dfd, name, mode))


def _adopt_made(dfd: int, name: str, mode: int) -> int:
    """The descriptor of the directory we just made at ``name``, checked to be ours (a swap
    in between is refused) and given ``mode`` by ``fchmod``."""
    fd = os.open(name, _DIR_FLAGS, dir_fd=dfd)
    try:
        fstat_owned(fd, name, owners=(os.geteuid(),))
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def held_dir(path: str | Path, **kw) -> Iterator[int]:
    """``open_dir`` as a context manager that closes the descriptor."""
    fd = open_dir(path, **kw)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def held_parent(path: str | Path, verb: str = "write") -> Iterator[tuple[int, str]]:
    """(descriptor of ``path``'s directory, the last component); one-line errors."""
    path = Path(os.path.abspath(path))
    if path.name in ("", ".", ".."):
        raise UsageError(f"cannot {verb} {path}: not a file name")
    try:
        fd = open_dir(path.parent)
    except FileNotFoundError:
        raise UsageError(f"cannot {verb} {path}: the directory {path.parent} does not exist",
                         hint="create it first or choose another path") from None
    except UnsafePath as e:
        raise UnsafePath(f"cannot {verb} {path}: {e.message}", hint=e.hint) from None
    except OSError as e:
        raise as_error(e, path, verb) from None
    try:
        yield fd, path.name
    finally:
        os.close(fd)


def fstat_owned(fd: int, what: str, *, owners: tuple[int, ...] | None = None) -> os.stat_result:
    """``fstat`` of a held descriptor; UnsafePath unless root or we (or ``owners``) own it."""
    st = os.fstat(fd)
    allowed = owners if owners is not None else (0, os.geteuid())
    if st.st_uid not in allowed:
        raise UnsafePath(f"refusing to use {what}: it is owned by {who(st.st_uid)}")
    return st


# -- writing ------------------------------------------------------------------------------------
def write_file_safely(path: str | Path, data: str | bytes, *, backup: bool = True,
                      mode: int = 0o644, owner: tuple[int, int] | None = None) -> Path | None:
    """Write ``data`` to ``path`` atomically; returns the backup kept of the old content.

    A new file gets ``mode``; a replaced file keeps its old mode (and, when we are root, its
    owner: a config owned by the server user stays readable by it). ``owner`` (uid, gid),
    when root, is given to the new file by ``fchown`` on its descriptor before it is renamed
    into place, with ``mode``: ownership at creation, never a chown by name afterwards (in a
    directory the server's user writes, that name could be a link to /etc/shadow by then).
    ``backup=False`` is for files only the tool reads (records, caches): their old content is
    not worth keeping.
    """
    path = Path(os.path.abspath(path))
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    with held_parent(path) as (dfd, name):
        try:
            old = _existing(dfd, name, path, planted_check=owner is not None)
            if old is not None and _same_content(dfd, name, raw) and (
                    owner is None or os.geteuid() != 0 or (old.st_uid, old.st_gid) == owner):
                return None
            kept = _keep_backup(dfd, name, path) if (backup and old is not None) else None
            _replace(dfd, name, raw, None if owner else old, mode, owner)
            return kept
        except OSError as e:
            raise as_error(e, path) from None


# Kept for callers written before the keywords existed.
def write_keeping_backup(path: str | Path, data: str | bytes) -> Path | None:
    return write_file_safely(path, data)


def _existing(dfd: int, name: str, path: Path, *, planted_check: bool = False
              ) -> os.stat_result | None:
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if planted_check and not stat.S_ISREG(st.st_mode):
        # a file root writes for a less-privileged user, in that user's tree: anything but a
        # regular file there was planted (the rename replaces it; we refuse to go on)
        raise planted(str(path), st, "a regular file")
    if stat.S_ISLNK(st.st_mode):
        raise UsageError(f"refusing to write {path}: it is a symbolic link",
                         hint="remove the link or give the real path")
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{path} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"refusing to write {path}: it is not a regular file")
    return st


def _same_content(dfd: int, name: str, raw: bytes) -> bool:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dfd)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return False
        return f.read(len(raw) + 1) == raw


def backup_name(path: Path, n: int) -> Path:
    return path.with_name(path.name + ".bak" + (f".{n}" if n else ""))


def _keep_backup(dfd: int, name: str, path: Path) -> Path:
    """Link (or copy) the current file to the first free ``.bak`` name; never overwrites one
    and never follows a link planted at one (link/O_EXCL fail on any existing name)."""
    for n in range(_MAX_BACKUPS):
        candidate = backup_name(path, n)
        try:
            os.link(name, candidate.name, src_dir_fd=dfd, dst_dir_fd=dfd,
                    follow_symlinks=False)
            return candidate
        except FileExistsError:
            continue
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                raise
        try:
            _copy_exclusive(dfd, name, candidate.name)
            return candidate
        except FileExistsError:
            continue
    raise UsageError(f"cannot keep a backup of {path}: {_MAX_BACKUPS} backups exist",
                     hint="remove old .bak files")


def _copy_exclusive(dfd: int, src: str, dst: str) -> None:
    sfd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    try:
        st = os.fstat(sfd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", src)
        dfd2 = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                       stat.S_IMODE(st.st_mode), dir_fd=dfd)
        try:
            while chunk := os.read(sfd, 1 << 20):
                os.write(dfd2, chunk)
            os.fsync(dfd2)
        except BaseException:
            os.close(dfd2)
            os.unlink(dst, dir_fd=dfd)
            raise
        os.close(dfd2)
    finally:
        os.close(sfd)


def create_exclusive(dfd: int, prefix: str, suffix: str = "", mode: int = 0o600
                     ) -> tuple[int, str]:
    """A new file relative to ``dfd`` under a random name (``mkstemp`` with a held
    directory): (its descriptor, its name). Never opens a name planted in advance."""
    for _ in range(100):
        name = f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         mode, dir_fd=dfd)
        except FileExistsError:
            continue
        return fd, name
    raise OSError(errno.EEXIST, "no free temporary name", prefix)


def _replace(dfd: int, name: str, raw: bytes, old: os.stat_result | None, mode: int,
             owner: tuple[int, int] | None = None) -> None:
    fd, tmp = create_exclusive(dfd, f".{name}.", ".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            if owner is not None:
                if os.geteuid() == 0:
                    os.fchown(f.fileno(), *owner)
                os.fchmod(f.fileno(), mode)
            elif old is not None:
                os.fchmod(f.fileno(), stat.S_IMODE(old.st_mode))
                if os.geteuid() == 0:
                    os.fchown(f.fileno(), old.st_uid, old.st_gid)
            else:
                os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise
    with contextlib.suppress(OSError):
        os.fsync(dfd)


# -- reading our own files ------------------------------------------------------------------------
def read_text_nofollow(path: str | Path, limit: int = 16 << 20) -> str:
    """A regular file's text, reached by :func:`open_dir` and opened without following a link
    or blocking on a FIFO; a device or a file beyond ``limit`` is refused."""
    with held_parent(path, "read") as (dfd, name):
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dfd)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise UsageError(f"{path} is not a regular file")
        raw = f.read(limit + 1)
    if len(raw) > limit:
        raise UsageError(f"{path} is larger than {limit >> 20} MiB")
    return raw.decode("utf-8", "replace")


def fsync_dir(directory: Path) -> None:
    try:
        dfd = open_dir(directory)
    except (OSError, UsageError):
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


# -- directories we make --------------------------------------------------------------------------
def make_dir(path: str | Path, mode: int = 0o755) -> int:
    """Create the directory ``path`` (which must not exist) and return its descriptor, checked
    to be the directory we made; its parent is walked like any path."""
    path = Path(os.path.abspath(path))
    with held_parent(path, "create") as (dfd, name):
        try:
            os.mkdir(name, 0o700, dir_fd=dfd)
            return _adopt_made(dfd, name, mode)
        except OSError as e:
            raise as_error(e, path, "create") from None


def make_temp_dir(parent_fd: int, prefix: str, mode: int = 0o700) -> tuple[int, str]:
    """``mkdtemp`` relative to a held directory: (descriptor of the new directory, its name)."""
    for _ in range(100):
        name = f"{prefix}{secrets.token_hex(6)}"
        try:
            os.mkdir(name, 0o700, dir_fd=parent_fd)
        except FileExistsError:
            continue
        return _adopt_made(parent_fd, name, mode), name
    raise OSError(errno.EEXIST, "no free temporary name", prefix)


@contextlib.contextmanager
def held_temp_dir(parent: str | Path, prefix: str) -> Iterator[int]:
    """A private 0700 directory made relative to the held ``parent`` (walked by
    :func:`open_dir`) and held for the block: a child process reaches it as
    :func:`child_path` of the descriptor (the inode, not a name another user could swap), and
    it is emptied through the descriptor and removed relative to the held parent."""
    with held_dir(parent) as pfd:
        fd, name = make_temp_dir(pfd, prefix)
        try:
            yield fd
        finally:
            try:
                clear_dir_fd(fd)
            finally:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.rmdir(name, dir_fd=pfd)


def child_path(fd: int) -> str:
    """A path naming the directory held as ``fd`` for a child of this process (its cwd, or a
    prefix of what it writes): ``/proc/<our pid>/fd/N`` resolves to the inode we hold."""
    return f"/proc/{os.getpid()}/fd/{fd}"


# -- removing -------------------------------------------------------------------------------------
# Removal passes over a directory before what is still in it is reported: an entry that
# appears meanwhile (a writer ending) goes in the next pass.
CLEAR_PASSES = 3


def clear_dir_fd(dfd: int, keep: tuple[str, ...] = (), last: str | None = None) -> list[str]:
    """Remove every entry of the held directory ``dfd`` (``keep`` excepted), each relative to
    it: a subtree by ``shutil.rmtree(dir_fd=...)``, which never follows a link, anything else
    by ``unlinkat``. The directory is listed again after each pass until a listing shows
    nothing left; ``last`` (a marker) goes only then, so a directory something still wrote
    into keeps it. Returns the names left (besides ``keep`` and ``last``), [] when cleared."""
    for _ in range(CLEAR_PASSES):
        left = _entries(dfd, keep, last)
        if not left:
            break
        for name in left:
            _remove_entry(dfd, name)
    else:
        left = _entries(dfd, keep, last)
        if left:
            return left
    if last is not None and last not in keep:
        _remove_entry(dfd, last)
    return []


def _entries(dfd: int, keep: tuple[str, ...], last: str | None) -> list[str]:
    with os.scandir(dfd) as it:
        return sorted(e.name for e in it if e.name not in keep and e.name != last)


def _remove_entry(dfd: int, name: str) -> None:
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(name, dir_fd=dfd, ignore_errors=True)
        else:
            os.unlink(name, dir_fd=dfd)
    except FileNotFoundError:
        pass


def remove_tree(path: str | Path, *, check: Callable[[int], str | None] | None = None,
                keep_dir: bool = False, keep: tuple[str, ...] = (),
                last: str | None = None) -> str | None:
    """Remove the directory ``path`` (or, ``keep_dir``, only its contents) by descriptor.

    ``check(fd)`` runs on the opened directory and returns why to leave it alone (or None);
    everything afterwards happens relative to that same descriptor, so a swap of the name for
    a link or another directory after the check removes nothing else. Returns why it was left
    alone or not cleared (entries that kept appearing or could not go: ``last`` stays with
    them), or None (done, or nothing there)."""
    path = Path(os.path.abspath(path))
    try:
        pfd = open_dir(path.parent)
    except FileNotFoundError:
        return None
    except UnsafePath as e:
        return e.message
    except OSError as e:
        return f"{path.parent}: {e.strerror}"
    try:
        try:
            fd = os.open(path.name, _DIR_FLAGS, dir_fd=pfd)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                return f"{path} is not a directory (a symbolic link or a file)"
            return f"{path}: {e.strerror}"
        try:
            why = check(fd) if check is not None else None
            if why:
                return why
            left = clear_dir_fd(fd, keep, last)
            if left:
                shown = ", ".join(left[:3]) + (", ..." if len(left) > 3 else "")
                return (f"{path}: {len(left)} entries could not be removed ({shown})"
                        + (f"; {last}, if there, is kept" if last else ""))
            if keep_dir:
                return None
            held = os.fstat(fd)
            try:
                now = os.stat(path.name, dir_fd=pfd, follow_symlinks=False)
            except FileNotFoundError:
                return None
            if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
                return f"{path} was replaced while it was being removed"
            with contextlib.suppress(OSError):
                os.rmdir(path.name, dir_fd=pfd)
            return None
        finally:
            os.close(fd)
    finally:
        os.close(pfd)


def unlink_at(dfd: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dfd)


# -- the tool's own state -------------------------------------------------------------------------
def trusted_state_dir(name: str = "state") -> Path:
    """``<cache>/<name>`` (default /var/tmp/pmem-advisor-<uid>/state), created 700 and owned by us,
    or refused (UntrustedPath, exit 3) when another user could write it or a parent: for
    files the tool reads back (caches), written with ``write_file_safely(backup=False)``."""
    return trusted_dir(CACHE_ROOT / name, f"{name} directory", mode=0o700)


def fd_path(fd: int) -> str:
    """The path the kernel has for a held descriptor (what we walked, links resolved)."""
    return os.readlink(f"/proc/self/fd/{fd}")


def ensure_dir(path: str | Path, mode: int = 0o755) -> Path:
    """``mkdir -p`` by descriptor (an output directory): missing components are made with
    ``mode``, existing ones used as they are; a link another user owns on the way is refused
    (UnsafePath, exit 2), a read-only or forbidden place is an environment problem (3)."""
    path = Path(os.path.abspath(path))
    try:
        os.close(open_dir(path, create=True, mode=mode))
    except UnsafePath as e:
        raise UnsafePath(f"cannot use the directory {path}: {e.message}", hint=e.hint) from None
    except OSError as e:
        raise as_error(e, path, "create") from None
    return path

# -- the trust boundary: what we execute, read back or delete as root must be ours ------------
# A directory is *trusted* when it and every parent up to the first root-owned one are owned by
# us (or root) and writable by nobody else; that root-owned parent may be world-writable only
# with the sticky bit (/tmp, /var/tmp), which stops others renaming our entries (ssh's rule for
# ~/.ssh). Here beside the descriptor walkers, so every path helper sits below instances/.
class UntrustedPath(EnvironmentProblem):
    """A directory or file another user could have written: we refuse to use it."""


def _me() -> str:
    return who(os.geteuid())


def _owner_ok(st: os.stat_result) -> bool:
    return st.st_uid in (os.geteuid(), 0)


def why_untrusted(path: str | Path) -> str | None:
    """Why ``path`` (an existing file or directory) is not safe to rely on, or None.

    ``path`` itself must not be a symlink; it and each parent up to the first root-owned one
    must be owned by us or root and not writable by group/others (that last root-owned parent
    may be, with the sticky bit)."""
    path = Path(os.path.abspath(path))
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return f"{path} does not exist"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link"
    for p in path.parents:  # a link on the way must be ours too: another user could swap it
        lst = os.lstat(p)
        if stat.S_ISLNK(lst.st_mode) and not _owner_ok(lst):
            return f"{p} is a symbolic link owned by {who(lst.st_uid)}"
    real = Path(os.path.realpath(path))
    for p in [real, *real.parents]:
        st = os.stat(p)
        if not _owner_ok(st):
            return f"{p} is owned by {who(st.st_uid)}, not by {_me()}"
        writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if st.st_uid == 0 and p != real:
            if writable and not st.st_mode & stat.S_ISVTX:
                return f"{p} is writable by others without the sticky bit"
            return None
        if writable:
            return f"{p} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _fix(path: Path, reason: str) -> str:
    if "owned by" in reason or "symbolic link" in reason:
        return (f"remove it (rm -rf {path}) if you did not create it, or point "
                "PMEM_ADVISOR_CACHE / PMEM_ADVISOR_STATE_DIR / PMEM_ADVISOR_WORKDIR elsewhere")
    return f"chmod go-w {path}"


def require_trusted(path: str | Path, what: str) -> Path:
    """``path`` if trusted, else UntrustedPath naming the path and the fix."""
    path = Path(os.path.abspath(path))
    reason = why_untrusted(path)
    if reason:
        bad = Path(reason.split(" ", 1)[0]) if reason.startswith("/") else path
        raise UntrustedPath(f"refusing to use the {what} {path}: {reason}", hint=_fix(bad, reason))
    return path


def trusted_dir(path: str | Path, what: str, *, mode: int = 0o755) -> Path:
    """Create ``path`` (and missing parents) owned by us with ``mode``, or check the existing
    one; UntrustedPath when it is not a directory or another user could write it or one of
    its parents. Only directories this call made get a mode (fileio.open_dir sets it with
    ``fchmod`` on what it created): an existing one is used as it is or refused, never
    chmod-ed, so a variable pointing at /etc/passwd changes nothing."""
    path = Path(os.path.abspath(path))
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise as_error(e, path, "use") from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a directory"
        raise UntrustedPath(f"refusing to use the {what} {path}: it is {kind}",
                            hint=_fix(path, "symbolic link"))
    if st is None:
        try:
            os.close(open_dir(path, create=True, mode=mode))
        except UsageError as e:
            raise UntrustedPath(f"refusing to use the {what} {path}: {e.message}") from None
        except OSError as e:
            raise as_error(e, path, "create") from None
    return require_trusted(path, what)


def why_untrusted_tree(root: str | Path) -> str | None:
    """Like why_untrusted, for every entry below ``root`` too (a binary cache)."""
    reason = why_untrusted(root)
    if reason:
        return reason
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if not _owner_ok(st):
                return f"{p} is owned by {who(st.st_uid)}"
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return f"{p} is writable by group or others"
    return None


# -- acting inside a tree a less-privileged user writes -----------------------------------------
# A managed server runs as its own user and owns its home and data directories; a SQL client,
# an extension or a bug can make it do anything that user may. So inside such a tree root acts
# only through descriptors it opened itself, relative to a held directory descriptor, with
# O_NOFOLLOW, and checks type and owner with fstat on what it opened: ownership is given at
# creation (mkdirat + fchown/fchmod on the new directory, write_file_safely(owner=) for files)
# or by fchown on a checked descriptor, never by a chown/chmod/open of a name afterwards.
class PlantedFile(UntrustedPath):
    """Where root expects its own file or directory: a link, a FIFO, a device, a hard link
    or a file another user owns. One line naming the path and its owner (exit 3)."""


def file_kind(st: os.stat_result) -> str:
    m = st.st_mode
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISREG, "a regular file")):
        if test(m):
            return name
    return "an unknown kind of file"


def planted(where: str, st: os.stat_result, expected: str) -> PlantedFile:
    """The refusal for ``where`` found as ``st`` where root expected ``expected``."""
    links = f" with {st.st_nlink} hard links" if stat.S_ISREG(st.st_mode) and st.st_nlink > 1 \
        else ""
    return PlantedFile(f"refusing to use {where}: it is {file_kind(st)}{links} owned by "
                       f"{who(st.st_uid)}, not {expected}",
                       hint="a less-privileged user (a managed server's) may have planted "
                            "it; nothing was done through it, and a managed instance is "
                            "stopped with its files kept for inspection")


def open_checked(dfd: int, name: str, where: str, *, directory: bool = False,
                 owners: tuple[int, ...] = (), flags: int = os.O_RDONLY) -> int:
    """Open ``name`` relative to the held ``dfd`` without following a link or blocking on a
    FIFO, and return the descriptor after ``fstat`` shows what root expects: a directory (or
    a regular file with one link: a second name may be another user's hard link to
    /etc/shadow), owned by root, us or one of ``owners``. Anything else is PlantedFile
    (FileNotFoundError passes through)."""
    base = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(name, (flags | base | os.O_DIRECTORY) if directory else (flags | base),
                     dir_fd=dfd)
    except OSError as e:
        if e.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO, errno.EISDIR):
            raise
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        raise planted(where, st, "a directory" if directory else "a regular file") from None
    try:
        st = os.fstat(fd)
        ok_type = stat.S_ISDIR(st.st_mode) if directory else (
            stat.S_ISREG(st.st_mode) and st.st_nlink == 1)
        if not ok_type or st.st_uid not in (0, os.geteuid(), *owners):
            mine = "a directory" if directory else "a regular file with one name"
            raise planted(where, st, f"{mine} owned by " + " or ".join(
                who(u) for u in dict.fromkeys((0, os.geteuid(), *owners))))
    except BaseException:
        os.close(fd)
        raise
    return fd


def refuse_planted_entries(path: str | Path, what: str = "output directory") -> None:
    """Before the tool writes its outputs (``tune --out``: configs, reports, the SQLite study
    and its -journal/-wal/-shm, which SQLite opens by name): every entry of the directory
    ``path`` must be a directory or regular file (one name) owned by root or us, or a link we
    own. A link, FIFO, device, socket, hard link or another user's entry there is PlantedFile
    (one line, exit 3) before anything is measured or written, so nothing is clobbered
    through it. As root, a directory others may write (their plant could follow this check)
    is refused too (UntrustedPath, exit 3)."""
    path = Path(os.path.abspath(path))
    if os.geteuid() == 0:
        st = os.lstat(path)
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise UntrustedPath(f"refusing to write into the {what} {path}: it is writable "
                                f"by group or others (mode {stat.S_IMODE(st.st_mode):o})",
                                hint="give a directory only you can write")
    with held_dir(path) as dfd:
        with os.scandir(dfd) as it:
            names = sorted(e.name for e in it)
        for name in names:
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            ours = st.st_uid in (0, os.geteuid())
            if stat.S_ISDIR(st.st_mode) and ours:
                continue
            if stat.S_ISREG(st.st_mode) and ours and st.st_nlink == 1:
                continue
            if stat.S_ISLNK(st.st_mode) and ours:
                continue
            raise planted(str(path / name), st, f"a file or directory owned by {_me()}")


def private_db_file(path: str | Path, what: str = "study database") -> None:
    """Before a library opens ``path`` by name (SQLite: the study and its -journal/-wal/-shm,
    which it creates beside it): the directory is made 0700 by descriptor when missing; as
    root, one another user owns is refused (its owner could plant a link at any of those
    names after a check: UntrustedPath, exit 3), and so is one others may write; every entry
    planted there is refused (:func:`refuse_planted_entries`: a link, FIFO, device, hard link
    or another user's file is PlantedFile). The database file itself is created
    ``O_EXCL|O_NOFOLLOW`` mode 0600 relative to the held directory, or, when it is there
    already, opened :func:`open_checked` and narrowed to 0600 by ``fchmod``: SQLite gives its
    journals the database's mode, so nothing of the study is readable by a server's user."""
    path = Path(os.path.abspath(path))
    where = path.parent
    ensure_dir(where, mode=0o700)
    if os.geteuid() == 0:
        with held_dir(where) as dfd:
            st = os.fstat(dfd)
        if st.st_uid != 0:
            raise UntrustedPath(f"refusing to keep the {what} in {where}: the directory is "
                                f"owned by {who(st.st_uid)}, who could plant a link at its "
                                "name or its journal's after any check",
                                hint="give a directory root owns (the default: --out)")
    refuse_planted_entries(where, f"{what} directory")
    with held_dir(where) as dfd:
        try:
            try:
                fd = os.open(path.name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o600, dir_fd=dfd)
            except FileExistsError:
                fd = open_checked(dfd, path.name, str(path))
            try:
                if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
                    with contextlib.suppress(OSError):  # a read-only study is still read
                        os.fchmod(fd, 0o600)
            finally:
                os.close(fd)
        except PlantedFile:
            raise
        except OSError as e:  # read-only, full, forbidden: an environment problem (exit 3)
            raise as_error(e, path, "create") from None


def make_owned_dir(dfd: int, name: str, owner: tuple[int, int] | None, mode: int,
                   where: str = "") -> int:
    """``mkdirat`` ``name`` in the held ``dfd`` and give it to ``owner`` (uid, gid; None: keep
    it ours) with ``mode``, by ``fchown``/``fchmod`` on the descriptor of what we made (checked
    to be it: a directory of ours, swapped for nothing). Returns that descriptor.
    FileExistsError when the name is taken: never adopted, never chmod-ed."""
    os.mkdir(name, 0o700, dir_fd=dfd)
    fd = open_checked(dfd, name, where or name, directory=True, owners=())
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            raise planted(where or name, os.fstat(fd), f"the directory {_me()} made")
        if owner is not None and os.geteuid() == 0:
            os.fchown(fd, *owner)
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def hand_over_dir(path: str | Path, owner: tuple[int, int] | None, mode: int, *,
                  any_owner: bool = False) -> None:
    """Give the existing directory ``path`` (ours, or already ``owner``'s) to ``owner`` with
    ``mode``: its parent walked by :func:`open_dir` (no link another user owns is followed),
    the directory opened ``O_NOFOLLOW`` relative to it and changed by ``fchown``/``fchmod``
    on that descriptor. A link, a non-directory or another user's directory there is
    PlantedFile, and nothing is changed. ``any_owner``: a directory the caller named itself
    (``--data-dir``), which may be a third user's, is given over whoever owns it."""
    path = Path(os.path.abspath(path))
    owners = (owner[0],) if owner else ()
    with held_parent(path, "hand over") as (pfd, name):
        if any_owner:
            with contextlib.suppress(FileNotFoundError):
                owners += (os.stat(name, dir_fd=pfd, follow_symlinks=False).st_uid,)
        fd = open_checked(pfd, name, str(path), directory=True, owners=owners)
    try:
        if owner is not None and os.geteuid() == 0:
            os.fchown(fd, *owner)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def chown_tree_fd(path: str | Path, owner: tuple[int, int]) -> None:
    """Give the tree at ``path`` (which root filled, or the owner's) to ``owner``: walked with a
    held directory descriptor, each entry opened ``O_NOFOLLOW`` relative to it and changed
    by ``fchown`` on what was opened. Symbolic links are left as they are (their owner
    decides nothing outside sticky directories, and an lchown by name could land on a file
    swapped in); a FIFO, device, socket, hard-linked file or another user's entry is
    PlantedFile. A directory swapped for a link mid-walk is refused, never followed."""
    if os.geteuid() != 0:
        return
    path = Path(os.path.abspath(path))
    with held_parent(path, "hand over") as (pfd, name):
        fd = open_checked(pfd, name, str(path), directory=True, owners=(owner[0],))
    try:
        _chown_walk(fd, str(path), owner)
    finally:
        os.close(fd)


def _chown_walk(fd: int, where: str, owner: tuple[int, int]) -> None:
    os.fchown(fd, *owner)
    with os.scandir(fd) as it:
        names = [e.name for e in it]
    for name in names:
        here = os.path.join(where, name)
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        child = open_checked(fd, name, here, directory=stat.S_ISDIR(st.st_mode),
                             owners=(owner[0],))
        try:
            if stat.S_ISDIR(st.st_mode):
                _chown_walk(child, here, owner)
            else:
                os.fchown(child, *owner)
        finally:
            os.close(child)


def read_at(dfd: int, name: str, where: str, limit: int = 1 << 20, *,
            owners: tuple[int, ...] = ()) -> str:
    """At most ``limit`` bytes of the regular file ``name`` in the held ``dfd`` (opened as
    :func:`open_checked`: a FIFO cannot block root, a link cannot lead it to /etc/shadow)."""
    fd = open_checked(dfd, name, where, owners=owners)
    with os.fdopen(fd, "rb") as f:
        return f.read(limit).decode("utf-8", "replace")


# -- logs the server cannot redirect -------------------------------------------------------------
class HeldLog:
    """A log file in a directory only we write (mode 0700, beside the tree the server owns),
    created ``O_EXCL|O_NOFOLLOW`` and held open: every tool and server start gets a duplicate
    of this descriptor as its stdout, and what is read back into messages is read from it by
    ``pread``, bounded. No name is opened again, so nothing the server's user plants (a
    ``server.log -> /etc/passwd`` link) is ever opened by root."""

    MAX_READ = 1 << 20

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    @classmethod
    def create(cls, dfd: int, name: str, path: Path) -> HeldLog:
        fd = os.open(name, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        return cls(fd, path)

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def write(self, data: bytes) -> None:
        os.write(self.fd, data)

    def read_since(self, offset: int, limit: int = MAX_READ) -> str:
        """What was logged from ``offset`` on; its last ``limit`` bytes when more."""
        end = self.size()
        start = max(offset, end - limit)
        return os.pread(self.fd, max(0, end - start), start).decode("utf-8", "replace")

    def tail(self, lines: int = 40) -> str:
        text = self.read_since(max(0, self.size() - 200 * lines - 4096))
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


# -- copying a tree another user writes ----------------------------------------------------------
def copy_tree_fd(src: str | Path, dst: str | Path, owner: tuple[int, int] | None,
                 src_owners: tuple[int, ...] = ()) -> int:
    """Copy the contents of the directory ``src`` into the existing directory ``dst`` (a golden
    copy of a server's data directory, or its restore): both walked with held descriptors,
    every source entry opened ``O_NOFOLLOW`` and checked by ``fstat`` (a directory, or a
    regular file with one name, owned by root, us or ``src_owners``), every new entry made
    ``O_CREAT|O_EXCL|O_NOFOLLOW``/``mkdirat`` relative to the held destination and given
    ``owner``, its mode and times by descriptor. Symbolic links are copied as links (their
    target text, never followed); a FIFO, device, socket or hard link is PlantedFile, and so
    is a directory swapped for a link mid-walk. Data moves by ``copy_file_range`` (a
    reflink where the filesystem shares extents). Returns the bytes copied."""
    src, dst = Path(os.path.abspath(src)), Path(os.path.abspath(dst))
    with held_dir(src) as sfd, held_dir(dst) as dfd:
        fstat_owned(sfd, str(src), owners=(0, os.geteuid(), *src_owners))
        return _copy_walk(sfd, dfd, str(src), owner, src_owners)


def _copy_walk(sfd: int, dfd: int, where: str, owner: tuple[int, int] | None,
               src_owners: tuple[int, ...]) -> int:
    total = 0
    with os.scandir(sfd) as it:
        names = sorted(e.name for e in it)
    for name in names:
        here = os.path.join(where, name)
        try:
            st = os.stat(name, dir_fd=sfd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            try:
                target = os.readlink(name, dir_fd=sfd)
            except OSError as e:  # no longer a link: swapped while we looked
                if e.errno != errno.EINVAL:
                    raise
                raise planted(here, os.stat(name, dir_fd=sfd, follow_symlinks=False),
                              "the symbolic link it was a moment before") from None
            os.symlink(target, name, dir_fd=dfd)
            continue
        if stat.S_ISDIR(st.st_mode):
            s = open_checked(sfd, name, here, directory=True, owners=src_owners)
            try:
                d = make_owned_dir(dfd, name, None, 0o700, here)
                try:
                    total += _copy_walk(s, d, here, owner, src_owners)
                    _give(d, os.fstat(s), owner)
                finally:
                    os.close(d)
            finally:
                os.close(s)
            continue
        s = open_checked(sfd, name, here, owners=src_owners)  # refuses FIFOs, devices, links
        try:
            d = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                        0o600, dir_fd=dfd)
            try:
                total += _copy_data(s, d, os.fstat(s).st_size)
                _give(d, os.fstat(s), owner)
            finally:
                os.close(d)
        finally:
            os.close(s)
    return total


def copy_file_fd(src: str | Path, dst: str | Path, owner: tuple[int, int] | None = None,
                 src_owners: tuple[int, ...] = ()) -> int:
    """Copy the regular file ``src`` to the new name ``dst`` (a golden database file into a
    trial directory): the source opened ``O_NOFOLLOW|O_NONBLOCK`` relative to its held
    parent and checked as :func:`open_checked` does (a regular file with one name, owned by
    root, us or ``src_owners``: a link, FIFO, device or a hard link to /etc/shadow is
    PlantedFile), the copy made ``O_CREAT|O_EXCL|O_NOFOLLOW`` relative to the held
    destination directory and given ``owner`` and the source's mode and times by
    descriptor. Returns the bytes copied."""
    src, dst = Path(os.path.abspath(src)), Path(os.path.abspath(dst))
    with held_parent(src, "copy") as (sp, sname), held_parent(dst, "copy to") as (dp, dname):
        s = open_checked(sp, sname, str(src), owners=src_owners)
        try:
            d = os.open(dname, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                        | os.O_CLOEXEC, 0o600, dir_fd=dp)
            try:
                total = _copy_data(s, d, os.fstat(s).st_size)
                _give(d, os.fstat(s), owner)
            finally:
                os.close(d)
        finally:
            os.close(s)
    return total


def _copy_data(s: int, d: int, size: int) -> int:
    done = 0
    try:
        while done < size:
            n = os.copy_file_range(s, d, size - done)
            if n == 0:
                break
            done += n
        return done
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise
    os.lseek(s, done, os.SEEK_SET)
    os.lseek(d, done, os.SEEK_SET)
    while chunk := os.read(s, 1 << 20):
        os.write(d, chunk)
        done += len(chunk)
    return done


def _give(fd: int, like: os.stat_result, owner: tuple[int, int] | None) -> None:
    """The copy at ``fd`` gets ``owner`` and the source's mode and times, by descriptor."""
    if owner is not None and os.geteuid() == 0:
        os.fchown(fd, *owner)
    os.fchmod(fd, stat.S_IMODE(like.st_mode))
    os.utime(fd, ns=(like.st_atime_ns, like.st_mtime_ns))
