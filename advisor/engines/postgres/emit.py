"""postgresql.conf: an include-able fragment, or a complete file with every other knob's
default as a comment; one reason per line."""

from __future__ import annotations

from typing import Any

from pmem_advisor.engines.postgres.parse import quote
from pmem_advisor.knobs.catalog import Catalog, Knob
from pmem_advisor.knobs.emit import (
    EmittedConfig,
    Header,
    Setting,
    catalog_for,
    checked,
    header_lines,
    one_line,
    resolve_settings,
)


def pg_value_text(knob: Knob, value: Any) -> str:
    """Numbers and booleans bare (units included), everything else single-quoted."""
    text = knob.render(value)
    if knob.type in ("bool", "int", "size", "duration", "real"):
        return text
    return quote(text)


def emit_postgresql_conf(settings: list[Setting], header: Header = Header(), *,
                         catalog: Catalog | None = None, fragment: bool = True) -> EmittedConfig:
    """postgresql.conf text: an include-able fragment, or a complete file with the defaults
    of every other catalog knob as comments."""
    catalog = catalog_for("postgres", header, catalog)
    resolved, warnings = resolve_settings(settings, catalog)
    kind = "postgresql.conf fragment (include it last)" if fragment else "postgresql.conf"
    lines = header_lines(header, catalog, kind) + [""]
    for knob, value, reason in resolved:
        why = one_line(reason) or "requested"
        if not knob.config_file:
            warnings.append(f"{knob.name} is not a config-file setting: use {knob.init_option}")
            lines.append(f"# {knob.name} = {knob.render(value)} needs {one_line(knob.init_option)}"
                         f"  # {why}")
            continue
        lines.append(f"{knob.name} = {pg_value_text(knob, value)}  # {why}")
    if not fragment:
        chosen = {k.name for k, _, _ in resolved}
        lines += ["", "# Other knobs pmem-advisor knows, at their defaults:"]
        for knob in catalog:
            if knob.name not in chosen and knob.config_file:
                lines.append(f"#{knob.name} = {pg_value_text(knob, knob.default)}"
                             f"  # default ({knob.scope})")
    return EmittedConfig(checked("\n".join(lines) + "\n"), warnings, resolved)
