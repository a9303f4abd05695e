"""`pmem-advisor doctor`: which optional capabilities are installed, and how to get the rest."""

from __future__ import annotations

import typer

from pmem_advisor.capabilities import all_capabilities
from pmem_advisor.cli.output import OutputFormat, print_json, print_table, styled

SCHEMA = "pmem-advisor.doctor/1"


def doctor(
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", metavar="text|tsv|json",
                                     help="text: a table (one row per line when piped); tsv; "
                                     "json."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """List optional capabilities (pip extras, native kernel, libpmem, servers, load
    generators) and the command that installs each missing one."""
    caps = all_capabilities()
    if json_out or fmt is OutputFormat.json:
        print_json({"capabilities": [c.to_dict() for c in caps]}, SCHEMA)
        return
    rows = []
    for c in caps:
        status = styled("yes", "green") if c.available else styled("missing", "yellow")
        rows.append((c.name, status, c.detail, c.how_to_get))  # text: never markup
    print_table(("capability", "status", "detail", "how to get it"), rows,
                title="pmem-advisor capabilities", fmt=fmt)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
