"""Config text: a ``postgresql.conf`` fragment or a ``my.cnf`` with one reason per line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pmem_advisor.engines import api
from pmem_advisor.errors import AdvisorError


def config_name(engine: str) -> str:
    """The tuned file's name in a ``tune --out`` folder (the engine's YAML's)."""
    return api.get_engine(engine).config_name


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


def render_config(engine: str, lines: list[Line], *, catalog: Any = None,
                  header: list[str] | None = None) -> str:
    """The tuned or trial config through the one emitter (knobs.emit), so it has the same
    quoting, per-line reasons and control-character guard as `recommend` and `config render`;
    ``header`` lines become its notes."""
    from pmem_advisor.knobs.emit import Header, Setting, emit_config

    head = Header(flavour=getattr(catalog, "flavour", "") or "",
                  version=str(getattr(catalog, "version", "") or ""),
                  notes=tuple(header or ()))
    settings = [Setting(line.name, line.value, line.reason) for line in lines]
    return emit_config(engine, settings, head, catalog=catalog).text
