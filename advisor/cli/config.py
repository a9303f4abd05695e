"""`pmem-advisor config render|parse|validate`: write, read and server-check config files.

Parses, calls ``library.config`` (render_config, read_config, validate_config_file) and
renders."""

from __future__ import annotations

import typer
from rich.text import Text

from pmem_advisor.cli.output import (
    chosen_format,
    console,
    format_option,
    note,
    out,
    print_json,
    print_table,
    styled,
)
from pmem_advisor.engines.registry import engine_help
from pmem_advisor.errors import EXIT_FINDINGS
from pmem_advisor.fileio import write_keeping_backup
from pmem_advisor.library.config import parse_config, render_config, validate_config_file

config_app = typer.Typer(help="Render, parse and validate server config files.",
                         no_args_is_help=True)


@config_app.command("render")
def render(
    engine: str = typer.Argument(..., help=engine_help()),
    sets: list[str] = typer.Option([], "--set", help="NAME=VALUE (repeatable)."),
    flavour: str = typer.Option(None, "--flavour", help="postgresql, mysql or mariadb."),
    version: str = typer.Option(None, "--version", "--server-version",
                                help="Target server version."),
    out_file: str = typer.Option(None, "--out", help="Write here (default: stdout)."),
    full: bool = typer.Option(False, "--full", help="postgresql.conf: a complete file."),
    reason: str = typer.Option("requested on the command line", "--reason",
                               help="Why the values are set (goes in each line's comment)."),
    fingerprint: str = typer.Option("unknown", "--fingerprint", help="Hardware fingerprint."),
    allow_unsafe: bool = typer.Option(False, "--allow-unsafe",
                                      help="Allow values that risk durability (marked UNSAFE)."),
) -> None:
    """Write a config file (postgresql.conf or my.cnf) with the given settings.

    A value the catalog classes as a durability risk (fsync=off, ...) is refused unless
    --allow-unsafe: what we write must pass our own `check`."""
    emitted = render_config(engine, sets, flavour=flavour, version=version, full=full,
                            reason=reason, fingerprint=fingerprint, allow_unsafe=allow_unsafe,
                            say=lambda line: console.print(line, markup=False))
    for w in emitted.warnings:
        console.print(f"warning: {w}")
    if out_file:
        backup = write_keeping_backup(out_file, emitted.text)
        console.print(f"wrote {out_file} ({len(emitted.settings)} settings)"
                      + (f"; the previous file is kept as {backup}" if backup else ""))
    else:
        out.print(emitted.text, end="", markup=False, highlight=False)


@config_app.command("parse")
def parse(
    file: str = typer.Argument(..., help="postgresql.conf or my.cnf."),
    engine: str = typer.Option(None, "--engine", help="postgres or mysql (default: guess), "
                               "or another engine: " + engine_help()),
    flavour: str = typer.Option(None, "--flavour", help="my.cnf: which server's groups."),
    version: str = typer.Option(None, "--version", "--server-version",
                                help="my.cnf: server version for groups."),
    fmt: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """Show the effective settings of a config file (includes followed) with file:line."""
    config, kind = parse_config(file, engine, flavour, version)
    if chosen_format(fmt, json_out) == "json":
        print_json(config.to_dict(), "pmem-advisor.config-parse/1", engine=kind)
        return
    rows = [(e.name, "(flag)" if e.value is None else e.value,
             e.where + (f" [{e.group}]" if e.group else ""))
            for e in config.effective().values()]
    print_table(("name", "value", "where"), rows,
                title=f"{config.path} ({config.format}, {len(config.files)} files)", fmt=fmt)
    for line in config.notes:
        note(f"note: {line}")


@config_app.command("validate")
def validate(
    file: str = typer.Argument(..., help="postgresql.conf or my.cnf (or the engine's own)."),
    engine: str = typer.Argument(..., help=engine_help()),
    flavour: str = typer.Option(None, "--flavour", help="Which server to start."),
    version: str = typer.Option(None, "--version", "--server-version",
                                help="Server version prefix, e.g. 15."),
    fmt: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """Start the real server on a temporary data directory with FILE and check every value.

    Exit 0 when all are accepted, 1 when any is adjusted or rejected, 2 when FILE is bad."""
    fmt = chosen_format(fmt, json_out)
    checked = validate_config_file(file, engine, flavour=flavour, version=version,
                                   say=console.print)
    if checked.started is not None and fmt == "table":  # every value was taken: one sentence
        out.print(checked.started, markup=False, highlight=False)
    else:
        _print_report(checked.report, file, fmt)
    if not checked.report.ok:
        raise typer.Exit(EXIT_FINDINGS)


def _print_report(report, file: str, fmt: str) -> None:
    """One row per setting: what was asked, what the server took (with its unit), why."""
    if fmt == "json":
        print_json(report.to_dict(), "pmem-advisor.config-validate/1", engine=report.engine,
                   flavour=report.flavour, version=str(report.version))
        return
    colour = {"accepted": "green", "adjusted": "yellow", "rejected": "red"}
    rows = [(c.name, c.requested or "(flag)", styled(c.status, colour.get(c.status, "white")),
             c.reported_text or c.reported or "", f"{c.file}:{c.line}",
             c.detail) for c in report.checks]
    print_table(("name", "requested", "status", "server value", "where", "detail"), rows,
                title=f"{file} on {report.flavour} {report.version}", fmt=fmt)
    for p in report.problems:
        console.print(Text.assemble(styled("problem", "red"), f": {p}"))


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")
