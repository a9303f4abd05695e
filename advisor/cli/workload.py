"""`pmem-advisor workload list|run`: named benchmarks, one measured run on a managed server.

Parses, calls ``library.workload`` (list_workloads, run_workload) and renders."""

from __future__ import annotations

from pathlib import Path

import typer

from pmem_advisor.cli.output import (
    chosen_format,
    console,
    format_option,
    print_json,
    print_table,
)

workload_app = typer.Typer(
    help="Named benchmark workloads: list them, run one on a managed server.",
    no_args_is_help=True,
)

@workload_app.command("list")
def list_cmd(
    fmt: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """List the named workloads, their engines and what --scale means for each."""
    from pmem_advisor.library.workload import list_workloads

    rows = list_workloads()
    if chosen_format(fmt, json_out) == "json":
        print_json(rows, "pmem-advisor.workloads/1", key="workloads")
        return
    print_table(("name", "engines", "kind", "scale", "options"),
                [[r["name"], "/".join(r["engines"]), r["kind"], r["scale"],
                  ", ".join(r["options"]) or "-"] for r in rows],
                title="pmem-advisor workloads", fmt=fmt)


@workload_app.command("run")
def run_cmd(
    engine: str = typer.Argument(..., help="postgres or mysql (MySQL/MariaDB)."),
    workload: str = typer.Option(..., "--workload", "-w", help="Workload name (see list)."),
    scale: int | None = typer.Option(None, "--scale", help="Data size (see list); default 1."),
    clients: int = typer.Option(4, "--clients", help="Concurrent clients."),
    duration: float = typer.Option(30.0, "--duration", help="Measurement window, seconds."),
    warmup: float = typer.Option(5.0, "--warmup", help="Warm-up before measuring, seconds."),
    repetitions: int = typer.Option(1, "--repetitions", help="Runs; the median is reported."),
    config: Path | None = typer.Option(None, "--config", help="Server config fragment file."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="Data directory (new/empty)."),
    wal_dir: Path | None = typer.Option(None, "--wal-dir", help="WAL/redo directory."),
    server_version: str | None = typer.Option(
        None, "--version", "--server-version", help="Server version to pick, e.g. 15 or 18.6."),
    flavour: str | None = typer.Option(None, "--flavour", help="mariadb or mysql."),
    script: Path | None = typer.Option(
        None, "--script", help="pgbench-custom / sql-file: the script to run."),
    setup: Path | None = typer.Option(
        None, "--setup", help="pgbench-custom / sql-file: SQL run once to create the data."),
    option: list[str] = typer.Option(
        [], "--option", help="Workload option KEY=VALUE (e.g. tables=2, density=0.1)."),
    fmt: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """Run one measured benchmark on a fresh managed server started with --config."""
    from pmem_advisor.library.workload import run_workload

    run = run_workload(engine, workload, scale=scale, clients=clients, duration=duration,
                       warmup=warmup, repetitions=repetitions, config=config,
                       data_dir=data_dir, wal_dir=wal_dir, version=server_version,
                       flavour=flavour, script=script, setup=setup, options=option,
                       say=console.print)
    binary, result = run.binary, run.result
    if chosen_format(fmt, json_out) == "json":
        print_json(run.to_json(), "pmem-advisor.workload-run/1", engine=engine,
                   flavour=binary.flavour, version=str(binary.version))
        return
    lat = result.latency_ms
    print_table(("clients", f"{result.unit}/s", "p50 ms", "p95 ms", "p99 ms", "errors",
                 "measured s"),
                [(str(result.clients), f"{result.throughput_tps:.1f}",
                  *(f"{lat[p]:.3f}" if lat.get(p) is not None else "-"
                    for p in ("p50", "p95", "p99")),
                  str(result.errors), f"{result.duration_s:.1f}")],
                title=f"{workload} on {binary.flavour} {binary.version}", fmt=fmt)


def register(app: typer.Typer) -> None:
    app.add_typer(workload_app, name="workload")
