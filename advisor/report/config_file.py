"""Config text: a ``postgresql.conf`` fragment or a ``my.cnf`` with one reason per line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pmem_advisor.errors import AdvisorError

CONFIG_NAMES = {"postgres": "postgresql.tuned.conf", "mysql": "my.tuned.cnf"}


@dataclass
class Line:
    name: str
    value: Any  # base unit
    reason: str = ""


def load_catalog_or_none(engine: str, flavour: str | None, version: str | None) -> Any:
    """The knob catalog, or None when it cannot be loaded (values are then printed as is)."""
    try:
        from pmem_advisor.knobs.catalog import load_catalog

        return load_catalog(engine, flavour, version)
    except (ImportError, AdvisorError, ValueError):
        return None


def render_value(catalog: Any, name: str, value: Any) -> str:
    if catalog is not None and name in catalog:
        return catalog.get(name).render(value)
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def render_config(engine: str, lines: list[Line], *, catalog: Any = None,
                  header: list[str] | None = None) -> str:
    """The config text; each setting carries its reason as a trailing comment line above."""
    out = [f"# {_one_line(h)}" for h in header or []]
    if engine == "mysql":
        out.append("[mysqld]")
    for line in lines:
        text = render_value(catalog, line.name, line.value)
        if line.reason:
            out.append(f"# {_one_line(line.reason)}")
        if engine == "postgres":
            out.append(f"{line.name} = '{text.replace(chr(39), chr(39) * 2)}'")
        else:
            out.append(f"{line.name} = {text}")
    return "\n".join(out) + "\n"
