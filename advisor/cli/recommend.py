"""`pmem-advisor recommend`: a config for this machine from the papers' rules, with reasons."""

from __future__ import annotations

import json
import os

import typer
from rich.markup import escape

from pmem_advisor.cli.output import (
    EMULATION_NOTE,
    console,
    note,
    out,
    print_json,
    print_table,
)
from pmem_advisor.engines.registry import engine_help
from pmem_advisor.errors import InputError, UsageError
from pmem_advisor.fileio import write_keeping_backup
from pmem_advisor.knobs.units import parse_bytes


def load_profile(profile: str | None, root: str | None, paths: list[str]) -> dict:
    """A profile from a JSON file, from a machine tree (``--root``), or from this machine."""
    if profile and root:
        raise UsageError("give either --profile or --root, not both")
    if profile:
        try:
            with open(profile, "rb") as f:
                raw = f.read(PROFILE_CAP + 1)
        except OSError as e:
            raise InputError(f"{profile}: cannot read: {e.strerror}") from None
        if len(raw) > PROFILE_CAP:
            raise InputError(f"{profile}: larger than {PROFILE_CAP >> 20} MiB: not a probe profile")
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise InputError(f"{profile}: not text (binary data): not a probe profile") from None
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
    """An engine name or alias -> (engine, flavour it picks): 'pg' -> ('postgres',
    'postgresql'), 'mariadb' -> ('mysql', 'mariadb'), 'mysql' -> ('mysql', None). The names
    are data (advisor/engines/*/<name>.yaml); UsageError for an unknown one."""
    from pmem_advisor.engines.registry import resolve

    eng, flavour = resolve(engine)
    return eng.name, flavour


def installed_version(engine: str, flavour: str | None) -> tuple[str | None, str | None]:
    """The best installed server's (flavour, version), when --version is not given."""
    from pmem_advisor.engines.registry import get_engine

    return get_engine(engine).installed_version(flavour)


MIB = 1 << 20
PROFILE_CAP = 64 << 20  # a probe profile is kilobytes; anything this big is the wrong file
MEMTOTAL_SLACK = 1.05


def parse_memory(text: str) -> int:
    """--memory: a size with a unit; a bare number below 1 MiB is surely missing its unit."""
    n = parse_bytes(text, "--memory")
    if str(text).strip().isdigit() and n < MIB:
        raise UsageError(f"--memory {text}: a bare number is bytes, which cannot be meant; "
                         f"give a unit, e.g. --memory {text.strip()}G")
    return n


def check_memory_fits_host(memory_bytes: int, prof: dict, live: bool) -> None:
    """Refuse a --memory larger than the target host's RAM: it would size an OOM kill."""
    host = int((prof.get("memory") or {}).get("total_bytes") or 0)
    # MemTotal is the installed RAM minus what firmware and kernel keep (a few %): "24G" on a
    # 24 GiB machine showing 23.5 GiB is the machine itself (the budget then uses MemTotal)
    if host and memory_bytes > host * MEMTOTAL_SLACK:
        target = ("this machine" if live else "the host of --profile/--root")
        raise UsageError(f"--memory {memory_bytes / (1 << 30):.1f} GiB is more than "
                         f"{target}'s RAM ({host / (1 << 30):.1f} GiB)",
                         hint="to size for another (bigger) host, pass that host's probe "
                              "with --profile FILE or --root DIR" if live else
                              "use at most the host's RAM")


def refuse_control_characters(flag: str, path: str | None) -> None:
    """A path with a newline or other control character would become a second line in the
    config file's comments and in the shell commands of the OS steps: refuse it."""
    if path and any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise UsageError(f"{flag} {path!r}: the path holds a control character (newline, tab "
                         "...); rename the directory")


def build_recommendation(engine: str, *, profile=None, root=None, version=None, workload="oltp",
                         memory=None, cpus=None, data_dir=None, wal_dir=None, clients=None,
                         allow_unsafe=False, medium=None, interleave_cpuless=False):
    from pmem_advisor.rules import build_facts, recommend

    eng, flavour = split_engine(engine)
    for flag, path in (("--data-dir", data_dir), ("--wal-dir", wal_dir)):
        refuse_control_characters(flag, path)
    if version is None:
        flavour, version = installed_version(eng, flavour)
    memory_bytes = parse_memory(memory) if memory else None
    live = profile is None and root is None
    prof = load_profile(profile, root, [data_dir, wal_dir])
    if memory_bytes:
        check_memory_fits_host(memory_bytes, prof, live)
    facts = build_facts(prof, engine=eng, flavour=flavour, version=version, workload=workload,
                        data_dir=data_dir, wal_dir=wal_dir, memory_bytes=memory_bytes, cpus=cpus,
                        clients=clients, allow_unsafe=allow_unsafe, root=root, medium=medium,
                        interleave_cpuless=interleave_cpuless)
    if live:
        for p, given in ((facts.data, data_dir), (facts.wal, wal_dir)):
            if given and p is not None and not os.path.exists(given) and \
                    p.medium_source != "override" and p.mountpoint in ("/", None):
                raise UsageError(
                    f"{p.role} directory {given} does not exist here; it would be sized for the "
                    f"root filesystem / (medium {p.medium})",
                    hint="create it on its real mount first, or pass --medium "
                         "pmem|nvme|ssd|hdd|cxl|tmpfs")
    rec = recommend(facts)
    if root is not None:  # a machine tree: say when a directory is not in it (never silently /)
        for p, given in ((facts.data, data_dir), (facts.wal, wal_dir)):
            inside = os.path.join(root, str(given or "").lstrip("/"))
            if given and p is not None and p.mountpoint in ("/", None) and \
                    not os.path.lexists(inside):
                rec.notes.append(f"{p.role} directory {given} does not exist in {root}: sized "
                                 f"for its root filesystem (medium {p.medium}); give the real "
                                 "mount or --medium")
    return rec


