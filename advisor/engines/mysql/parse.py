"""my.cnf parser, following mysys' option-file reader (my_default.c).

Groups in ``[brackets]``; ``!include FILE`` and ``!includedir DIR`` (``*.cnf``, name order);
``#``/``;`` comment lines and ``#`` comments after values; optional quotes and backslash
escapes in values; '-' and '_' are the same in names; ``loose-`` marks options the server
ignores when it does not know them; ``skip-X``/``disable-X`` mean X=OFF, ``enable-X`` X=ON.
Relative include paths are taken relative to the including file.
"""

from __future__ import annotations

import os
import re

from pmem_advisor.errors import InputError
from pmem_advisor.knobs.catalog import knob_names, server_option_names
from pmem_advisor.knobs.configfile import (
    ConfigEntry,
    ConfigFile,
    read_config_file,
    refuse_if_not_regular,
)
from pmem_advisor.knobs.version import parse_version

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "s": " ", '"': '"', "'": "'", "\\": "\\"}
_VERSIONED = re.compile(r"^(mysqld|mariadb|mariadbd)-(\d+\.\d+)$")
_BASE_GROUPS = {
    "mysql": ("mysqld", "server"),
    "mariadb": ("mysqld", "server", "mariadb", "mariadbd", "client-server", "galera"),
}


def server_groups(flavour: str | None, version: str | None) -> tuple[set[str], bool]:
    """The groups a server reads, and whether versioned groups of any version apply."""
    flavours = [flavour] if flavour else ["mysql", "mariadb"]
    groups = {g for f in flavours for g in _BASE_GROUPS[f]}
    if version:
        xy = ".".join(str(p) for p in parse_version(version)[:2])
        prefixes = ["mysqld"] + (["mariadb", "mariadbd"] if "mariadb" in flavours else [])
        groups |= {f"{p}-{xy}" for p in prefixes}
    return groups, version is None


def _applies(group: str, groups: set[str], any_version: bool, flavour: str | None) -> bool:
    if group in groups:
        return True
    m = _VERSIONED.match(group)
    return bool(m and any_version and (flavour != "mysql" or m.group(1) == "mysqld"))


def known_option_names() -> set[str]:
    """Option names of every MySQL/MariaDB catalog (the curated knobs and the servers' own
    option lists), for skip-/enable- prefixes: a name that is no option of the server (a
    read-only variable such as skip_external_locking) is read as a prefixed option."""
    return {name for f in ("mysql", "mariadb")
            for name in (*knob_names(f), *server_option_names(f))}


def parse_mycnf(path: str, *, flavour: str | None = None, version: str | None = None,
                known: set[str] | None = None) -> ConfigFile:
    """Parse ``path`` and its includes for a server of ``flavour``/``version``. Paths stay
    as given, never made absolute: an include is named as its includer's path joined with
    the include's relative path (knobs/configfile.py), so findings and errors name files the
    way the user named them."""
    refuse_if_not_regular(path)
    result = ConfigFile(format="mycnf", path=path)
    state = _State(flavour, version, known if known is not None else known_option_names())
    _read(path, result, state, depth=0, origin=None)
    return result


def parse_mycnf_text(text: str, name: str = "<text>", *, flavour: str | None = None,
                     version: str | None = None) -> ConfigFile:
    """Parse option-file text without includes (for emitted files and tests)."""
    result = ConfigFile(format="mycnf", path=name)
    state = _State(flavour, version, known_option_names())
    state.allow_include = False
    _parse_lines(text, name, result, state, depth=0)
    return result


class _State:
    def __init__(self, flavour: str | None, version: str | None, known: set[str]) -> None:
        self.flavour = flavour
        self.groups, self.any_version = server_groups(flavour, version)
        self.known = known
        self.allow_include = True
        self.unplaced: set[str] = set()  # groups noted as read by one server only


def _only_for(group: str, state: _State) -> str | None:
    """Which server alone reads ``group`` when the user named none (None: every server, or the
    one named). A config holding [mysqld-8.0] and [mariadb] belongs to two servers."""
    m = _VERSIONED.match(group)
    if m and state.any_version:
        who = "MariaDB" if m.group(1) != "mysqld" else "MySQL or MariaDB"
        return f"a {who} {m.group(2)} server"
    if state.flavour is None and group in set(_BASE_GROUPS["mariadb"]) - set(
            _BASE_GROUPS["mysql"]):
        return "MariaDB"
    return None


