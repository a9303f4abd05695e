"""Config files and their includes, read as the server would and no further.

Both option-file parsers (postgresql.conf, my.cnf) read every file through one
:class:`IncludeWalk` per parse, which holds the limits a server has or a real config never
reaches, so a hostile file cannot make a parse slow, large or revealing:

- nesting depth ``MAX_DEPTH`` (10: PostgreSQL's CONF_FILE_MAX_DEPTH; MySQL nests no deeper in
  practice), at most ``MAX_FILES`` file reads and ``MAX_TOTAL_BYTES`` in all (ten files each
  including the next ten times is 10**9 reads without a count), ``MAX_FILE_BYTES`` per file;
- regular files only, opened ``O_NONBLOCK`` then ``fstat``-ed: a FIFO does not block, a device
  is not read;
- as root, an include is followed only into a file owned by root or by the including file's
  owner, and readable by every non-root user on the way (the owner of a link to the config,
  the config's owner): the server runs as that user and could not read more, so a user's
  ``include '/etc/shadow'`` is refused before a byte of it is read;
- errors name the file, the line and the directive, never a line's text or a value read
  from a file (a refused file's content must not reach the terminal).
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from dataclasses import dataclass, field

from pmem_advisor.errors import InputError
from pmem_advisor.fileio import who

MAX_DEPTH = 10
MAX_FILES = 256
MAX_FILE_BYTES = 16 << 20  # real config files are kilobytes; this bounds a mistaken path
MAX_TOTAL_BYTES = 32 << 20


def _groups(uid: int) -> set[int]:
    try:
        pw = pwd.getpwuid(uid)
    except KeyError:
        return set()
    try:
        return set(os.getgrouplist(pw.pw_name, pw.pw_gid))
    except OSError:
        return {pw.pw_gid} | {g.gr_gid for g in grp.getgrall() if pw.pw_name in g.gr_mem}


def readable_by(st: os.stat_result, uid: int) -> bool:
    """Whether ``uid`` may read a file with ``st`` (owner, group, other bits; root may)."""
    if uid == 0:
        return True
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IRUSR)
    if st.st_gid in _groups(uid):
        return bool(st.st_mode & stat.S_IRGRP)
    return bool(st.st_mode & stat.S_IROTH)


@dataclass
class IncludeWalk:
    """The limits and trust of one parse (its top file and every include)."""

    what: str = "a config file"
    files: int = 0
    total: int = 0
    users: set[int] = field(default_factory=set)  # non-root uids the content passed through
    owners: dict[str, int] = field(default_factory=dict)  # file read -> its owner

    # -- where an include points -----------------------------------------------------------
    @staticmethod
    def resolve(target: str, including: str) -> str:
        return target if os.path.isabs(target) else os.path.join(os.path.dirname(including),
                                                                 target)

    @staticmethod
    def is_file(path: str) -> bool:
        return os.path.isfile(path)

    def list_dir(self, directory: str, suffix: str, where: str, directive: str) -> list[str]:
        """Files of an include directory ending in ``suffix``, in name order (the servers'
        order), hidden ones skipped; InputError naming ``where`` when it cannot be listed."""
        try:
            names = sorted(os.listdir(directory))
        except OSError as e:
            raise InputError(f"{where}: {directive}: cannot list the directory: "
                             f"{e.strerror}") from None
        if len(names) > MAX_FILES:
            raise InputError(f"{where}: {directive}: more than {MAX_FILES} entries")
        out = []
        for name in names:
            file = os.path.join(directory, name)
            if name.endswith(suffix) and not name.startswith(".") and os.path.isfile(file):
                out.append(file)
        return out

    # -- reading ---------------------------------------------------------------------------
    def read(self, path: str, depth: int, origin: str | None, including: str | None) -> str:
        """The text of one file (the top one when ``including`` is None), within every limit
        and, as root, only if the trust rule allows it; InputError otherwise."""
        where = origin or path
        if depth > MAX_DEPTH:
            raise InputError(f"{where}: includes nested more than {MAX_DEPTH} deep (a loop?)")
        self.files += 1
        if self.files > MAX_FILES:
            raise InputError(f"{where}: more than {MAX_FILES} files read through includes "
                             "(a loop?)")
        self._note_link(path, including)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as e:
            raise InputError(f"{where}: cannot read {path}: {e.strerror}") from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise InputError(f"{where}: {path} is not a regular file")
            self._check_trust(path, st, where, including)
            budget = min(MAX_FILE_BYTES, MAX_TOTAL_BYTES - self.total)
            try:
                data = f.read(budget + 1)
            except OSError as e:
                raise InputError(f"{where}: cannot read {path}: {e.strerror}") from None
        if len(data) > budget:
            if budget < MAX_FILE_BYTES:
                raise InputError(f"{where}: more than {MAX_TOTAL_BYTES >> 20} MiB read "
                                 "through includes")
            raise InputError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB; not {self.what}")
        self.total += len(data)
        if b"\0" in data:
            raise InputError(f"{path}: binary data (NUL byte) in {self.what}")
        self.owners[path] = st.st_uid
        return data.decode("utf-8", errors="replace")

    def _note_link(self, path: str, including: str | None) -> None:
        """A link on the way counts as its owner's claim on what it points to."""
        if os.geteuid() != 0:
            return
        try:
            lst = os.lstat(path)
        except OSError:
            return
        if stat.S_ISLNK(lst.st_mode) and lst.st_uid != 0:
            self.users.add(lst.st_uid)

    def _check_trust(self, path: str, st: os.stat_result, where: str,
                     including: str | None) -> None:
        if os.geteuid() != 0:
            return  # the kernel's permissions already are the server user's
        if including is not None:
            owner = self.owners.get(including, 0)
            if st.st_uid not in (0, owner):
                raise InputError(f"{where}: refusing to include {path}: it is owned by "
                                 f"{who(st.st_uid)}, not by root or {who(owner)} who owns "
                                 f"{including}")
        for uid in sorted(self.users):
            if not readable_by(st, uid):
                raise InputError(f"{where}: refusing to read {path}: {who(uid)}, whose "
                                 "config includes it, could not read it")
        if st.st_uid != 0:
            self.users.add(st.st_uid)
