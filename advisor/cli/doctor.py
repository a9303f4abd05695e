"""`pmem-advisor doctor`: which optional capabilities are installed, and how to get the rest."""

from __future__ import annotations

import typer

from pmem_advisor.capabilities import all_capabilities
from pmem_advisor.cli.output import (
    chosen_format,
    escape,
    format_option,
    print_json,
    print_table,
)

SCHEMA = "pmem-advisor.doctor/1"


def doctor(
    fmt: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """List optional capabilities (pip extras, native kernel, libpmem, servers, load
    generators) and the command that installs each missing one."""
    caps = all_capabilities()
    if chosen_format(fmt, json_out) == "json":
        print_json({"capabilities": [c.to_dict() for c in caps]}, SCHEMA)
        return
    rows = []
    for c in caps:
        status = "[green]yes[/]" if c.available else "[yellow]missing[/]"
        # escape: "pip install 'pmem-advisor[tune]'" is not rich markup
        rows.append((escape(c.name), status, escape(c.detail), escape(c.how_to_get)))
    print_table(("capability", "status", "detail", "how to get it"), rows,
                title="pmem-advisor capabilities", fmt=fmt)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
