"""`pmem-advisor doctor`: which optional capabilities are installed, and how to get the rest."""

from __future__ import annotations

import typer
from rich.table import Table

from pmem_advisor.capabilities import all_capabilities
from pmem_advisor.cli.output import out, print_json


def doctor(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List optional capabilities (native kernel, libpmem, servers, load generators)."""
    caps = all_capabilities()
    if json_out:
        print_json([c.to_dict() for c in caps])
        return
    table = Table(title="pmem-advisor capabilities")
    for col in ("capability", "status", "detail", "how to get it"):
        table.add_column(col)
    for c in caps:
        status = "[green]yes[/]" if c.available else "[yellow]missing[/]"
        table.add_row(c.name, status, c.detail, "" if c.available else c.how_to_get)
    out.print(table)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
