"""`pmem-advisor knobs {postgres|mysql}`: list the knob catalog for a flavour and version."""

from __future__ import annotations

import typer
from rich.table import Table

from pmem_advisor.cli.output import console, out, print_json
from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.knobs.catalog import ENGINES, load_catalog


def resolve_target(engine: str, flavour: str | None, version: str | None
                   ) -> tuple[str | None, str | None]:
    """Flavour and version from the options, else from the local server binary (mysql)."""
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r} (use postgres or mysql)")
    if engine == "mysql" and flavour is None:
        try:
            from pmem_advisor.instances import pick_server

            binary = pick_server(engine, None, version)
            return binary.flavour, version or binary.version
        except EnvironmentProblem:
            return None, version
    return flavour, version


def knobs(
    engine: str = typer.Argument(..., help="postgres or mysql (MySQL and MariaDB)."),
    flavour: str = typer.Option(None, "--flavour", help="postgresql, mysql or mariadb."),
    version: str = typer.Option(None, "--version", help="Server version, e.g. 18, 8.0.36, 10.11."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the knobs pmem-advisor knows: type, default, range, scope and safety."""
    flavour, version = resolve_target(engine, flavour, version)
    catalog = load_catalog(engine, flavour, version)
    if json_out:
        print_json([k.to_dict() for k in catalog])
        return
    table = Table(title=f"{catalog.title} {catalog.version}: {len(catalog)} knobs")
    for col in ("name", "type", "default", "allowed", "scope", "safety"):
        table.add_column(col, overflow="fold")
    for k in catalog:
        safety = "safe" if k.safety == "safe" else (
            "[red]risk[/]: " + ", ".join(k.render(v) for v in k.risky_values))
        table.add_row(k.name, k.type + (f" ({k.unit})" if k.unit else ""), k.render(k.default),
                      k.describe_range(), k.scope, safety)
    out.print(table)
    if catalog.absent:
        console.print(f"not in {catalog.title} {catalog.version}: {', '.join(catalog.absent)}")


def register(app: typer.Typer) -> None:
    app.command("knobs")(knobs)
