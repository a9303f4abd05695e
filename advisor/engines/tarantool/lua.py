"""Tarantool's config format: a Lua init file whose ``box.cfg{...}`` call holds the options.

``emit_box_cfg`` writes one: a header comment, then ``box.cfg{ name = value, -- why }``.
Numbers are bare Lua numbers in Tarantool's own units (bytes, seconds), strings single-quoted
with Lua escapes. Values the catalog classes as durability risks (wal_mode none/write,
force_recovery) are refused unless the caller allows unsafe values (or the setting's reason
carries the UNSAFE mark ``config render --allow-unsafe`` gives), and are then marked UNSAFE;
wal_mode = 'fsync' is written whenever the settings leave it out: Tarantool's own default
'write' does not survive a power loss (see the catalog's safety_reason).

``parse_box_cfg`` reads such a file back (``check --config``): only literal values (numbers,
products of numbers such as ``2 * 1024 * 1024``, strings, booleans); anything computed is
refused with a one-line error naming the option, as is a value of the wrong Lua type (Tarantool
wants a number for memtx_memory, not '1G') or out of range.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.knobs.catalog import Catalog, Knob
from pmem_advisor.knobs.emit import EmittedConfig, Header, Setting, one_line, resolve_settings
from pmem_advisor.knobs.units import render_real
from pmem_advisor.rules.model import human_bytes

NUMERIC = ("int", "size", "real", "duration")
SAFE_WAL_MODE = "fsync"
SAFE_WAL_REASON = ("safe by default: Tarantool's own default 'write' has no fsync and loses "
                   "committed transactions on power loss")
# box.cfg options of Tarantool 2.6 that are not tuning knobs (addresses, logging, replication,
# identity): a file may set them; check reads past them. Anything else Tarantool refuses with
# "unexpected option", and so do we.
NON_TUNING = frozenset("""
listen log log_level log_format log_nonblock pid_file background coredump strip_core
custom_proc_title username work_dir vinyl_dir instance_uuid replicaset_uuid read_only
replication replication_anon replication_timeout replication_connect_timeout
replication_connect_quorum replication_sync_lag replication_sync_timeout
replication_skip_conflict replication_synchro_quorum replication_synchro_timeout
election_mode election_timeout io_collect_interval too_long_threshold snap_io_rate_limit
hot_standby feedback_enabled feedback_host feedback_interval sql_cache_size
wal_dir_rescan_delay vinyl_bloom_fpr vinyl_run_count_per_level vinyl_run_size_ratio
vinyl_timeout vinyl_max_tuple_size rows_per_wal
""".split())


def lua_string(text: str) -> str:
    """A single-quoted Lua string literal (control characters were refused by the catalog)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def lua_value(knob: Knob, value: Any) -> str:
    if knob.type == "bool":
        return "true" if value else "false"
    if knob.type == "real":
        return render_real(float(value))
    if knob.type in NUMERIC:
        return str(int(value))
    return lua_string(knob.render(value))


def _human(knob: Knob, value: Any) -> str:
    if knob.type == "size" and int(value) >= 1024:
        return human_bytes(int(value))
    return ""


