"""`pmem-advisor recommend`: a config for this machine from the papers' rules, with reasons.

Parses, calls ``library.recommend.build_recommendation`` and renders (table, tsv, conf, sql,
json)."""

from __future__ import annotations

import typer
from rich.text import Text

from pmem_advisor.cli.output import (
    EMULATION_NOTE,
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
from pmem_advisor.library.recommend import build_recommendation, emit, write_config

FORMATS = ("table", "tsv", "conf", "sql", "json")


def recommend_cmd(
    engine: str = typer.Argument(..., help=engine_help()),
    profile: str | None = typer.Option(None, "--profile", help="A probe profile (JSON)."),
    root: str | None = typer.Option(None, "--root", help="Probe a machine tree below DIR, "
                                    "or a snapshot .tar.gz (probe --save)."),
    version: str | None = typer.Option(None, "--version", "--server-version",
                                       help="Server version (18, 8.0.36)."),
    workload: str = typer.Option("oltp", "--workload", help="oltp, olap, mixed or kv."),
    memory: str | None = typer.Option(None, "--memory", help="RAM of the target host for the "
                                      "server, e.g. 64G (any host, not only this one)."),
    cpus: int | None = typer.Option(None, "--cpus", help="CPUs of the target host the server "
                                    "may use (any host, not only this one)."),
    data_dir: str | None = typer.Option(None, "--data-dir", help="Data directory."),
    wal_dir: str | None = typer.Option(None, "--wal-dir", help="WAL / redo log directory."),
    clients: int | None = typer.Option(None, "--clients", help="Concurrent clients."),
    medium: str | None = typer.Option(None, "--medium",
                                      help="Medium of the target: CLASS for the data "
                                           "directory (with or without --data-dir), or "
                                           "PATH=CLASS[,PATH=CLASS]; classes pmem, cxl, nvme, "
                                           "ssd, hdd, tmpfs."),
    allow_unsafe: bool = typer.Option(False, "--allow-unsafe",
                                      help="Also apply durability-risk settings."),
    interleave_cpuless: bool = typer.Option(
        False, "--interleave-cpuless",
        help="When interleaving memory, include CPU-less nodes (CXL, kmem PMEM) too."),
    out_file: str | None = typer.Option(None, "--out", help="Write the config file here."),
    fmt: str = format_option(FORMATS, help="table: knob, value, default, why, source (one "
                             "row per line when piped); tsv; conf: the config file as --out "
                             "writes it; sql: ALTER SYSTEM (PostgreSQL), SET PERSIST (MySQL 8) "
                             "or SET GLOBAL and my.cnf lines (MariaDB), each saying whether a "
                             "reload or a restart applies it; json."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """Recommend a config from the papers' rules, each line with its reason and source."""
    rec = build_recommendation(engine, profile=profile, root=root, version=version,
                               workload=workload, memory=memory, cpus=cpus, data_dir=data_dir,
                               wal_dir=wal_dir, clients=clients, allow_unsafe=allow_unsafe,
                               medium=medium, interleave_cpuless=interleave_cpuless)
    if out_file:
        backup = write_config(rec, out_file)
        if backup:
            console.print(f"kept the previous {out_file} as {backup}")
    if rec.emulated:
        console.print(EMULATION_NOTE)
    fmt = chosen_format(fmt, json_out)
    if fmt == "json":
        print_json(rec.to_json(), "pmem-advisor.recommend/1")
        return
    if fmt in ("conf", "sql"):
        out.file.write(emit(rec, fmt))
        out.file.flush()
        for n in rec.notes:
            note(f"note: {n}")
        return
    _print_table(rec, fmt)
    if out_file:
        console.print(f"wrote {out_file}")


def _print_table(rec, fmt: str = "table") -> None:
    """The settings as a table on stdout (one row per line when piped, so grep finds a knob),
    then withheld values, the worst case, OS steps and findings; notes go to stderr."""
    f = rec.facts
    # tsv is rows only (a program reads it); the lines below the table then go to stderr
    extra = out if fmt == "table" else console
    rows = []
    for s in rec.settings:
        value = styled(s.text, "bold red") if s.unsafe else s.text
        src = s.source + (f" [{', '.join(s.insights)}]" if s.insights else "")
        rows.append((s.name, value, s.default or "", s.reason, f"{s.rule} {src}"))
    if rows or f.engine in ("postgres", "mysql"):
        print_table(("knob", "value", "default", "why", "source"), rows,
                    title=f"{f.flavour} {f.version or '(newest)'} - {f.workload}", fmt=fmt)
    else:  # an advice-only engine: the findings and OS steps below are the advice
        target = " ".join(x for x in (f.flavour, f.version) if x)
        extra.print(f"{target}: no settings to size here; the findings and OS steps "
                  "below are the advice", soft_wrap=True)
    for w in rec.withheld:
        extra.print(f"withheld (needs --allow-unsafe): {w.name} = {w.text}  [{w.rule}] "
                  f"{w.reason}", soft_wrap=True)
    if rec.memory_line():
        extra.print(f"memory: {rec.memory_line()}", soft_wrap=True)
    for s in rec.os_steps:
        mark = styled("DESTRUCTIVE ", "bold red") if s.destructive else ""
        extra.print(Text.assemble(f"os step [{s.rule}]: ", mark,
                                f"{s.command}\n    why: {s.reason}"), soft_wrap=True)
    for x in rec.findings:
        extra.print(f"{x.severity}: [{x.rule}] {x.message}" + (f" -> {x.fix}" if x.fix else ""),
                  soft_wrap=True)
    for n in rec.notes:
        note(f"note: {n}")


def register(app: typer.Typer) -> None:
    app.command("recommend")(recommend_cmd)