def emit(rec) -> str:
    """The config text through the knobs emitters, every line with its rule and reason."""
    from pmem_advisor.knobs.emit import Header, Setting, emit_config

    f = rec.facts
    notes = list(rec.header_notes())
    notes += [f"{s.rule}: {'DESTRUCTIVE ' if s.destructive else ''}{s.command}  # {s.reason}"
              for s in rec.os_steps]
    notes += [f"withheld {w.name} = {w.text} ({w.rule}): {w.reason}" for w in rec.withheld]
    if f.emulated:
        notes.insert(0, EMULATION_NOTE)
    fp = (f.profile.get("host") or {}).get("hostname") or "unknown"
    header = Header(fingerprint=str(fp), flavour=f.flavour or "", version=f.version or "",
                    notes=tuple(notes), steps=tuple(rec.os_steps), findings=tuple(rec.findings))
    settings = [Setting(s.name, s.value, f"{s.rule} [{', '.join(s.insights)}] {s.reason}"
                        if s.insights else f"{s.rule}: {s.reason}") for s in rec.settings]
    return emit_config(f.engine, settings, header).text


def recommend_cmd(
    engine: str = typer.Argument(..., help=engine_help()),
    profile: str | None = typer.Option(None, "--profile", help="A probe profile (JSON)."),
    root: str | None = typer.Option(None, "--root", help="Probe a machine tree below DIR."),
    version: str | None = typer.Option(None, "--version", help="Server version (18, 8.0.36)."),
    workload: str = typer.Option("oltp", "--workload", help="oltp, olap, mixed or kv."),
    memory: str | None = typer.Option(None, "--memory", help="RAM for the server, e.g. 24G."),
    cpus: int | None = typer.Option(None, "--cpus", help="CPUs the server may use."),
    data_dir: str | None = typer.Option(None, "--data-dir", help="Data directory."),
    wal_dir: str | None = typer.Option(None, "--wal-dir", help="WAL / redo log directory."),
    clients: int | None = typer.Option(None, "--clients", help="Concurrent clients."),
    medium: str | None = typer.Option(None, "--medium",
                                      help="Medium when the probe cannot tell: CLASS for the "
                                           "data directory, or PATH=CLASS[,PATH=CLASS]; "
                                           "classes pmem, nvme, ssd, hdd, cxl, tmpfs."),
    allow_unsafe: bool = typer.Option(False, "--allow-unsafe",
                                      help="Also apply durability-risk settings."),
    interleave_cpuless: bool = typer.Option(
        False, "--interleave-cpuless",
        help="When interleaving memory, include CPU-less nodes (CXL, kmem PMEM) too."),
    out_file: str | None = typer.Option(None, "--out", help="Write the config file here."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Recommend a config from the papers' rules, each line with its reason and source."""
    rec = build_recommendation(engine, profile=profile, root=root, version=version,
                               workload=workload, memory=memory, cpus=cpus, data_dir=data_dir,
                               wal_dir=wal_dir, clients=clients, allow_unsafe=allow_unsafe,
                               medium=medium, interleave_cpuless=interleave_cpuless)
    if out_file:
        backup = write_keeping_backup(out_file, emit(rec))
        if backup:
            console.print(f"kept the previous {out_file} as {backup}")
    if rec.emulated:
        console.print(EMULATION_NOTE)
    if json_out:
        print_json(rec.to_json(), "pmem-advisor.recommend/1")
        return
    _print_table(rec)
    if out_file:
        console.print(f"wrote {out_file}")


def _print_table(rec) -> None:
    """The settings as a table on stdout (one row per line when piped, so grep finds a knob),
    then withheld values, the worst case, OS steps and findings; notes go to stderr."""
    f = rec.facts
    rows = []
    for s in rec.settings:
        value = f"[bold red]{escape(s.text)}[/]" if s.unsafe else escape(s.text)
        src = s.source + (f" [{', '.join(s.insights)}]" if s.insights else "")
        rows.append((s.name, value, escape(s.default or ""), escape(s.reason),
                     escape(f"{s.rule} {src}")))
    if rows or f.engine in ("postgres", "mysql"):
        print_table(("knob", "value", "default", "why", "source"), rows,
                    title=f"{f.flavour} {f.version or '(newest)'} - {f.workload}")
    else:  # an advice-only engine: the findings and OS steps below are the advice
        target = " ".join(x for x in (f.flavour, f.version) if x)
        out.print(escape(f"{target}: no settings to size here; the findings and OS steps "
                         "below are the advice"), soft_wrap=True)
    for w in rec.withheld:
        out.print(escape(f"withheld (needs --allow-unsafe): {w.name} = {w.text}  [{w.rule}] "
                         f"{w.reason}"), soft_wrap=True)
    if rec.memory_line():
        out.print(escape(f"memory: {rec.memory_line()}"), soft_wrap=True)
    for s in rec.os_steps:
        mark = "[bold red]DESTRUCTIVE[/] " if s.destructive else ""
        out.print(f"os step {escape(f'[{s.rule}]')}: {mark}{escape(s.command)}\n"
                  f"    why: {escape(s.reason)}", soft_wrap=True)
    for x in rec.findings:
        out.print(escape(f"{x.severity}: [{x.rule}] {x.message}" +
                         (f" -> {x.fix}" if x.fix else "")), soft_wrap=True)
    for n in rec.notes:
        note(f"note: {escape(n)}")


def register(app: typer.Typer) -> None:
    app.command("recommend")(recommend_cmd)
