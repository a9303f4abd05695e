"""`pmem-advisor config render|parse|validate`: write, read and server-check config files."""

from __future__ import annotations

import typer
from rich.table import Table

from pmem_advisor.cli.knobs import resolve_engine, resolve_target
from pmem_advisor.cli.output import console, out, print_json
from pmem_advisor.engines.mysql.parse import parse_mycnf
from pmem_advisor.engines.postgres.parse import parse_postgresql_conf
from pmem_advisor.engines.registry import engine_help
from pmem_advisor.errors import EXIT_FINDINGS, InputError, UsageError
from pmem_advisor.fileio import write_keeping_backup
from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.knobs.configfile import ConfigFile, read_head
from pmem_advisor.knobs.emit import Header, Setting, emit_config

config_app = typer.Typer(help="Render, parse and validate server config files.",
                         no_args_is_help=True)


def _engine_of(path: str) -> str:
    """mysql for option files (.cnf/.ini, or a first line that is a [group] or !include)."""
    if path.endswith((".cnf", ".ini")):
        return "mysql"
    try:  # the first 64 KiB of a regular file: a FIFO, device or directory is refused
        head = read_head(path)
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None
    for line in head.splitlines():
        s = line.strip()
        if s and s[0] not in "#;":
            return "mysql" if s[0] in "[!" else "postgres"
    return "postgres"


def read_config(path: str, engine: str | None, flavour: str | None = None,
                version: str | None = None) -> ConfigFile:
    engine = engine or _engine_of(path)
    if engine == "postgres":
        return parse_postgresql_conf(path)
    if engine == "mysql":
        return parse_mycnf(path, flavour=flavour, version=version)
    return _engine_config(path, engine)


def _engine_config(path: str, engine: str) -> ConfigFile:
    """Any other engine's config file, read by its own parser (``Engine.parse_config``)."""
    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.knobs.configfile import ConfigEntry

    eng = get_engine(engine)
    read_head(path)  # a FIFO, device or directory is refused before it is read
    settings = eng.read_config_file(path)
    return ConfigFile(format=eng.config_format, path=path, files=[path],
                      entries=[ConfigEntry(n, v, path, 0) for n, v in settings.items()])


def _unsafe_reason(catalog, name: str, value: str, reason: str, allow_unsafe: bool) -> str:
    """The line's reason; a durability risk is an error, or with --allow-unsafe says UNSAFE."""
    knob = catalog.get(name) if name in catalog else None
    if knob is None or not knob.risky_values:
        return reason  # unknown names and ranges are the emitter's to refuse
    base = knob.parse(value)
    if not knob.is_risky(base):
        return reason
    why = knob.safety_reason or "it risks losing committed data"
    if (knob.default is not None and knob.same(base, knob.default)
            and catalog.engine in ("postgres", "mysql")):
        # the server's own default (MariaDB's sync_binlog=0 matters only with the binary log
        # on, as check's CK001 judges it): rendering it changes nothing, so say it, not refuse.
        # Other engines: a risky default (Tarantool's wal_mode=write) still needs the consent
        console.print(f"note: {name}={value} is the server's default; {why}", markup=False)
        return reason
    if not allow_unsafe:
        raise UsageError(f"--set {name}={value} risks durability ({why}); "
                         f"leave it out, or pass --allow-unsafe if you accept the loss")
    console.print(f"warning: {name}={value} is UNSAFE: {why}", markup=False)
    return f"UNSAFE, durability risk: {why}; {reason}"