def emit_box_cfg(settings: list[Setting], header: Header, catalog: Catalog, *,
                 allow_unsafe: bool = False) -> EmittedConfig:
    """The Lua init file: header comment, then one ``box.cfg{...}`` call."""
    resolved, warnings = resolve_settings(settings, catalog)
    for i, (knob, value, reason) in enumerate(resolved):
        if not knob.is_risky(value):
            continue
        # allowed: by the caller, or marked UNSAFE upstream (config render --allow-unsafe)
        if not (allow_unsafe or "UNSAFE" in reason):
            raise UsageError(f"{knob.name} = {knob.render(value)} is a durability risk "
                             f"({knob.safety_reason}); refused without --allow-unsafe")
        if "UNSAFE" not in reason:
            resolved[i] = (knob, value, f"UNSAFE, durability risk: {reason}")
    names = {k.name for k, _, _ in resolved}
    if "wal_mode" not in names and "wal_mode" in catalog:
        resolved.append((catalog.get("wal_mode"), SAFE_WAL_MODE, SAFE_WAL_REASON))
    lines = [
        f"-- Tarantool init file (box.cfg) written by pmem-advisor {one_line(header.tool_version)}",
        f"-- target: {catalog.title} {one_line(header.version or catalog.version)}",
        f"-- hardware fingerprint: {one_line(header.fingerprint)}",
    ]
    lines += [f"-- note: {one_line(n).removeprefix('note: ')}" for n in header.notes]
    lines += ["-- Each option says why it is set (rule id or tuning trial). Start it with",
              "-- `tarantool <this file>`, or copy the options into your own box.cfg{} call.",
              "box.cfg{"]
    for knob, value, reason in resolved:
        human = _human(knob, value)
        why = (f"{human}: " if human else "") + (one_line(reason) or "requested")
        lines.append(f"    {knob.name} = {lua_value(knob, value)},  -- {why}")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text):
        raise UsageError("internal: the emitted box.cfg holds a control character; refusing it")
    return EmittedConfig(text, warnings, resolved)


