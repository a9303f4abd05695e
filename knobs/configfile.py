"""What both config parsers return: settings with the file and line they came from.

How a file is named, in every output (settings' ``file``, the errors, the files read): the path
as the user gave it, joined with the walked or included part (``conf/conf.d/x.cnf`` for
``check conf`` and ``!includedir conf.d``), as ripgrep and ruff name files; an include its
includer names by an absolute path, as it names it. The parsers never make a path absolute;
only formats that need another form convert (SARIF's URIs, GitHub's repository-relative
``file=``, the baseline's keys)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from pmem_advisor.errors import InputError
from pmem_advisor.fileio import file_kind
from pmem_advisor.knobs.includes import MAX_DEPTH, MAX_FILE_BYTES, IncludeWalk


@dataclass(frozen=True)
class ConfigEntry:
    name: str  # canonical: lowercase; MySQL also '-' -> '_' and no 'loose-' prefix
    value: str | None  # unquoted text; None for a bare MySQL flag ("skip-log-bin" sets OFF)
    file: str
    line: int
    raw_name: str = ""
    group: str | None = None  # my.cnf group; None for postgresql.conf
    loose: bool = False  # my.cnf 'loose-' prefix: the server ignores it when unknown

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class ConfigFile:
    format: str  # "postgresql" | "mycnf"
    path: str
    entries: list[ConfigEntry] = field(default_factory=list)  # in the order the server reads
    files: list[str] = field(default_factory=list)  # every file read, includes too
    ignored: list[ConfigEntry] = field(default_factory=list)  # my.cnf groups the server skips
    notes: list[str] = field(default_factory=list)  # e.g. include_if_exists of a missing file
    walk: IncludeWalk = field(default_factory=IncludeWalk, repr=False, compare=False)

    def effective(self) -> dict[str, ConfigEntry]:
        """Last one wins, as in the servers."""
        result: dict[str, ConfigEntry] = {}
        for e in self.entries:
            result.pop(e.name, None)  # keep the order of the winning lines
            result[e.name] = e
        return result

    def to_dict(self) -> dict:
        return {
            "format": self.format, "path": self.path, "files": self.files, "notes": self.notes,
            "settings": [
                {"name": e.name, "value": e.value, "file": e.file, "line": e.line,
                 "group": e.group, "loose": e.loose} for e in self.effective().values()
            ],
        }


MAX_INCLUDE_DEPTH = MAX_DEPTH  # PostgreSQL's CONF_FILE_MAX_DEPTH; MySQL nests as deep
MAX_CONFIG_BYTES = MAX_FILE_BYTES


def _open_regular(path: str, origin: str | None = None):
    """A binary file object for a regular file; InputError for FIFOs, devices, directories
    (a FIFO must not block the open: O_NONBLOCK; /dev/zero must not be read at all)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise InputError(f"{origin or path}: cannot read {path}: {e.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # before fdopen, which refuses directories
        os.close(fd)
        kind = file_kind(st)
        raise InputError(f"{origin}: {path} is not a regular file ({kind})" if origin else
                         f"{path}: not a regular file ({kind})")
    return os.fdopen(fd, "rb")


def config_text(data: bytes | str) -> str:
    """A config file's bytes (or its UTF-8 text) as text: a byte-order mark and CRLF line ends
    read as the encoding they are (editors on Windows write both), never as part of the first
    name or of a value."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    text = data.removeprefix("\ufeff")
    return text.replace("\r\n", "\n")


def read_head(path: str, limit: int = 64 << 10) -> str:
    """The first ``limit`` bytes of a config file as text (to guess its format)."""
    with _open_regular(path) as f:
        return config_text(f.read(limit))


def refuse_if_not_regular(path: str) -> None:
    """InputError naming ``path`` unless it exists and is a regular file."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    _open_regular(path).close()


def read_config_file(path: str, result: ConfigFile, depth: int, origin: str | None,
                     what: str = "a config file") -> str:
    """The text of one (possibly included) file, recorded in ``result.files``, read through
    the parse's one ``IncludeWalk`` (knobs/includes.py: depth, file-count and byte limits,
    regular files only, the root trust rule); one-line InputErrors naming file and line."""
    result.walk.what = what
    including = origin.rsplit(":", 1)[0] if origin else None
    text = result.walk.read(path, depth, origin, including)
    result.files.append(path)
    return config_text(text)
