"""`pmem-advisor tune`: rule-shaped Bayesian optimisation of a config on managed servers."""

from __future__ import annotations

import typer

from pmem_advisor.cli.output import EMULATION_NOTE, console, print_json
from pmem_advisor.knobs.units import parse_bytes


def tune(
    engine: str = typer.Argument(..., help="postgres or mysql (MySQL/MariaDB)."),
    workload: str = typer.Option(..., "--workload", "-w", help="Workload name."),
    trials: int = typer.Option(20, "--trials", help="Trials in the study (baselines included)."),
    time_budget: str = typer.Option(None, "--time-budget", help="Stop searching after, e.g. 30m."),
    duration: float = typer.Option(30.0, "--duration", help="Measured seconds per trial."),
    warmup: float = typer.Option(5.0, "--warmup", help="Warm-up seconds per trial."),
    clients: int = typer.Option(4, "--clients", help="Client connections."),
    scale: int = typer.Option(None, "--scale", help="Workload scale (default: the workload's)."),
    memory: str = typer.Option(None, "--memory",
                               help="RAM the server may use, e.g. 4G (default: all of it)."),
    data_dir: str = typer.Option(None, "--data-dir", help="New or empty data directory."),
    wal_dir: str = typer.Option(None, "--wal-dir", help="New or empty WAL/redo directory."),
    objective: str = typer.Option("throughput", "--objective", help="throughput, p95 or p99."),
    latency_slo: float = typer.Option(None, "--latency-slo", help="p95 limit in ms."),
    allow_unsafe: bool = typer.Option(False, "--allow-unsafe", help="Tune durability-risk knobs."),
    no_rules: bool = typer.Option(False, "--no-rules", help="No rules-only trial or rule base."),
    sampler: str = typer.Option("tpe", "--sampler", help="tpe, gp, random or cmaes."),
    seed: int = typer.Option(None, "--seed", help="Sampler seed."),
    storage: str = typer.Option(None, "--storage", help="SQLAlchemy URL shared by workers."),
    study: str = typer.Option(None, "--study", help="Study name."),
    resume: bool = typer.Option(False, "--resume", help="Continue or join an existing study."),
    out: str = typer.Option("tune-out", "--out", help="Output directory."),
    knob: list[str] = typer.Option([], "--knob", help="Also tune this knob (repeatable)."),
    repeats: int = typer.Option(3, "--repeats", help="Re-measurements of each finalist."),
    heartbeat: int = typer.Option(10, "--heartbeat", help="Worker heartbeat seconds.",
                                  hidden=True),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Tune a config on managed servers: trial 0 defaults, trial 1 rules-only, then search."""
    from pmem_advisor.report.progress import LiveProgress
    from pmem_advisor.tuner.session import TuneRequest, run_tune

    req = TuneRequest(
        engine=engine, workload=workload, trials=trials, time_budget=time_budget,
        duration=duration, warmup=warmup, clients=clients, scale=scale, data_dir=data_dir,
        wal_dir=wal_dir, objective=objective, latency_slo_ms=latency_slo,
        allow_unsafe=allow_unsafe, use_rules=not no_rules, sampler=sampler, seed=seed,
        storage=storage, study=study, resume=resume, out=out, knobs=list(knob),
        repeats=repeats, heartbeat_s=heartbeat,
        memory_bytes=parse_bytes(memory, "--memory") if memory else None,
    )

    def progress(space, catalog):
        return LiveProgress(console, space, trials, objective, catalog)

    summary = run_tune(req, progress=progress, console=console)
    if json_out:
        print_json(summary)
    else:
        print_outcome(summary)


def print_outcome(summary: dict) -> None:
    from pmem_advisor.report.markdown import gain

    best = summary.get("best")
    if best:
        console.print(f"best: trial {best['trial']} ({best['role']}), "
                      f"{best['throughput_tps'] or 0:.1f} tps median of {best['runs']} runs")
    console.print(f"vs server defaults: {gain(summary.get('gain_vs_default'))}; "
                  f"vs rules only: {gain(summary.get('gain_vs_rules'))}")
    if summary.get("config_file"):
        console.print(f"config: {summary['config_file']}")
    if summary.get("emulated_pmem") or (summary.get("meta") or {}).get("emulated_pmem"):
        console.print(EMULATION_NOTE)


def register(app: typer.Typer) -> None:
    app.command("tune")(tune)
