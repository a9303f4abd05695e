"""`pmem-advisor knobs ENGINE`: list the knob catalog for a flavour and version."""

from __future__ import annotations

import typer

from pmem_advisor.cli.output import OutputFormat, detail, note, print_json, print_table
from pmem_advisor.engines.registry import engine_help
from pmem_advisor.errors import EnvironmentProblem
from pmem_advisor.knobs.catalog import load_catalog

SCHEMA = "pmem-advisor.knobs/1"


def resolve_engine(engine: str, flavour: str | None) -> tuple[str, str | None]:
    """(engine name, flavour) for an engine name or alias ('mariadb' -> mysql, mariadb);
    UsageError for an unknown engine (the list is the YAML files in advisor/engines/*/)."""
    from pmem_advisor.engines.registry import resolve

    eng, picked = resolve(engine)
    return eng.name, flavour or picked


def resolve_target(engine: str, flavour: str | None, version: str | None
                   ) -> tuple[str | None, str | None]:
    """Flavour and version from the options, else from the local server binary (mysql)."""
    engine, flavour = resolve_engine(engine, flavour)
    if engine == "mysql" and flavour is None:
        try:
            from pmem_advisor.instances import pick_server

            binary = pick_server(engine, None, version)
            return binary.flavour, version or binary.version
        except EnvironmentProblem:
            return None, version
    return flavour, version


def _safety(knob) -> str:
    if knob.safety == "durability-risk":
        return "[red]risk[/]: " + ", ".join(knob.render(v) for v in knob.risky_values)
    return knob.safety  # safe, or unknown for a knob only the server's list has


def knobs(
    engine: str = typer.Argument(..., metavar="ENGINE", help=engine_help()),
    flavour: str = typer.Option(None, "--flavour", metavar="FLAVOUR",
                                help="postgresql, mysql or mariadb (or the engine's own)."),
    version: str = typer.Option(None, "--version", "--server-version", metavar="VERSION",
                                help="Server version, e.g. 18, 8.0.36, 10.11."),
    curated: bool = typer.Option(False, "--curated", help="Only the knobs pmem-advisor judges "
                                 "and tunes (safety class, ranges); not every server setting."),
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", metavar="text|tsv|json",
                                     help="text: a table (one row per line when piped); tsv; "
                                     "json."),
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
    if json_out or fmt is OutputFormat.json:
        print_json({"source": catalog.generated_from or "manual",
                    "knobs": [k.to_dict() for k in shown],
                    "absent": sorted(catalog.absent)},
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
    detail(f"server facts: {catalog.generated_from or 'none generated for this version'}; "
           f"curated overlay: knobs/data/{catalog.flavour}.yaml (manual pages)")


def register(app: typer.Typer) -> None:
    app.command("knobs")(knobs)
