"""`pmem-advisor workload list|run`: named benchmarks, one measured run on a managed server."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from pmem_advisor.cli.output import (
    EMULATION_NOTE,
    chosen_format,
    console,
    format_option,
    print_json,
    print_table,
)
from pmem_advisor.engines.api import loadable_engines
from pmem_advisor.engines.registry import get_engine, specs
from pmem_advisor.errors import EnvironmentProblem, InputError, ServerError, UsageError
from pmem_advisor.workloads.registry import all_workloads, get_workload, workload_class

workload_app = typer.Typer(
    help="Named benchmark workloads: list them, run one on a managed server.",
    no_args_is_help=True,
)

EMULATED_ROOTS = ("/dev/shm",)


def _describe(name: str, cls: object = None, engines: list[str] | None = None) -> dict:
    """One row; ``cls``: the workload class, or an engine's workload object."""
    cls = cls or workload_class(name)
    doc = (cls.__doc__ or "").strip().splitlines()
    return {
        "name": name,
        "engines": engines or list(cls.engines),
        "kind": getattr(cls, "kind", "oltp"),
        "write_heavy": getattr(cls, "write_heavy", True),
        "unit": getattr(cls, "unit", ""),
        "scale": getattr(cls, "scale_help", ""),
        "options": list(getattr(cls, "option_names", ())),
        "description": doc[0] if doc else "",
    }


@workload_app.command("list")
def list_cmd(
    fmt: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """List the named workloads, their engines and what --scale means for each."""
    rows = [_describe(n) for n in all_workloads()] + _engine_rows()
    if chosen_format(fmt, json_out) == "json":
        print_json(rows, "pmem-advisor.workloads/1", key="workloads")
        return
    print_table(("name", "engines", "kind", "scale", "options"),
                [[r["name"], "/".join(r["engines"]), r["kind"], r["scale"],
                  ", ".join(r["options"]) or "-"] for r in rows],
                title="pmem-advisor workloads", fmt=fmt)


def _engine_rows() -> list[dict]:
    """The workloads an engine runs itself (its YAML's ``workloads``: RocksDB's db_bench
    mixes, Tarantool's YCSB client), one row per engine and name."""
    rows = []
    for spec in specs():
        for name in spec.workloads:
            try:
                wl = get_engine(spec.name).workload(name)
            except (UsageError, EnvironmentProblem, ImportError):
                continue  # not made here (advice only, a missing module): not listed
            rows.append(_describe(name, wl, [spec.name]))
    return rows


def _parse_options(pairs: list[str]) -> dict[str, object]:
    options: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--option wants KEY=VALUE, got {pair!r}")
        text = value.strip()
        try:
            options[key.strip()] = int(text)
        except ValueError:
            try:
                options[key.strip()] = float(text)
            except ValueError:
                options[key.strip()] = text
    return options


def _on_emulated_pmem(*paths: Path | None) -> bool:
    for p in paths:
        if p is None:
            continue
        resolved = str(p.resolve())
        if any(resolved == r or resolved.startswith(r + "/") for r in EMULATED_ROOTS):
            return True
    return False


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
    managed = [e.name for e in loadable_engines() if e.instance_class is not None]
    if engine not in managed:
        raise UsageError(f"engine must be {' or '.join(managed)}, got {engine!r}",
                         hint="other engines measure through `pmem-advisor tune ENGINE`")
    options = _parse_options(option)
    if script is not None:
        options["script"] = str(script)
    if setup is not None:
        options["setup"] = str(setup)
    wl = get_workload(workload, **options)
    if engine not in wl.engines:
        raise UsageError(f"workload {workload} runs on {'/'.join(wl.engines)}, not on {engine}")
    scale = wl.default_scale if scale is None else scale
    config_text = ""
    if config is not None:
        try:
            config_text = config.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read config file {config}: {e}") from e

    from pmem_advisor.instances import create_instance, pick_server

    binary = pick_server(engine, flavour, server_version)
    console.print(f"server: {binary.flavour} {binary.version} ({binary.source}, {binary.bindir})")
    emulated = _on_emulated_pmem(data_dir, wal_dir)
    if emulated:
        console.print(EMULATION_NOTE)
    with create_instance(binary, data_dir=data_dir, wal_dir=wal_dir) as inst:
        inst.initialize()
        inst.start(config_text)
        conn = inst.conninfo
        try:
            console.print(f"loading {workload} at scale {scale} ...")
            t0 = time.monotonic()
            wl.load(conn, scale)
            load_s = time.monotonic() - t0
            console.print(f"running {workload}: {clients} clients, {warmup:g} s warm-up, "
                          f"{duration:g} s measured" +
                          (f", {repetitions} repetitions" if repetitions > 1 else ""))
            result = wl.run(conn, clients=clients, duration=duration, warmup=warmup,
                            repetitions=repetitions)
        except EnvironmentProblem as e:
            if not inst.is_running():  # the server died: its own reason is in its log
                raise ServerError(
                    f"the server stopped during the run ({e.message})",
                    log_tail=inst.log_tail(), hint=e.hint,
                ) from e
            raise
        inst.raise_if_dead()
    data = {
        "engine": engine,
        "flavour": binary.flavour,
        "version": binary.version,
        "workload": result.workload,
        "scale": scale,
        "clients": result.clients,
        "throughput_tps": round(result.throughput_tps, 3),
        "unit": result.unit,
        "latency_ms": result.latency_ms,
        "errors": result.errors,
        "duration_s": result.duration_s,
        "warmup_s": warmup,
        "load_s": round(load_s, 3),
        "emulated_pmem": emulated,
        "raw": result.raw,
    }
    if chosen_format(fmt, json_out) == "json":
        print_json(data, "pmem-advisor.workload-run/1", engine=engine,
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
