"""Shared terminal output: rich for people on stderr, plain JSON for machines on stdout."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

# Human-facing output goes to stderr so that ``--json`` on stdout stays machine-readable.
console = Console(stderr=True, highlight=False)
out = Console(highlight=False, soft_wrap=True)


def print_json(data: Any) -> None:
    """Write ``data`` as JSON on stdout (never through rich, which would wrap lines)."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


EMULATION_NOTE = (
    "note: /dev/shm is tmpfs (DRAM-backed); it stands in for persistent memory here, "
    "as the papers' memmap= emulation did. Real PMEM is slower, above all for writes."
)
