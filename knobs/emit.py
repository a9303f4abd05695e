"""Emitters: postgresql.conf (complete file or include-able fragment) and my.cnf [mysqld].

Every setting line says why it is set; the header names the hardware fingerprint, flavour,
version and tool version. Values are checked against the catalog and quoted so that no value
can end a line or start another directive (control characters are refused).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pmem_advisor import __version__
from pmem_advisor.engines import api
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.catalog import Catalog, Knob, KnobNotInVersion, catalog_path, load_catalog


@dataclass(frozen=True)
class Setting:
    name: str
    value: Any  # text ("128MB") or a base-unit value (16384)
    reason: str = ""  # rule id, trial number, "user" ...


@dataclass(frozen=True)
class Header:
    fingerprint: str = "unknown"
    flavour: str = ""
    version: str = ""
    tool_version: str = __version__
    notes: tuple[str, ...] = ()
    # The recommendation's OS steps and findings (rules.engine Step / rules.model Finding),
    # for formats that carry them as comments (advice-only snippets); others ignore them.
    steps: tuple = ()
    findings: tuple = ()


@dataclass
class EmittedConfig:
    text: str
    warnings: list[str] = field(default_factory=list)
    settings: list[tuple[Knob, Any, str]] = field(default_factory=list)

    def __str__(self) -> str:
        return self.text


def one_line(text: str) -> str:
    """Comment text on one line: control characters become spaces."""
    return " ".join("".join(c if c.isprintable() else " " for c in str(text)).split())


def resolve_settings(settings: list[Setting], catalog: Catalog
                     ) -> tuple[list[tuple[Knob, Any, str]], list[str]]:
    """Check every setting against the catalog; knobs absent in the version are dropped."""
    chosen: dict[str, tuple[Knob, Any, str]] = {}
    warnings: list[str] = []
    for s in settings:
        try:
            knob = catalog.get(s.name)
        except KnobNotInVersion as e:
            warnings.append(f"dropped {e.knob_name}: {e.message}")
            continue
        value = knob.coerce(s.value)
        if knob.type == "path" and not value:
            raise UsageError(f"{knob.name}: an empty path is not the default on every server; "
                             "leave the setting out to keep the default")
        if knob.name in chosen:
            warnings.append(f"{knob.name} set twice; the last value wins")
        chosen[knob.name] = (knob, value, s.reason)
    return list(chosen.values()), warnings


def _plain_header(header: Header, catalog: Catalog, kind: str) -> list[str]:
    lines = [
        f"# {kind} written by pmem-advisor {one_line(header.tool_version)}",
        f"# target: {catalog.title} {one_line(header.version or catalog.version)}",
        f"# hardware fingerprint: {one_line(header.fingerprint)}",
    ]
    lines += [f"# note: {one_line(n)}" for n in header.notes]
    lines.append("# Each line says why it is set (rule id or tuning trial).")
    return lines


def catalog_for(engine: str | api.Engine, header: Header, catalog: Catalog | None) -> Catalog:
    """``catalog``, else the engine's catalog for the header's flavour and version."""
    if catalog is not None:
        return catalog
    if isinstance(engine, api.Engine):
        return engine.catalog(header.flavour or None, header.version or None)
    return load_catalog(engine, header.flavour or None, header.version or None)


# C0 controls but tab, DEL, C1 controls and what str.splitlines() also breaks lines at.
_LINE_BREAKING = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def checked(text: str) -> str:
    """The last guard before a config reaches a file: one directive per line, no control
    character anywhere (a newline in a path or note would inject a setting)."""
    for n, line in enumerate(text.split("\n"), 1):
        m = _LINE_BREAKING.search(line)
        if m:
            bad = m.group(0)
            raise UsageError(f"internal: line {n} of the emitted config holds control "
                             f"character {bad!r}; refusing to write it")
    return text


def emit_config(engine: str | api.Engine, settings: list[Setting], header: Header = Header(),
                *, catalog: Catalog | None = None, fragment: bool = True) -> EmittedConfig:
    """The config in ``engine``'s format (each engine's ``Engine.emit``); ``engine``: the
    engine (or its name, looked up)."""
    eng = api.engine_of(engine)
    flavour = eng.resolve_flavour(header.flavour or None, header.version or None)
    if catalog is None and catalog_path(flavour) is not None:  # advice-only: may have none
        catalog = eng.catalog(flavour, header.version or None)
    emitted = eng.emit(settings, header, catalog=catalog, fragment=fragment)
    emitted.text = checked(emitted.text)  # the last guard holds for every engine's format
    return emitted


def header_lines(header: Header, catalog: Catalog, kind: str, comment: str = "#") -> list[str]:
    """The header every emitted config starts with (tool version, target, hardware
    fingerprint, notes), as comment lines of the engine's format (``--`` for SQL and Lua)."""
    return [f"{comment}{line[1:]}" for line in _plain_header(header, catalog, kind)]


# ---------------------------------------------------------------- SQL statements
@dataclass(frozen=True)
class Statement:
    """How one setting is applied from a client (``Engine.sql_statement``): the statement
    (None when SQL cannot set it) and what makes it take effect, from the catalog's scope."""

    name: str
    sql: str | None
    applies: str  # the line's comment: "reload applies it", "restart applies it", ...
    restart: bool
    config_line: str | None = None  # the config-file line it also needs (MariaDB my.cnf)


def emit_sql(engine: str | api.Engine, settings: list[Setting], header: Header = Header(), *,
             catalog: Catalog | None = None) -> EmittedConfig:
    """SQL a DBA pipes into the server's client: one statement per setting (the engine's
    ``sql_statement``), each with a comment saying what applies it, then the engine's
    closing lines (``sql_epilogue``: PostgreSQL's reload, MariaDB's my.cnf lines). An engine
    without SQL settings is a one-line UsageError."""
    eng = api.engine_of(engine)
    if not eng.takes_sql:
        raise eng.no_sql()
    catalog = catalog_for(eng, header, catalog)
    resolved, warnings = resolve_settings(settings, catalog)
    version = header.version or catalog.version
    statements = [(eng.sql_statement(knob, value, catalog.flavour, version), reason)
                  for knob, value, reason in resolved]
    lines = header_lines(header, catalog, "SQL", comment="--") + [""]
    for st, reason in statements:
        why = one_line(reason) or "requested"
        lines.append(f"-- {st.name}: {st.applies}  -- {why}" if st.sql is None
                     else f"{st.sql}  -- {st.applies}; {why}")
    lines += eng.sql_epilogue([st for st, _ in statements])
    return EmittedConfig(checked("\n".join(lines) + "\n"), warnings, resolved)
