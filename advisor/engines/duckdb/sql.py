"""DuckDB's config format: SQL ``SET`` statements run right after opening the database.

DuckDB has no config file; settings are SQL (``SET name = value``, ``PRAGMA name = value``,
``PRAGMA name(value)``) or the ``config`` dict of ``duckdb.connect``. The emitter writes one
``SET`` per line with its reason and a header whose comments show how to apply the file from
Python and from the CLI; ``parse_sql`` reads such files back (and hand-written ones with
PRAGMA), refusing anything that is not a setting with a one-line error naming the line.
"""

from __future__ import annotations

import re
from typing import Any

from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.knobs.emit import (
    EmittedConfig,
    Header,
    checked,
    header_lines,
    one_line,
    resolve_settings,
)

# Names DuckDB accepts for one setting; the catalog knows the canonical one.
NAME_ALIASES = {"worker_threads": "threads"}
USAGE = (
    "-- Apply right after opening the database, before any query:",
    "--   Python: con = duckdb.connect('my.duckdb'); "
    "con.execute(open('duckdb.tuned.sql').read())",
    "--   CLI:    duckdb -init duckdb.tuned.sql my.duckdb",
    "-- (the file only holds SET statements; DuckDB forgets them when the process exits)",
)
_STATEMENT = re.compile(
    r"^(?:SET\s+(?:(?:GLOBAL|SESSION|LOCAL)\s+)?(?P<set>[A-Za-z_][A-Za-z0-9_]*)\s*(?:=|\bTO\b)\s*"
    r"(?P<setv>.+)"
    r"|PRAGMA\s+(?P<pr>[A-Za-z_][A-Za-z0-9_]*)\s*(?:=\s*(?P<prv>.+)|\(\s*(?P<prc>.+)\s*\)))$",
    re.IGNORECASE | re.DOTALL)


def quote(text: str) -> str:
    """A SQL string literal ('' doubles a quote)."""
    return "'" + str(text).replace("'", "''") + "'"


def value_sql(knob: Any, value: Any) -> str:
    """Numbers and booleans bare, sizes/enums/paths as string literals."""
    text = knob.render(value)
    if knob.type in ("int", "real", "bool"):
        return text
    return quote(text)


def emit_sql(settings: list, header: Header, *, catalog: Any) -> EmittedConfig:
    """The SET file: header, usage snippet, one statement per setting with its reason."""
    resolved, warnings = resolve_settings(settings, catalog)
    lines = header_lines(header, catalog, "DuckDB settings (SQL SET statements)", "--")
    lines += list(USAGE) + [""]
    for knob, value, reason in resolved:
        why = one_line(reason) or "requested"
        if knob.risky_values and knob.is_risky(value):
            why = f"UNSAFE: {one_line(knob.safety_reason)}; {why}"
        if knob.scope == "reinit":
            why += " (only for database files created after this SET)"
            warnings.append(f"{knob.name} only applies to database files created afterwards")
        lines.append(f"SET {knob.name} = {value_sql(knob, value)};  -- {why}")
    return EmittedConfig(checked("\n".join(lines) + "\n"), warnings, resolved)


def _strip_comments(text: str) -> str:
    """Drop ``--`` and ``/* */`` comments outside string literals (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "'":
            j = i + 1
            while j < n:
                if text[j] == "'" and j + 1 < n and text[j + 1] == "'":
                    j += 2
                    continue
                if text[j] == "'":
                    break
                j += 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            skipped = text[i:n if j < 0 else j + 2]
            out.append("\n" * skipped.count("\n"))
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_statements(text: str) -> list[tuple[int, str]]:
    """(first line number, statement) for each ``;``-ended statement outside quotes."""
    body = _strip_comments(text)
    out, start, quoted, line, first = [], 0, False, 1, None
    for i, c in enumerate(body):
        if c == "'":
            quoted = not quoted
        elif c == ";" and not quoted:
            stmt = body[start:i].strip()
            if stmt:
                out.append((first or line, stmt))
            start, first = i + 1, None
        if c == "\n":
            line += 1
        elif not c.isspace() and first is None and not (c == ";" and not quoted):
            first = line
    tail = body[start:].strip()
    if tail:
        out.append((first or line, tail))
    return out


def _unquote(raw: str, where: str) -> str:
    raw = raw.strip()
    if raw.startswith("'"):
        if len(raw) < 2 or not raw.endswith("'"):
            raise UsageError(f"{where}: unterminated string {raw!r}")
        inner = raw[1:-1]
        if re.search(r"(?<!')'(?!')", inner.replace("''", "")):
            raise UsageError(f"{where}: more than one value in {raw!r}")
        return inner.replace("''", "'")
    if raw.startswith('"') and raw.endswith('"') and len(raw) >= 2:
        return raw[1:-1]
    if not re.fullmatch(r"[-+]?[A-Za-z0-9_.]+", raw):
        raise UsageError(f"{where}: {raw!r} is not one value (quote text: 'like this')")
    return raw


def parse_sql(text: str, origin: str, *, catalog: Any) -> dict[str, str]:
    """``{setting: value text}`` of a SET/PRAGMA file; every value is checked against the
    catalog (a wrong type or out-of-range value is a UsageError naming the setting)."""
    found: dict[str, str] = {}
    for line, stmt in split_statements(text):
        where = f"{origin}:{line}"
        m = _STATEMENT.match(stmt)
        if not m:
            first = one_line(stmt)[:60]
            raise UsageError(f"{where}: not a DuckDB setting statement: {first!r} (use SET "
                             "name = value;)")
        name = (m.group("set") or m.group("pr")).lower()
        raw = m.group("setv") or m.group("prv") or m.group("prc")
        name = NAME_ALIASES.get(name, name)
        try:
            knob = catalog.get(name)
        except UnknownKnobError as e:
            raise UnknownKnobError(f"{where}: {e.message}", hint=e.hint) from None
        value = _unquote(raw, f"{where}: {name}")
        try:
            knob.parse(value)
        except UsageError as e:
            raise UsageError(f"{where}: {e.message}") from None
        found[knob.name] = value
    return found
