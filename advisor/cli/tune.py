"""`pmem-advisor tune`: rule-shaped Bayesian optimisation of a config on managed servers."""

from __future__ import annotations

import typer

from pmem_advisor.cli.output import (
    EMULATION_NOTE,
    chosen_format,
    console,
    format_option,
    out,
    print_json,
)
from pmem_advisor.engines.registry import engine_help


def tune(
    engine: str = typer.Argument(..., help=engine_help(("server", "embedded", "tool"))),
    workload: str = typer.Option(..., "--workload", "-w", help="Workload name."),
    trials: int = typer.Option(20, "--trials", help="Trials in the study (baselines included)."),
    time_budget: str = typer.Option(
        None, "--time-budget",
        help="Whole run incl. re-measurement, with a unit: 90s, 30m, 2h."),
    duration: float = typer.Option(30.0, "--duration", help="Measured seconds per trial."),
    warmup: float = typer.Option(5.0, "--warmup", help="Warm-up seconds per trial."),
    clients: int = typer.Option(4, "--clients", help="Benchmark client connections."),
    scale: int = typer.Option(
        None, "--scale", help="Workload scale (default: data at least the buffer being sized)."),
    memory: str = typer.Option(
        None, "--memory",
        help="Production RAM budget, e.g. 4G (default: this machine's budget)."),
    connections: int = typer.Option(
        None, "--connections",
        help="Production peak client connections (default: --dsn's or the rules')."),
    dsn: str = typer.Option(None, "--dsn",
                            help="A live server whose max_connections is the production one."),
    dsn_file: str = typer.Option(None, "--dsn-file", help="Read --dsn from this file."),
    flavour: str = typer.Option(None, "--flavour", help="mariadb or mysql (or postgresql)."),
    server_version: str = typer.Option(None, "--version", "--server-version",
                                       help="Server version to tune, e.g. 15 or 10.11."),
    data_dir: str = typer.Option(None, "--data-dir", help="New or empty data directory."),
    wal_dir: str = typer.Option(None, "--wal-dir", help="New or empty WAL/redo directory."),
    objective: str = typer.Option("throughput", "--objective", help="throughput, p95 or p99."),
    latency_slo: float = typer.Option(None, "--latency-slo", help="p95 limit in ms."),
    allow_unsafe: bool = typer.Option(False, "--allow-unsafe", help="Tune durability-risk knobs."),
    no_rules: bool = typer.Option(False, "--no-rules", help="No rules-only trial or rule base."),
    sampler: str = typer.Option(
        "tpe", "--sampler", help="tpe, gp, random, cmaes, or trust-region (centred on the "
        "rules' config, their important knobs first, within their bounds)."),
    seed: int = typer.Option(None, "--seed", help="Sampler seed."),
    storage: str = typer.Option(None, "--storage", help="SQLAlchemy URL shared by workers."),
    study: str = typer.Option(None, "--study", help="Study name."),
    resume: bool = typer.Option(False, "--resume", help="Continue or join an existing study."),
    out: str = typer.Option("tune-out", "--out", help="Output directory."),
    knob: list[str] = typer.Option([], "--knob", help="Also tune this knob (repeatable)."),
    repeats: int = typer.Option(
        8, "--repeats", help="Most interleaved rounds of the final re-measurement (each "
        "round side by side in short turns where the server can: 1 s for pgbench, 4 s for "
        "sysbench)."),
    offline: bool = typer.Option(False, "--offline",
                                 help="Embed plotly in report.html (no file beside it)."),
    heartbeat: int = typer.Option(10, "--heartbeat", help="Worker heartbeat seconds.",
                                  hidden=True),
    fmt: str = format_option(("text", "json"),
                             help="text: the verdict and the files; json: the summary "
                             "(schema pmem-advisor.tune-summary/1)."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """Tune a config on managed servers: trial 0 defaults, trial 1 rules-only, then search.

    The tuned file is sized for production (--connections/--memory/--dsn), not for the
    benchmark's --clients. Exit codes: 0 done, 2 bad input, 3 environment (no trial
    measured: no config written; --out not writable; disk full), 130 Ctrl-C, 143 SIGTERM
    (the study is kept either way: --resume continues it)."""
    from pmem_advisor.library.tune import tune as run

    summary = run(
        engine, workload, flavour=flavour, memory=memory, dsn=dsn, dsn_file=dsn_file,
        console=console, say=lambda n: console.print(f"note: {n}", highlight=False,
                                                     markup=False),
        trials=trials, time_budget=time_budget, duration=duration, warmup=warmup,
        clients=clients, scale=scale, data_dir=data_dir, wal_dir=wal_dir, objective=objective,
        latency_slo_ms=latency_slo, allow_unsafe=allow_unsafe, use_rules=not no_rules,
        sampler=sampler, seed=seed, storage=storage, study=study, resume=resume, out=out,
        knobs=list(knob), repeats=repeats, heartbeat_s=heartbeat, connections=connections,
        version=server_version, offline=offline)
    if chosen_format(fmt, json_out) == "json":
        print_json(summary)
    else:
        print_outcome(summary)


def print_outcome(summary: dict) -> None:
    from pmem_advisor.report.describe import outcome_lines

    lines = outcome_lines(summary)
    for line in lines:  # the verdict and the file are the result: stdout; notes: stderr
        stream = console if line.startswith("note:") else out
        stream.print(line, markup=False, highlight=False, soft_wrap=True)
    emulated = summary.get("emulated_pmem") or (summary.get("meta") or {}).get("emulated_pmem")
    if emulated and not any("tmpfs" in ln for ln in lines):
        console.print(EMULATION_NOTE)


def register(app: typer.Typer) -> None:
    app.command("tune")(tune)
