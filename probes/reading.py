"""Tolerant reads: a bad or missing file becomes ``None`` plus a warning that names it."""

from __future__ import annotations

import re

from pmem_advisor.probes.sysaccess import CommandResult, SysAccess

_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class ProbeContext:
    """A ``SysAccess`` plus the list of warnings the probe gathers on the way."""

    def __init__(self, access: SysAccess) -> None:
        self.access = access
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def text(self, path: str, *, required: bool = False) -> str | None:
        """File content, stripped; ``None`` when absent (warned when ``required``) or unreadable."""
        try:
            return self.access.read_text(path).strip()
        except (FileNotFoundError, NotADirectoryError):
            if required:
                self.warn(f"{path}: missing")
            return None
        except OSError as e:
            self.warn(f"{path}: unreadable ({e.strerror or type(e).__name__})")
            return None

    def integer(self, path: str, *, required: bool = False, base: int = 10) -> int | None:
        """An integer file (decimal, or hex with ``base=16``); malformed -> ``None`` + warning."""
        raw = self.text(path, required=required)
        if raw is None or raw == "":
            return None
        try:
            return int(raw, base)
        except ValueError:
            self.warn(f"{path}: malformed (expected an integer, got {raw[:40]!r})")
            return None

    def size(self, path: str, *, required: bool = False) -> int | None:
        """Sizes like ``516096K`` (sysfs cache sizes) or plain bytes."""
        raw = self.text(path, required=required)
        if not raw:
            return None
        m = re.fullmatch(r"(\d+)\s*([KMGT]?)B?", raw, re.IGNORECASE)
        if not m:
            self.warn(f"{path}: malformed (expected a size, got {raw[:40]!r})")
            return None
        return int(m.group(1)) * _SIZE_UNITS[m.group(2).upper()]

    def command(self, argv: list[str]) -> CommandResult | None:
        """A tool's output when it ran cleanly; a failing tool is a warning, not an error."""
        result = self.access.run(argv)
        if result is None:
            return None
        if result.returncode != 0:
            first = (result.stderr or result.stdout).strip().splitlines()[:1]
            detail = f": {first[0][:120]}" if first else ""
            self.warn(f"`{result.source}` exited with {result.returncode}{detail}")
            return None
        return result


def parse_cpulist(text: str | None) -> list[int] | None:
    """Kernel cpulist format ``0-3,8,10-11`` -> sorted ints; ``""`` -> ``[]``; bad -> ``None``."""
    if text is None:
        return None
    cpus: set[int] = set()
    for part in text.replace("\n", ",").split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?(?::\d+/\d+)?", part)
        if not m:
            return None
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            return None
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def format_cpulist(cpus: list[int] | set[int] | tuple[int, ...]) -> str:
    """The kernel's cpulist format back: [0, 1, 2, 3, 8] -> ``0-3,8``; ``[]`` -> ``""``."""
    cpus = sorted(cpus)
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(f"{cpus[i]}-{cpus[j]}" if j > i else str(cpus[i]))
        i = j + 1
    return ",".join(out)
