"""Shared terminal output: the stream contract every command follows.

- Results (tables, JSON, the config text) go to **stdout**, so ``cmd > file`` and
  ``cmd | grep`` see them.
- Progress, notes and warnings go to **stderr** (``note``, ``progress``, ``warn``), and
  ``-q`` silences notes and progress (never warnings), ``-v`` adds ``detail`` lines.
- Tables (``print_table``) are drawn with rich only when stdout is a terminal; piped, they
  are one row per line and never wrap (``--format tsv`` gives tab-separated values).
- Text is text: both consoles print strings as they are (``markup=False``: ``[/bold]`` in a
  path or a config value is shown, never interpreted), and every string they render, table
  cells included, passes ``safe_text`` first: control characters (ESC, BEL, CR, C1) and bidi
  overrides become visible ``\\xNN``/``\\uNNNN`` escapes, so a value read from a file cannot
  move the cursor, retitle the terminal or hide text. Colour is asked for with ``styled``
  (a rich ``Text``), never by markup in a string that may hold user data. Errors
  (``cli/main.py``) go through ``safe_text`` too.
- JSON (``print_json``) is a contract: it carries a schema id like ``pmem-advisor.knobs/1``
  (a JSON Schema for each id ships in ``pmem_advisor/schemas``), the tool version and the
  engine/flavour/version it targets.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from pmem_advisor.cli.formats import (  # re-exported: output is the one output API
    FORMAT_ALIASES,
    TABLE_FORMATS,
    OutputFormat,
    chosen_format,
    format_option,
)
from pmem_advisor.cli.safetext import SafeConsole, plain_text, safe_text, styled
from pmem_advisor.cli.streams import stdout_closed, stdout_is_terminal, unwrap_pacified_streams
from pmem_advisor.report.describe import EMULATION_NOTE
from pmem_advisor.schemas import stamp

# Human-facing output goes to stderr so that ``--json`` on stdout stays machine-readable.
console = SafeConsole(stderr=True, highlight=False, markup=False)
out = SafeConsole(highlight=False, soft_wrap=True, markup=False)

# 0 quiet (-q), 1 normal, 2 verbose (-v); set once by the root command in cli/main.py.
VERBOSITY = 1


def set_verbosity(level: int) -> None:
    global VERBOSITY
    VERBOSITY = level


# -- stderr: progress, notes, warnings ---------------------------------------------------------
def note(message: str) -> None:
    """A note for the person watching (stderr); silenced by -q. ``message`` is plain text."""
    if VERBOSITY >= 1:
        console.print(message, soft_wrap=True)


def progress(message: str) -> None:
    """A progress line (stderr, dimmed); silenced by -q."""
    if VERBOSITY >= 1:
        console.print(styled(message, "dim"))


def detail(message: str) -> None:
    """Extra detail shown only with -v (stderr)."""
    if VERBOSITY >= 2:
        console.print(styled(message, "dim"))


def warn(message: str) -> None:
    """A warning (stderr); shown even with -q: caveats must reach every output."""
    console.print(Text.assemble(styled("warning:", "yellow"), " ", styled(message, "")))


# -- stdout: tables ------------------------------------------------------------------------
def print_table(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    fmt: OutputFormat | str = OutputFormat.table,
) -> None:
    """Rows on stdout: a rich table on a terminal; piped, one row per line that never wraps.

    ``fmt="tsv"``: a header line, then tab-separated rows (tabs/newlines in cells become
    spaces). Cells may hold rich markup; it is stripped outside the terminal. The title goes
    to stderr when the output is not a rich table, so stdout holds only the rows.
    """
    fmt = OutputFormat(FORMAT_ALIASES.get(str(fmt), str(fmt)))
    rows = [list(r) for r in rows]
    if fmt is OutputFormat.tsv:
        if title:
            note(title)
        lines = ["\t".join(columns)]
        for r in rows:
            lines.append("\t".join(" ".join(plain_text(c).split()) for c in r))
        _write_lines(lines)
        return
    if stdout_is_terminal():
        table = Table(title=title)
        for i, col in enumerate(columns):  # the first column (a name) is never broken
            table.add_column(col, overflow="fold", no_wrap=i == 0)
        for r in rows:
            table.add_row(*(c if isinstance(c, Text) else str(c if c is not None else "")
                            for c in r))
        out.print(table)
        return
    if title:
        note(title)
    cells = [list(columns)] + [[" ".join(plain_text(c).split()) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    _write_lines(["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                  for row in cells])


def _write_lines(lines: list[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


# -- stdout: JSON ----------------------------------------------------------------------------
def print_json(data: Any, schema: str | None = None, **target: Any) -> None:
    """Write ``data`` as JSON on stdout (never through rich, which would wrap lines).

    With ``schema`` ("pmem-advisor.<kind>/<n>"), the document is stamped first (see
    ``stamp``: engine=, flavour=, version=, key= pass through).
    """
    if schema is not None:
        data = stamp(data, schema, **target)
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


__all__ = [
    "EMULATION_NOTE", "FORMAT_ALIASES", "OutputFormat", "SafeConsole", "TABLE_FORMATS",
    "chosen_format", "console", "detail", "format_option", "note", "out", "plain_text",
    "print_json", "print_table", "progress", "safe_text", "set_verbosity", "stamp",
    "stdout_closed", "stdout_is_terminal", "styled", "unwrap_pacified_streams", "warn",
]
