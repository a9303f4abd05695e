"""The trust boundary: what we execute, read back or delete as root must be ours.

A directory is *trusted* when it and every parent up to the first root-owned one are owned by
us (or root) and writable by nobody else; that root-owned parent may be world-writable only
with the sticky bit (``/tmp``, ``/var/tmp``), which stops others renaming our entries. This is
ssh's rule for ``~/.ssh``. The cache (server binaries copied for the server user), the work
directory and the state directory (instance records the reaper acts on) are created so and
refused otherwise, with the path and the fix in one line. The server user only reads and
traverses them (mode 755; records 700).
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from pmem_advisor.errors import EnvironmentProblem, as_error


class UntrustedPath(EnvironmentProblem):
    """A directory or file another user could have written: we refuse to use it."""


def _who(uid: int) -> str:
    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid}"


def _me() -> str:
    return _who(os.geteuid())


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
            return f"{p} is a symbolic link owned by {_who(lst.st_uid)}"
    real = Path(os.path.realpath(path))
    for p in [real, *real.parents]:
        st = os.stat(p)
        if not _owner_ok(st):
            return f"{p} is owned by {_who(st.st_uid)}, not by {_me()}"
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
    one; UntrustedPath when another user could write it or one of its parents."""
    path = Path(os.path.abspath(path))
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        want = mode if d == path else 0o755  # parents: the server user traverses to siblings
        try:
            os.mkdir(d, want)
        except FileExistsError:
            pass  # a parallel run made it: checked below like any existing one
        except OSError as e:
            raise as_error(e, d, "create") from None
        else:
            os.chmod(d, want)  # not narrowed by the umask: the server user must traverse
    path = require_trusted(path, what)
    st = os.stat(path)
    wanted = stat.S_IMODE(st.st_mode) | (mode & 0o555)  # ours: open it to the server user
    if not mode & 0o077:
        wanted &= ~0o077  # a private one (records, caches) is closed to everybody else
    if st.st_uid == os.geteuid() and wanted != stat.S_IMODE(st.st_mode):
        os.chmod(path, wanted)
    return path


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
                return f"{p} is owned by {_who(st.st_uid)}"
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return f"{p} is writable by group or others"
    return None
