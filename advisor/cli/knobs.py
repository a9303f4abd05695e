"""`pmem-advisor knobs ENGINE`: list the knob catalog for a flavour and version."""

from __future__ import annotations

import typer
from rich.text import Text

from pmem_advisor.cli.output import (
    chosen_format,
    detail,
    format_option,
    note,
    print_json,
    print_table,
    styled,
)
from pmem_advisor.engines.registry import engine_help
from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.library.target import resolve_engine, resolve_target

SCHEMA = "pmem-advisor.knobs/1"


def _safety(knob) -> str:
    if knob.safety == "durability-risk":
        return Text.assemble(styled("risk", "red"),
                             ": " + ", ".join(knob.render(v) for v in knob.risky_values))
    return knob.safety  # safe, or unknown for a knob only the server's list has


def knobs(
    engine: str = typer.Argument(..., metavar="ENGINE", help=engine_help()),
    flavour: str = typer.Option(None, "--flavour", metavar="FLAVOUR",
                                help="postgresql, mysql or mariadb (or the engine's own)."),
    version: str = typer.Option(None, "--version", "--server-version", metavar="VERSION",
                                help="Server version, e.g. 18, 8.0.36, 10.11."),
    curated: bool = typer.Option(False, "--curated", help="Only the knobs pmem-advisor judges "
                                 "and tunes (safety class, ranges); not every server setting."),
    fmt: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """List the knobs pmem-advisor knows: type, default, range, scope and safety.

    Curated knobs carry a safety class and tuning ranges; the others come from the server's
    own list of settings (pg_settings, SYSTEM_VARIABLES) and are accepted in configs but not
    tuned (safety "unknown").
    """
    flavour, version = resolve_target(engine, flavour, version)
    engine = resolve_engine(engine, flavour)[0]
    catalog = load_catalog(engine, flavour, version)
    shown = list(catalog) if curated else catalog.all()
    if chosen_format(fmt, json_out) == "json":
        print_json({"source": catalog.generated_from or "manual",
                    "knobs": [k.to_dict() for k in shown],
                    "absent": sorted(catalog.absent),
                    "removed": {n: {k: v for k, v in e.items() if k != "name"}
                                for n, e in sorted(catalog.removed.items())},
                    "ignored": sorted(catalog.ignored), "complete": catalog.complete},
                   SCHEMA, engine=engine, flavour=catalog.flavour, version=catalog.version)
        return
    rows = [(k.name, k.type + (f" ({k.unit})" if k.unit else ""),
             "" if k.default is None else k.render(k.default), k.describe_range(), k.scope,
             _safety(k), "yes" if k.curated else "no") for k in shown]
    if curated or not catalog.generated_from:
        title = f"{catalog.title} {catalog.version}: {len(shown)} curated knobs"
    else:
        title = (f"{catalog.title} {catalog.version}: {len(shown)} knobs ({len(catalog)} "
                 f"curated; the others from {catalog.generated_from})")
    print_table(("name", "type", "default", "allowed", "scope", "safety", "curated"), rows,
                title=title, fmt=fmt)
    if catalog.absent:
        note(f"not in {catalog.title} {catalog.version}: {', '.join(catalog.absent)}")
    if catalog.removed:
        note(f"removed before {catalog.title} {catalog.version} (check fails them): "
             + ", ".join(f"{n} ({e['until']}" + (f", use {e['replacement']})" if
                                                   e.get("replacement") else ")")
                         for n, e in sorted(catalog.removed.items())))
    if catalog.ignored:
        note(f"accepted from old config files and ignored: {', '.join(sorted(catalog.ignored))}")
    detail(f"server facts: {catalog.generated_from or 'none generated for this version'}; "
           f"curated overlay: knobs/data/{catalog.flavour}.yaml (manual pages)")


def register(app: typer.Typer) -> None:
    app.command("knobs")(knobs)
