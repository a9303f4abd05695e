"""my.cnf: one [mysqld] group, one reason per line."""

from __future__ import annotations

from typing import Any

from pmem_advisor.engines.mysql.parse import quote_value
from pmem_advisor.knobs.catalog import Catalog, Knob
from pmem_advisor.knobs.emit import (
    EmittedConfig,
    Header,
    Setting,
    Statement,
    catalog_for,
    checked,
    header_lines,
    one_line,
    resolve_settings,
)


def emit_mycnf(settings: list[Setting], header: Header = Header(), *,
               catalog: Catalog | None = None) -> EmittedConfig:
    """my.cnf text with one [mysqld] group."""
    catalog = catalog_for("mysql", header, catalog)
    resolved, warnings = resolve_settings(settings, catalog)
    lines = header_lines(header, catalog, "my.cnf") + ["", "[mysqld]"]
    for knob, value, reason in resolved:
        if knob.scope == "reinit":
            warnings.append(f"{knob.name} only takes effect when the data directory is created")
        why = one_line(reason) or "requested"
        if not knob.config_file:  # read-only or internal: the server would refuse to start
            warnings.append(f"{knob.name} is not a config-file setting: left out")
            lines.append(f"# {knob.name} = {one_line(knob.render(value))} cannot be set in "
                         f"my.cnf  # {why}")
            continue
        lines.append(f"{knob.name} = {quote_value(knob.render(value))}  # {why}")
    return EmittedConfig(checked("\n".join(lines) + "\n"), warnings, resolved)


def sql_literal(knob: Knob, value: Any) -> str:
    """MySQL/MariaDB take bare numbers in base units (bytes), ON/OFF for switches and quoted
    text for the rest (no '128M' in SET)."""
    if knob.type == "bool":
        return "ON" if bool(value) else "OFF"
    if knob.type in ("int", "size", "duration"):
        return str(int(value))
    if knob.type == "real":
        return knob.render(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"


def sql_statement(knob: Knob, value: Any, flavour: str, persisted: bool) -> Statement:
    """SET PERSIST / SET PERSIST_ONLY where the server persists variables (MySQL 8,
    ``persisted``); SET GLOBAL plus the my.cnf line elsewhere (MariaDB: SET GLOBAL is lost at
    restart, and a read-only variable only the option file sets)."""
    if knob.scope in ("reinit", "compile") or not knob.config_file:
        how = one_line(knob.init_option or "set when the data directory is created")
        return Statement(knob.name, None, f"not settable by SQL: {how}", True)
    restart = knob.scope == "restart"
    lit = sql_literal(knob, value)
    if persisted:
        if restart:
            return Statement(knob.name, f"SET PERSIST_ONLY {knob.name} = {lit};",
                             "restart applies it (persisted in mysqld-auto.cnf)", True)
        return Statement(knob.name, f"SET PERSIST {knob.name} = {lit};",
                         "applies now, kept across restarts", False)
    line = f"{knob.name} = {quote_value(knob.render(value))}"
    if restart:  # read-only while the server runs: only the option file sets it
        return Statement(knob.name, None, "restart-only: the my.cnf line below, then restart",
                         True, line)
    return Statement(knob.name, f"SET GLOBAL {knob.name} = {lit};",
                     "applies now; lost at restart unless the my.cnf line below is kept",
                     False, line)


def sql_epilogue(statements: list[Statement]) -> list[str]:
    """The my.cnf lines SET GLOBAL needs to survive a restart, as comments to copy."""
    cnf = [st for st in statements if st.config_line]
    if not cnf:
        return []
    lines = ["", "-- my.cnf: SET GLOBAL does not survive a restart; put these lines in",
             "-- [mysqld] of an option file the server reads (restart-only ones take effect at "
             "the next restart):", "-- [mysqld]"]
    lines += [f"-- {st.config_line}" + ("  # restart-only" if st.restart else "") for st in cnf]
    restart = [st.name for st in cnf if st.restart]
    if restart:
        lines.append(f"-- then restart the server for: {', '.join(restart)}")
    return lines
