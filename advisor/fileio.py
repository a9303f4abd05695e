"""Writing user-facing files: never lose what was there.

An existing file with other content is kept as ``NAME.bak`` (``NAME.bak.1``, ``.2``... when
that is taken) before the new content replaces it atomically (write to a temporary file in
the same directory, then rename), so a crash never leaves half a config behind.
"""

from __future__ import annotations

import os
from pathlib import Path

from pmem_advisor.errors import UsageError


def backup_path(path: Path) -> Path:
    candidate = path.with_name(path.name + ".bak")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak.{n}")
        n += 1
    return candidate


def write_keeping_backup(path: str | Path, data: str | bytes) -> Path | None:
    """Write ``data`` to ``path``; returns the backup made of the old content, if any."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    backup = None
    try:
        if path.is_dir():
            raise UsageError(f"{path} is a directory, not a file")
        if path.exists() and path.read_bytes() != raw:
            backup = backup_path(path)
            _keep(path, backup)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(raw)
        os.replace(tmp, path)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None
    return backup


def _keep(path: Path, backup: Path) -> None:
    """A hard link keeps the old inode (owner, mode, content) for free; else a copy."""
    try:
        os.link(path, backup)
    except OSError:
        backup.write_bytes(path.read_bytes())