def _read(path: str, result: ConfigFile, state: _State, depth: int, origin: str | None) -> None:
    text = read_config_file(path, result, depth, origin, what="an option file")
    _parse_lines(text, path, result, state, depth)


def _parse_lines(text: str, path: str, result: ConfigFile, state: _State, depth: int) -> None:
    group: str | None = None
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip(" \t\r\f\v")
        where = f"{path}:{lineno}"
        if not line or line[0] in "#;":
            continue
        if line[0] == "!":
            _directive(line, path, where, result, state, depth)
            continue
        if line[0] == "[":
            end = line.find("]")
            if end < 0 or line[end + 1:].strip() and line[end + 1:].strip()[0] not in "#;":
                raise InputError(f"{where}: wrong group definition")
            group = line[1:end].strip().lower()
            if not group:
                raise InputError(f"{where}: empty group name")
            continue
        if group is None:
            key = _strip_comment(line).partition("=")[0].strip()[:40]
            raise InputError(f"{where}: option {key!r} before any [group]")
        entry = _option(line, path, lineno, group, state)
        if entry is None:
            continue
        applies = _applies(group, state.groups, state.any_version, state.flavour)
        (result.entries if applies else result.ignored).append(entry)
        if applies and group not in state.unplaced:
            only = _only_for(group, state)
            if only:  # read here as if every server read it: say which one really does
                state.unplaced.add(group)
                result.notes.append(f"[{group}] ({where}) is read by {only} only; without "
                                    "--flavour and --version its options are shown as if "
                                    "every server read them")


def _directive(line: str, path: str, where: str, result: ConfigFile, state: _State,
               depth: int) -> None:
    word, _, arg = line[1:].partition(" ")
    arg = _strip_comment(arg).strip()
    if word not in ("include", "includedir"):
        raise InputError(f"{where}: unknown directive")
    if not state.allow_include:
        raise InputError(f"{where}: !{word} is not allowed here")
    if not arg:
        raise InputError(f"{where}: !{word} needs a path")
    walk = result.walk
    full = walk.resolve(arg, path)
    if word == "include":
        if not os.path.exists(full):
            raise InputError(f"{where}: !include {arg!r}: no such file")
        _read(full, result, state, depth + 1, where)
        return
    if not os.path.isdir(full):
        raise InputError(f"{where}: !includedir {arg!r}: no such directory")
    for file in walk.list_dir(full, ".cnf", where, "!includedir"):
        _read(file, result, state, depth + 1, where)


def _strip_comment(text: str) -> str:
    """Drop a '#' comment that is outside quotes (mysys remove_end_comment)."""
    quote, escape = None, False
    for i, c in enumerate(text):
        if escape:
            escape = False
        elif c == "\\":
            escape = True
        elif c in "'\"":
            quote = None if quote == c else (c if quote is None else quote)
        elif c == "#" and quote is None:
            return text[:i]
    return text


def unescape(value: str) -> str:
    """Optional matching quotes removed, then backslash escapes resolved."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    out, i = [], 0
    while i < len(value):
        c = value[i]
        if c == "\\" and i + 1 < len(value):
            n = value[i + 1]
            out.append(_ESCAPES.get(n, "\\" + n))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def quote_value(text: str) -> str:
    """Text written so that unescape(strip_comment(...)) gives it back exactly."""
    if text and not re.search(r"[\s#;'\"\\]", text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _option(line: str, path: str, lineno: int, group: str, state: _State) -> ConfigEntry | None:
    body = _strip_comment(line)
    name_part, eq, value_part = body.partition("=")
    raw_name = name_part.strip()
    if not raw_name:
        raise InputError(f"{path}:{lineno}: option without a name")
    if re.search(r"\s", raw_name):
        raise InputError(f"{path}:{lineno}: bad option name (white space in it)")
    name = raw_name.lower().replace("-", "_")
    loose = name.startswith("loose_")
    if loose:
        name = name[len("loose_"):]
    value: str | None = unescape(value_part.strip()) if eq else None
    if name not in state.known:
        for prefix, flag in (("skip_", "OFF"), ("disable_", "OFF"), ("enable_", "ON")):
            if name.startswith(prefix) and name[len(prefix):] in state.known:
                if eq:
                    raise InputError(f"{path}:{lineno}: {raw_name} takes no value")
                name, value = name[len(prefix):], flag
                break
    return ConfigEntry(name=name, value=value, file=path, line=lineno, raw_name=raw_name,
                       group=group, loose=loose)