@config_app.command("render")
def render(
    engine: str = typer.Argument(..., help=engine_help()),
    sets: list[str] = typer.Option([], "--set", help="NAME=VALUE (repeatable)."),
    flavour: str = typer.Option(None, "--flavour", help="postgresql, mysql or mariadb."),
    version: str = typer.Option(None, "--version", help="Target server version."),
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
    flavour, version = resolve_target(engine, flavour, version)
    engine = resolve_engine(engine, flavour)[0]
    catalog = load_catalog(engine, flavour, version)
    settings = []
    for item in sets:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"--set {item!r}: expected NAME=VALUE")
        name, value = name.strip(), value.strip()
        settings.append(Setting(name, value, _unsafe_reason(catalog, name, value, reason,
                                                          allow_unsafe)))
    header = Header(fingerprint=fingerprint, flavour=catalog.flavour, version=catalog.version)
    emitted = emit_config(engine, settings, header, catalog=catalog, fragment=not full)
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
    version: str = typer.Option(None, "--version", help="my.cnf: server version for groups."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show the effective settings of a config file (includes followed) with file:line."""
    if engine is not None:
        engine, flavour = resolve_engine(engine, flavour)
    config = read_config(file, engine, flavour, version)
    if json_out:
        kind = engine or ("postgres" if config.format == "postgresql" else "mysql")
        print_json(config.to_dict(), "pmem-advisor.config-parse/1", engine=kind)
        return
    table = Table(title=f"{config.path} ({config.format}, {len(config.files)} files)")
    for col in ("name", "value", "where"):
        table.add_column(col, overflow="fold")
    for e in config.effective().values():
        table.add_row(e.name, "(flag)" if e.value is None else e.value,
                      e.where + (f" [{e.group}]" if e.group else ""))
    out.print(table)
    for note in config.notes:
        console.print(f"note: {note}")


@config_app.command("validate")
def validate(
    file: str = typer.Argument(..., help="postgresql.conf or my.cnf (or the engine's own)."),
    engine: str = typer.Argument(..., help=engine_help()),
    flavour: str = typer.Option(None, "--flavour", help="Which server to start."),
    version: str = typer.Option(None, "--version", help="Server version prefix, e.g. 15."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Start the real server on a temporary data directory with FILE and check every value.

    Exit 0 when all are accepted, 1 when any is adjusted or rejected, 2 when FILE is bad."""
    from pmem_advisor.engines.server_validate import check_flavour, validate_config
    from pmem_advisor.instances import pick_server

    engine, flavour = resolve_engine(engine, flavour)
    if engine not in ("postgres", "mysql"):
        return _validate_by_starting(file, engine, flavour, version, json_out)
    binary = pick_server(engine, flavour, version)
    config = read_config(file, engine, binary.flavour, binary.version)
    check_flavour(config, engine, binary.flavour, str(binary.version))
    console.print(f"starting {binary.flavour} {binary.version} with {len(config.effective())} "
                  f"settings from {file} ...")
    report = validate_config(config, engine, binary=binary)
    if json_out:
        print_json(report.to_dict(), "pmem-advisor.config-validate/1", engine=engine,
                   flavour=report.flavour, version=str(report.version))
    else:
        table = Table(title=f"{file} on {report.flavour} {report.version}")
        for col in ("name", "requested", "status", "server value", "where", "detail"):
            table.add_column(col, overflow="fold")
        colour = {"accepted": "green", "adjusted": "yellow", "rejected": "red"}
        for c in report.checks:
            status = f"[{colour.get(c.status, 'white')}]{c.status}[/]"
            table.add_row(c.name, c.requested or "(flag)", status, c.reported or "",
                          f"{c.file}:{c.line}", c.detail)
        out.print(table)
        for p in report.problems:
            console.print(f"[red]problem[/]: {p}")
    if not report.ok:
        raise typer.Exit(EXIT_FINDINGS)


def _validate_by_starting(file: str, engine: str, flavour: str | None, version: str | None,
                          json_out: bool) -> None:
    """Another engine: parse FILE with its parser (values checked against its catalog), then
    start the engine with it (``Engine.validate_by_starting``); a refusal is exit 2 naming the
    setting, a missing binary exit 3 naming the package."""
    import tempfile

    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.engines.server_validate import SettingCheck, ValidationReport

    eng = get_engine(engine)
    binary = eng.find_binary(flavour, version)  # exit 3 naming the package when missing
    config = read_config(file, engine, binary.flavour, binary.version)
    catalog = eng.catalog(binary.flavour, None if binary.version == "unknown" else
                          binary.version)
    for e in config.entries:  # out of range / wrong type: one line naming the setting
        catalog.get(e.name).parse(e.value or "")
    with open(file, encoding="utf-8") as f:
        text = f.read()
    console.print(f"starting {binary.describe()} with {len(config.entries)} settings from "
                  f"{file} ...")
    with tempfile.TemporaryDirectory(prefix="pmem-advisor-validate-") as workdir:
        eng.validate_by_starting(text, workdir, binary=binary)
    report = ValidationReport(engine, binary.flavour, str(binary.version), [
        SettingCheck(e.name, e.value, "accepted", e.value, f"{eng.title} started with it",
                     e.file, e.line) for e in config.entries])
    if json_out:
        print_json(report.to_dict(), "pmem-advisor.config-validate/1", engine=engine,
                   flavour=report.flavour, version=report.version)
    else:
        out.print(f"{file}: {eng.title} {binary.version} started with all "
                  f"{len(config.entries)} settings", markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")
