"""`pmem-advisor recommend`: a config for this machine from the papers' rules, with reasons."""

from __future__ import annotations

import json
import os

import typer
from rich.table import Table

from pmem_advisor.cli.output import EMULATION_NOTE, console, out, print_json
from pmem_advisor.errors import InputError, UsageError
from pmem_advisor.fileio import write_keeping_backup
from pmem_advisor.knobs.units import parse_bytes


def load_profile(profile: str | None, root: str | None, paths: list[str]) -> dict:
    """A profile from a JSON file, from a machine tree (``--root``), or from this machine."""
    if profile and root:
        raise UsageError("give either --profile or --root, not both")
    if profile:
        try:
            with open(profile, encoding="utf-8") as f:
                data = json.load(f)
        except OSError as e:
            raise InputError(f"{profile}: cannot read: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise InputError(f"{profile}:{e.lineno}: not JSON: {e.msg}") from None
        from pmem_advisor.rules.facts import validate_profile

        return validate_profile(data, profile)
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess

    if root is not None and not os.path.isdir(root):
        raise UsageError(f"--root {root}: not a directory")
    return probe(SysAccess(root or "/"), [p for p in paths if p])


def split_engine(engine: str) -> tuple[str, str | None]:
    """'postgres' | 'mysql' | 'mariadb' -> (engine, flavour)."""
    e = engine.lower()
    if e in ("postgres", "postgresql", "pg"):
        return "postgres", "postgresql"
    if e == "mariadb":
        return "mysql", "mariadb"
    if e == "mysql":
        return "mysql", None
    raise UsageError(f"unknown database {engine!r} (use postgres or mysql)")


def installed_version(engine: str, flavour: str | None) -> tuple[str | None, str | None]:
    """The best installed server's (flavour, version), when --version is not given."""
    try:
        from pmem_advisor.instances import discover_servers
    except ImportError:
        return flavour, None
    for b in discover_servers(engine):
        if flavour is None or b.flavour == flavour:
            return b.flavour, str(b.version)
    return flavour, None


def build_recommendation(engine: str, *, profile=None, root=None, version=None, workload="oltp",
                         memory=None, cpus=None, data_dir=None, wal_dir=None, clients=None,
                         allow_unsafe=False):
    from pmem_advisor.rules import build_facts, recommend

    eng, flavour = split_engine(engine)
    if version is None:
        flavour, version = installed_version(eng, flavour)
    prof = load_profile(profile, root, [data_dir, wal_dir])
    facts = build_facts(prof, engine=eng, flavour=flavour, version=version, workload=workload,
                        data_dir=data_dir, wal_dir=wal_dir,
                        memory_bytes=parse_bytes(memory, "--memory") if memory else None, cpus=cpus,
                        clients=clients, allow_unsafe=allow_unsafe, root=root)
    return recommend(facts)


def emit(rec) -> str:
    """The config text through the knobs emitters, every line with its rule and reason."""
    from pmem_advisor.knobs.emit import Header, Setting, emit_config

    f = rec.facts
    notes = [f"{s.rule}: {s.command}  # {s.reason}" for s in rec.os_steps]
    notes += [f"withheld {w.name} = {w.text} ({w.rule}): {w.reason}" for w in rec.withheld]
    if f.emulated:
        notes.insert(0, EMULATION_NOTE)
    fp = (f.profile.get("host") or {}).get("hostname") or "unknown"
    header = Header(fingerprint=str(fp), flavour=f.flavour or "", version=f.version or "",
                    notes=tuple(notes))
    settings = [Setting(s.name, s.value, f"{s.rule} [{', '.join(s.insights)}] {s.reason}"
                        if s.insights else f"{s.rule}: {s.reason}") for s in rec.settings]
    return emit_config(f.engine, settings, header).text


def recommend_cmd(
    engine: str = typer.Argument(..., help="postgres or mysql (mariadb also accepted)."),
    profile: str | None = typer.Option(None, "--profile", help="A probe profile (JSON)."),
    root: str | None = typer.Option(None, "--root", help="Probe a machine tree below DIR."),
    version: str | None = typer.Option(None, "--version", help="Server version (18, 8.0.36)."),
    workload: str = typer.Option("oltp", "--workload", help="oltp, olap, mixed or kv."),
    memory: str | None = typer.Option(None, "--memory", help="RAM for the server, e.g. 24G."),
    cpus: int | None = typer.Option(None, "--cpus", help="CPUs the server may use."),
    data_dir: str | None = typer.Option(None, "--data-dir", help="Data directory."),
    wal_dir: str | None = typer.Option(None, "--wal-dir", help="WAL / redo log directory."),
    clients: int | None = typer.Option(None, "--clients", help="Concurrent clients."),
    allow_unsafe: bool = typer.Option(False, "--allow-unsafe",
                                      help="Also apply durability-risk settings."),
    out_file: str | None = typer.Option(None, "--out", help="Write the config file here."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Recommend a config from the papers' rules, each line with its reason and source."""
    rec = build_recommendation(engine, profile=profile, root=root, version=version,
                               workload=workload, memory=memory, cpus=cpus, data_dir=data_dir,
                               wal_dir=wal_dir, clients=clients, allow_unsafe=allow_unsafe)
    if out_file:
        backup = write_keeping_backup(out_file, emit(rec))
        if backup:
            console.print(f"kept the previous {out_file} as {backup}")
    if rec.emulated:
        console.print(EMULATION_NOTE)
    if json_out:
        print_json(rec.to_json())
        return
    _print_table(rec)
    if out_file:
        console.print(f"wrote {out_file}")


def _print_table(rec) -> None:
    f = rec.facts
    table = Table(title=f"{f.flavour} {f.version or '(newest)'} - {f.workload}")
    for col in ("knob", "value", "default", "why", "source"):
        table.add_column(col, overflow="fold")
    for s in rec.settings:
        value = f"[bold red]{s.text}[/]" if s.unsafe else s.text
        src = s.source + (f" [{', '.join(s.insights)}]" if s.insights else "")
        table.add_row(s.name, value, s.default or "", s.reason, f"{s.rule} {src}")
    out.print(table)
    for w in rec.withheld:
        out.print(f"withheld (needs --allow-unsafe): {w.name} = {w.text}  [{w.rule}] {w.reason}")
    for s in rec.os_steps:
        out.print(f"os step [{s.rule}]: {s.command}\n    why: {s.reason}")
    for x in rec.findings:
        out.print(f"{x.severity}: [{x.rule}] {x.message}" + (f" -> {x.fix}" if x.fix else ""))
    for n in rec.notes:
        out.print(f"note: {n}")


def register(app: typer.Typer) -> None:
    app.command("recommend")(recommend_cmd)
