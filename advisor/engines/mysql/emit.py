"""my.cnf: one [mysqld] group, one reason per line."""

from __future__ import annotations

from pmem_advisor.engines.mysql.parse import quote_value
from pmem_advisor.knobs.catalog import Catalog
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