# ------------------------------------------------------------------------------ parsing
@dataclass(frozen=True)
class _Tok:
    kind: str  # name|number|string|punct
    text: str
    value: Any
    line: int


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n]+)
  | (?P<comment>--\[(?P<eq>=*)\[.*?\](?P=eq)\]|--[^\n]*)
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")
  | (?P<long>\[(?P<leq>=*)\[.*?\](?P=leq)\])
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>\.\.\.|\.\.|==|~=|<=|>=|[{}()\[\].,;=*+\-/%^#<>:])
""", re.VERBOSE | re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a",
            "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def _tokens(text: str, origin: str) -> list[_Tok]:
    out, pos, line = [], 0, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise UsageError(f"{origin}:{line}: cannot read {text[pos:pos + 20]!r} as Lua")
        kind = m.lastgroup
        chunk = m.group(0)
        if kind == "number":
            num = int(chunk, 16) if chunk[:2].lower() == "0x" else float(chunk)
            if isinstance(num, float) and num.is_integer() and re.fullmatch(r"\d+", chunk):
                num = int(chunk)
            out.append(_Tok("number", chunk, num, line))
        elif kind == "string":
            out.append(_Tok("string", chunk, _unescape(chunk[1:-1]), line))
        elif kind == "long":
            body = m.group(0)[len(m.group("leq")) + 2:-(len(m.group("leq")) + 2)]
            out.append(_Tok("string", chunk, body.removeprefix("\n"), line))
        elif kind in ("name", "punct"):
            out.append(_Tok(kind, chunk, chunk, line))
        line += chunk.count("\n")
        pos = m.end()
    return out


def _calls(toks: list[_Tok]) -> list[int]:
    """Indexes of the '{' that opens each ``box.cfg{`` / ``box.cfg({`` table."""
    found = []
    for i in range(len(toks) - 3):
        if [t.text for t in toks[i:i + 3]] == ["box", ".", "cfg"]:
            j = i + 3
            if toks[j].text == "(":
                j += 1
            if j < len(toks) and toks[j].text == "{":
                found.append(j)
    return found


def _skip_balanced(toks: list[_Tok], i: int) -> int:
    """From an opening '{' or '(' at ``i``: the index after its closing partner."""
    depth = 0
    while i < len(toks):
        if toks[i].text in ("{", "("):
            depth += 1
        elif toks[i].text in ("}", ")"):
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise UsageError("unbalanced braces in the box.cfg table")


def _literal(toks: list[_Tok], i: int, name: str, where: str) -> tuple[Any, int, str]:
    """A literal value at ``i``: (value, next index, lua type); UsageError naming ``name``."""
    sign = 1
    if toks[i].text == "-":
        sign, i = -1, i + 1
    t = toks[i]
    if t.kind == "string":
        return t.value, i + 1, "string"
    if t.kind == "name" and t.text in ("true", "false"):
        return t.text == "true", i + 1, "boolean"
    if t.kind == "name" and t.text == "nil":
        return None, i + 1, "nil"
    if t.kind == "number":
        value, i = sign * t.value, i + 1
        while i + 1 < len(toks) and toks[i].text == "*" and toks[i + 1].kind == "number":
            value, i = value * toks[i + 1].value, i + 2
        if i < len(toks) and toks[i].text not in (",", ";", "}"):
            raise UsageError(f"{where}: {name}: only literal numbers and products of numbers "
                             f"are read, not an expression with {toks[i].text!r}")
        return value, i, "number"
    end = i
    while end < len(toks) and toks[end].text not in (",", ";", "}"):
        end = _skip_balanced(toks, end) if toks[end].text in ("{", "(") else end + 1
    shown = "".join(x.text for x in toks[i:end])[:40]
    return _Computed(shown), end, "computed"


@dataclass(frozen=True)
class _Computed:
    text: str


def parse_box_cfg_values(text: str, origin: str, catalog: Catalog) -> dict[str, Any]:
    """Every catalog option of the file's box.cfg call(s), checked, in Tarantool's units."""
    toks = _tokens(text, origin)
    starts = _calls(toks)
    if not starts:
        raise UsageError(f"{origin}: no box.cfg{{...}} call found (is it a Tarantool init file?)")
    out: dict[str, Any] = {}
    for start in starts:
        i = start + 1
        while i < len(toks) and toks[i].text != "}":
            t = toks[i]
            where = f"{origin}:{t.line}"
            if t.kind != "name" or i + 1 >= len(toks) or toks[i + 1].text != "=":
                raise UsageError(f"{where}: expected `name = value` in box.cfg, got {t.text!r}")
            name = t.text
            value, i, lua_type = _literal(toks, i + 2, name, where)
            if i < len(toks) and toks[i].text in (",", ";"):
                i += 1
            knob = _knob(catalog, name, where)
            if knob is None or lua_type == "nil":
                continue  # a non-tuning option (listen, log, ...) or nil: the default
            if isinstance(value, _Computed):
                raise UsageError(f"{where}: {name}: only literal values are read, not "
                                 f"`{value.text}`")
            out[name] = _checked_value(knob, value, lua_type, where)
    return out


def parse_box_cfg(text: str, origin: str, catalog: Catalog) -> dict[str, str]:
    """The file's options as text the catalog parses (the Engine.parse_config contract)."""
    values = parse_box_cfg_values(text, origin, catalog)
    return {name: _text(catalog.get(name), v) for name, v in values.items()}


def _text(knob: Knob, value: Any) -> str:
    """A value as Lua spells it, strings unquoted."""
    if knob.type == "bool" or knob.type == "real" or knob.type in NUMERIC:
        return lua_value(knob, value)
    return str(value)


def _knob(catalog: Catalog, name: str, where: str) -> Knob | None:
    if name in catalog:
        return catalog.get(name)
    if name in NON_TUNING:
        return None
    try:
        catalog.get(name)
    except UnknownKnobError as e:
        hint = f" ({e.hint})" if getattr(e, "hint", None) else ""
        raise UnknownKnobError(f"{where}: unknown box.cfg option {name}{hint}") from None
    return None


_WANT = {"bool": "boolean", "enum": "string", "path": "string", "string": "string"}


def _checked_value(knob: Knob, value: Any, lua_type: str, where: str) -> Any:
    want = _WANT.get(knob.type, "number")
    if lua_type != want:
        shown = repr(value) if lua_type == "string" else str(value).lower()
        unit = " of bytes" if knob.type == "size" else " of seconds" if knob.unit == "s" else ""
        raise UsageError(f"{where}: {knob.name} = {shown} is a {lua_type}; Tarantool wants a "
                         f"{want}{unit}")
    if want == "number":
        if knob.type != "real" and float(value) != int(value):
            raise UsageError(f"{where}: {knob.name} = {value} is not a whole number")
        value = float(value) if knob.type == "real" else int(value)
        try:
            return knob.coerce(value)
        except UsageError as e:
            raise UsageError(f"{where}: {e.message}") from None
    try:
        return knob.coerce(value)
    except UsageError as e:
        raise UsageError(f"{where}: {e.message if hasattr(e, 'message') else e}") from None
