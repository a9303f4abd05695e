"""`pmem-advisor recommend`: a config for this machine from the papers' rules, with reasons."""

from __future__ import annotations

import os

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
from pmem_advisor.errors import UsageError
from pmem_advisor.fileio import write_keeping_backup
from pmem_advisor.gate.target import (  # the target's inputs, shared with the gate (issue 55)
    MIB,
    installed_version,
    load_profile,
    parse_memory,
    split_engine,
)


def mysql_means_mysql(engine: str, flavour: str | None) -> str | None:
    """``mysql`` without a version targets MySQL (the installed one, else the newest LTS the
    catalogs know), never the MariaDB that happens to be installed: MariaDB when asked for
    (``mariadb``, ``--flavour mariadb``, or a 10.x/11.x ``--version``)."""
    return "mysql" if engine == "mysql" and flavour is None else flavour


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
    from pmem_advisor.rules.budget import target_line

    eng, flavour = split_engine(engine)
    for flag, path in (("--data-dir", data_dir), ("--wal-dir", wal_dir)):
        refuse_control_characters(flag, path)
    given_version = version
    target_note = None
    if version is None:
        flavour, version = installed_version(eng, mysql_means_mysql(eng, flavour))
        if eng == "mysql" and flavour == "mysql" and version is None:
            from pmem_advisor.knobs.catalog import load_catalog

            version = load_catalog("mysql", "mysql", None).version
            target_note = (f"target: MySQL {version}, the newest LTS the catalogs know (no MySQL "
                           "server here; --version chooses another, `recommend mariadb` "
                           "targets MariaDB)")
    memory_bytes = parse_memory(memory) if memory else None
    live = profile is None and root is None
    prof = load_profile(profile, root, [data_dir, wal_dir])
    # the target build's features (lz4) from the server installed here; another host's
    # (--profile/--root) are not this host's build: unknown there
    from pmem_advisor.engines.api import get_engine

    features = get_engine(eng).build_features(flavour, version) if live else frozenset()
    facts = build_facts(prof, engine=eng, flavour=flavour, version=version, workload=workload,
                        features=features,
                        data_dir=data_dir, wal_dir=wal_dir, memory_bytes=memory_bytes, cpus=cpus,
                        clients=clients, allow_unsafe=allow_unsafe, root=root, medium=medium,
                        interleave_cpuless=interleave_cpuless, target=True)
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
    refuse_unfittable(rec)
    line = target_line(memory=memory_bytes, cpus=cpus, medium=medium, version=given_version,
                       flavour=facts.flavour, probed="this machine" if live else
                       "the profile" if profile else f"the tree {root}")
    if line:
        rec.notes.insert(0, line)
    if target_note:
        rec.notes.insert(0, target_note)
    if root is not None:  # a machine tree: say when a directory is not in it (never silently /)
        for p, given in ((facts.data, data_dir), (facts.wal, wal_dir)):
            inside = os.path.join(root, str(given or "").lstrip("/"))
            if given and p is not None and p.mountpoint in ("/", None) and \
                    not os.path.lexists(inside):
                rec.notes.append(f"{p.role} directory {given} does not exist in {root}: sized "
                                 f"for its root filesystem (medium {p.medium}); give the real "
                                 "mount or --medium")
    return rec


def refuse_unfittable(rec) -> None:
    """A budget whose worst case nothing fits, even at the smallest per-connection memory, is
    bad input (exit 2) naming the smallest budget that fits the same connections (and the
    most clients this budget holds): a file our own check fails is never written."""
    from pmem_advisor.probes.summary import human_bytes
    from pmem_advisor.rules.budget_search import most_clients_that_fit, smallest_fitting_budget
    from pmem_advisor.rules.fit import fitted_budget

    est, f = rec.memory, rec.facts
    if est is None or est.total_bytes <= fitted_budget(f.memory_bytes):
        return
    need = smallest_fitting_budget(f)
    per_session = est.per_connection_bytes > 0 and est.connections > 1
    asked = ("" if not per_session else f" --clients {f.clients} ({est.connections} "
             "connections with the reserved)" if f.clients else f" {est.connections} connections")
    where = (f"the smallest budget that fits{asked} is {human_bytes(need)}: --memory "
             f"{_memory_flag(need)}" if need else f"no budget fits{asked}")
    hint = None
    if per_session:
        most = most_clients_that_fit(f)
        hint = (f"or at most --clients {most} within {human_bytes(f.memory_bytes)}, pooled "
                "(pgbouncer / a thread pool)" if most else
                "not even one client fits: give more memory")
    raise UsageError(f"nothing fits {human_bytes(f.memory_bytes)} of memory ({f.memory_source})"
                     f": even at the smallest per-connection memory the worst case is "
                     f"{human_bytes(est.total_bytes)}; {where}", hint=hint)


def _memory_flag(n: int) -> str:
    return f"{n >> 30}G" if n % (1 << 30) == 0 else f"{-(-n // MIB)}M"


def emit(rec, fmt: str = "conf") -> str:
    """The config text (``conf``) or the statements that apply it (``sql``) through the
    knobs emitters, every line with its rule and reason."""
    from pmem_advisor.knobs.emit import Header, Setting, emit_config, emit_sql

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
    if fmt == "sql":
        return emit_sql(f.engine, settings, header).text
    return emit_config(f.engine, settings, header).text


FORMATS = ("table", "tsv", "conf", "sql", "json")


def recommend_cmd(
    engine: str = typer.Argument(..., help=engine_help()),
    profile: str | None = typer.Option(None, "--profile", help="A probe profile (JSON)."),
    root: str | None = typer.Option(None, "--root", help="Probe a machine tree below DIR."),
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
        backup = write_keeping_backup(out_file, emit(rec))
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
