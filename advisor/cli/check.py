"""`pmem-advisor check`: a pre-deployment gate for the host, config files or a running server.

Parses, calls ``pmem_advisor.gate.check`` (the library: the engine argument, files, engines,
rules, suppressions, baseline, the exit decision) and renders its report (``CheckReport``'s
``to_json``/``text_lines``, ``report.gate_formats`` for CI). Exit codes: 0 no finding at or above
``--fail-on``, 1 findings, 2 bad input (a bad flag, an unreadable or mismatched config, a glob
matching nothing, a bad project file), 3 environment (the server cannot be reached).
"""

from __future__ import annotations

import sys

import typer

from pmem_advisor.cli.output import chosen_format, console, format_option, out, print_json
from pmem_advisor.engines.registry import engine_help
from pmem_advisor.errors import UsageError

FORMATS = ("text", "json", "junit", "sarif", "github")
SCHEMA = "pmem-advisor.check/1"
FORMAT_HELP = ("text: lines a person reads; json: JSON; junit: JUnit XML for CI; sarif: SARIF "
               "2.1.0 for code scanning; github: GitHub Actions annotations.")


def check_cmd(
    targets: list[str] = typer.Argument(None, metavar="[ENGINE] [PATH]...", help="Same as "
                                        "--db: " + engine_help() + "; then config files, "
                                        "directories or globs to check in one run."),
    profile: str | None = typer.Option(None, "--profile", help="A probe profile (JSON)."),
    root: str | None = typer.Option(None, "--root", help="Probe a machine tree below DIR, "
                                    "or a snapshot .tar.gz (probe --save)."),
    db: str | None = typer.Option(None, "--db", help=engine_help()),
    version: str | None = typer.Option(None, "--version", "--server-version",
                                       help="Target server version (default: the installed)."),
    config: str | None = typer.Option(None, "--config", help="A config file to check."),
    dsn: str | None = typer.Option(None, "--dsn", help="A running server to check (its "
                                   "password is better given by --dsn-file or "
                                   "PMEM_ADVISOR_DSN)."),
    dsn_file: str | None = typer.Option(None, "--dsn-file",
                                        help="A file (mode 600) whose first line is the DSN."),
    data_dir: str | None = typer.Option(None, "--data-dir", help="Data directory."),
    wal_dir: str | None = typer.Option(None, "--wal-dir", help="WAL / redo log directory."),
    memory: str | None = typer.Option(None, "--memory",
                                      help="RAM of the target host for the server, e.g. 64G "
                                      "(any host, not only this one)."),
    cpus: int | None = typer.Option(None, "--cpus", help="CPUs of the target host the server "
                                    "may use (any host, not only this one)."),
    clients: int | None = typer.Option(None, "--clients", help="With --dsn: the concurrent "
                                       "clients the advice and --diff size for (default: the "
                                       "server's own max_connections)."),
    medium: list[str] = typer.Option(None, "--medium",
                                     help="CLASS (pmem, cxl, nvme, ssd, hdd, tmpfs): the target's "
                                     "data medium, with or without --data-dir; or PATH=CLASS "
                                     "(hdd, ssd, nvme): the medium under a path here when the "
                                     "kernel cannot tell; repeatable."),
    no_measure: bool = typer.Option(False, "--no-measure",
                                    help="Do not measure the medium of the data/WAL paths."),
    diff: bool = typer.Option(False, "--diff", help="With --dsn: what recommend would change."),
    workload: str = typer.Option("oltp", "--workload",
                                 help="oltp, olap, mixed or kv: for the rules and --diff."),
    allow_unsafe: bool = typer.Option(False, "--allow-unsafe",
                                      help="Durability risks are warnings, not failures."),
    fmt: str = format_option(FORMATS, help=FORMAT_HELP),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
    fail_on: str = typer.Option("fail", "--fail-on", help="warn or fail: exit 1 from here."),
    project: str | None = typer.Option(None, "--project", help="The project file (default: "
                                       ".pmem-advisor.toml here or in a directory above)."),
    no_project: bool = typer.Option(False, "--no-project", help="Read no project file."),
    baseline: str | None = typer.Option(None, "--baseline", help="Fail only on findings not "
                                        "in this baseline (see --write-baseline)."),
    write_baseline: str | None = typer.Option(None, "--write-baseline", help="Write the "
                                              "findings to FILE as the baseline; exit 0 "
                                              "unless a file could not be checked."),
) -> None:
    """Check the host (PMEM, DAX, NUMA), config files or a running server before deployment."""
    from pmem_advisor.connection import resolve_dsn
    from pmem_advisor.gate import check

    if json_out and fmt not in ("text", "json"):  # the alias every other command has
        raise UsageError(f"--json and --format {fmt} contradict each other: give one")
    fmt = chosen_format(fmt, json_out)
    notes: list[str] = []
    dsn = resolve_dsn(dsn, dsn_file, notes=notes)
    for n in notes:  # the password-in-argv note: now, before a connection that may fail
        console.print(f"note: {n}", soft_wrap=True)
    report = check(list(targets or []), config=config, dsn=dsn, baseline=baseline,
                   project=False if no_project else project, db=db, version=version,
                   profile=profile, root=root, data_dir=data_dir, wal_dir=wal_dir,
                   memory=memory, cpus=cpus, clients=clients, medium=list(medium or []),
                   no_measure=no_measure, diff=diff, workload=workload,
                   allow_unsafe=allow_unsafe, fail_on=fail_on)
    for n in report.notes:
        if n not in notes:
            console.print(f"note: {n}", markup=False, highlight=False, soft_wrap=True)
    for e in report.errors:  # each file that could not be checked: one line, as main says it
        sys.stderr.write(f"pmem-advisor: error: {' '.join(str(e.error).split())}\n")
    if fmt in ("junit", "sarif", "github"):
        from pmem_advisor.report import gate_formats

        out.file.write(getattr(gate_formats, fmt)(report))
    elif fmt == "json":
        print_json(report.to_json(), SCHEMA, **report.target)
    else:
        for line in report.text_lines():
            out.print(line, markup=False)
    code = report.exit_code
    if write_baseline:
        from pmem_advisor.gate.suppress import write_baseline as write

        write(write_baseline, report.findings)
        console.print(f"note: {len(report.findings)} finding(s) written to the baseline "
                      f"{write_baseline}", markup=False, soft_wrap=True)
        code = report.errors_exit_code
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("check")(check_cmd)
