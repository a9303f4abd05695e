"""A scenario's dataset: benchmarks/data/<scenario>.jsonl (one measured trial per line) and
<scenario>.provenance.json (machine, server, space, rules config, commit, runs).

Rows are appended one at a time and fsynced, so a killed collection loses at most the row it
was measuring; a torn last line (killed mid-write) is cut off when the file is next opened.
"""

from __future__ import annotations

import fcntl
import json
import os
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pmem_advisor.errors import EnvironmentProblem
from pmem_advisor.fileio import write_file_safely

DATA_DIR = Path(__file__).parent.parent / "data"  # benchmarks/data


def rows_path(name: str, directory: Path = DATA_DIR) -> Path:
    return directory / f"{name}.jsonl"


def provenance_path(name: str, directory: Path = DATA_DIR) -> Path:
    return directory / f"{name}.provenance.json"


def read_rows(path: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """Every complete row; with ``repair`` a torn last line is cut off the file."""
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data) and repair:
        with open(path, "r+b") as f:
            f.truncate(end)
            os.fsync(f.fileno())
    rows = []
    for line in data[:end].splitlines():
        if line.strip():
            rows.append(json.loads(line))
    return rows


@contextmanager
def appender(path: Path) -> Iterator[Any]:
    """An append handle holding an exclusive lock: two collectors never write one dataset."""
    path.parent.mkdir(parents=True, exist_ok=True)
    f = open(path, "a", encoding="utf-8")
    try:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise EnvironmentProblem(
                f"{path} is being collected by another process (lock held)") from None
        yield f
    finally:
        f.close()


def append_row(f: Any, row: dict[str, Any]) -> None:
    f.write(json.dumps(row, sort_keys=True, default=str) + "\n")
    f.flush()
    os.fsync(f.fileno())


def write_json(path: Path, data: Any) -> None:
    """Atomically (the project's safe writer): a crash leaves the old or the new provenance."""
    write_file_safely(path, json.dumps(data, indent=1, sort_keys=True, default=str) + "\n",
                      backup=False)


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def tps(row: dict[str, Any]) -> float:
    """The objective of a row: throughput, a failure counts 0 (the harness's rule)."""
    return float(row.get("tps") or 0.0) if row.get("ok") else 0.0


def by_kind(rows: list[dict[str, Any]], kind: str) -> list[float]:
    """Throughputs of every measurement of a fixed point (screen and later repeats)."""
    return [tps(r) for r in rows if r.get("kind") in (kind, f"repeat-{kind}")]


def median_or_none(values: list[float]) -> float | None:
    return statistics.median(values) if values else None
