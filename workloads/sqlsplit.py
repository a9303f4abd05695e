"""Split a file of SQL statements on semicolons that are outside quotes, comments and
PostgreSQL dollar-quoted bodies."""

from __future__ import annotations

import re
from pathlib import Path

from pmem_advisor.errors import InputError

_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


def split_statements(text: str) -> list[str]:
    statements: list[str] = []
    buf: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            j = i + 1
            while j < n:
                if text[j] == "\\" and ch != "`":
                    j += 2
                    continue
                if text[j] == ch:
                    if j + 1 < n and text[j + 1] == ch:  # doubled quote inside the literal
                        j += 2
                        continue
                    break
                j += 1
            buf.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("--", i) or ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j  # comments are dropped; the newline is kept
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            buf.append(" ")
        elif ch == "$" and (m := _DOLLAR.match(text, i)):
            tag = m.group(0)
            j = text.find(tag, m.end())
            end = n if j < 0 else j + len(tag)
            buf.append(text[i:end])
            i = end
        elif ch == ";":
            _flush(buf, statements)
            i += 1
        else:
            buf.append(ch)
            i += 1
    _flush(buf, statements)
    return statements


def _flush(buf: list[str], statements: list[str]) -> None:
    stmt = "".join(buf).strip()
    buf.clear()
    if stmt:
        statements.append(stmt)


def read_statements(path: Path | str) -> list[str]:
    """The statements of a file; an unreadable or empty file is an input error."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read SQL file {path}: {e}") from e
    statements = split_statements(text)
    if not statements:
        raise InputError(f"SQL file {path} holds no statements")
    return statements
