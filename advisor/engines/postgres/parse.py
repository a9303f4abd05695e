"""postgresql.conf parser, following the server's lexer (guc-file.l).

Lines are ``name [=] value [# comment]``; values are a quoted string ('' and backslash
escapes) or one unquoted token (numbers with units, identifiers). ``include``,
``include_if_exists`` and ``include_dir`` are relative to the including file; last one wins;
``postgresql.auto.conf`` next to the main file is read last, as the server does.
"""

from __future__ import annotations

import os
import re

from pmem_advisor.errors import InputError
from pmem_advisor.knobs.configfile import (
    ConfigEntry,
    ConfigFile,
    read_config_file,
    refuse_if_not_regular,
)

_ID = r"[A-Za-z_\x80-\uffff][A-Za-z0-9_$\x80-\uffff]*"
_NAME = rf"{_ID}(?:\.{_ID})?"
_STRING = r"'(?:[^'\\\n]|\\.|'')*'"
# guc-file.l's other value tokens, one each: INTEGER (digits or 0x hex, then unit letters),
# REAL (a dot, an optional exponent: no unit may follow, so '1.5s' and '1e5' must be quoted)
# and UNQUOTED_STRING (a letter first, then letters, digits and -._:/)
_UNQUOTED = (r"[-+]?(?:0x[0-9a-fA-F]+|[0-9]+)[a-zA-Z]*(?![.0-9])"
             r"|[-+]?[0-9]*\.[0-9]*(?:[Ee][-+]?[0-9]+)?"
             r"|[A-Za-z_\x80-\uffff][-A-Za-z0-9_.:/\x80-\uffff]*")
# Atomic groups: the name and the value are single tokens as in the server's lexer, so a long
# line that does not parse fails in linear time instead of retrying every split of the name.
_LINE = re.compile(rf"^[ \t\r\f]*(?P<name>(?>{_NAME}))[ \t\r\f]*(?:=[ \t\r\f]*)?"
                   rf"(?P<value>(?>{_STRING}|{_UNQUOTED}))[ \t\r\f]*(?:#.*)?$")
_BLANK = re.compile(r"^[ \t\r\f]*(?:#.*)?$")
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def unquote(token: str) -> str:
    """A value token as the server sees it (GUC_scanstr for quoted strings)."""
    if not token.startswith("'"):
        return token
    body, out, i = token[1:-1], [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n in "01234567":
                digits = re.match(r"[0-7]{1,3}", body[i + 1:]).group(0)
                out.append(chr(int(digits, 8)))
                i += 1 + len(digits)
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
        elif c == "'" and body[i + 1:i + 2] == "'":
            out.append("'")
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def quote(text: str) -> str:
    """Quote text so that unquote() gives it back (backslashes and quotes doubled)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def parse_postgresql_conf(path: str, *, auto_conf: bool = True) -> ConfigFile:
    """Parse ``path`` and its includes; InputError names file:line on any problem. Paths
    stay as given, never made absolute (see knobs/configfile.py)."""
    refuse_if_not_regular(path)
    result = ConfigFile(format="postgresql", path=path)
    _read(path, result, depth=0, origin=None)
    auto = os.path.join(os.path.dirname(path), "postgresql.auto.conf")
    if auto_conf and os.path.basename(path) != "postgresql.auto.conf" and os.path.isfile(auto):
        _read(auto, result, depth=0, origin=None)
    return result


def parse_postgresql_text(text: str, name: str = "<text>") -> ConfigFile:
    """Parse config text without includes (for emitted fragments and tests)."""
    result = ConfigFile(format="postgresql", path=name)
    _parse_lines(text, name, result, depth=0, allow_include=False)
    return result


def _read(path: str, result: ConfigFile, depth: int, origin: str | None) -> None:
    text = read_config_file(path, result, depth, origin)
    _parse_lines(text, path, result, depth, True)


def _parse_lines(text: str, path: str, result: ConfigFile, depth: int,
                 allow_include: bool) -> None:
    for lineno, line in enumerate(text.split("\n"), start=1):
        if _BLANK.match(line):
            continue
        m = _LINE.match(line)
        if not m:
            raise InputError(f"{path}:{lineno}: syntax error")  # never the text: it may be a secret
        name, value = m.group("name").lower(), unquote(m.group("value"))
        where = f"{path}:{lineno}"
        if name in ("include", "include_if_exists", "include_dir"):
            if not allow_include:
                raise InputError(f"{where}: {name} is not allowed here")
            _include(name, value, path, where, result, depth)
            continue
        result.entries.append(ConfigEntry(name=name, value=value, file=path, line=lineno,
                                          raw_name=m.group("name")))


def _include(kind: str, target: str, path: str, where: str, result: ConfigFile,
             depth: int) -> None:
    if not target:
        raise InputError(f"{where}: empty {kind} path")
    walk = result.walk
    full = walk.resolve(target, path)
    if kind == "include_dir":
        if not os.path.isdir(full):
            raise InputError(f"{where}: include_dir {target!r}: no such directory")
        for file in walk.list_dir(full, ".conf", where, kind):  # *.conf in name order
            _read(file, result, depth + 1, where)
        return
    if not os.path.exists(full):
        if kind == "include_if_exists":
            result.notes.append(f"{where}: skipped missing include_if_exists {target!r}")
            return
        raise InputError(f"{where}: include {target!r}: no such file")
    _read(full, result, depth + 1, where)
