"""What `workload list|run` decides: the named workloads and their rows, the options, and one
measured run on a fresh managed server."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pmem_advisor.errors import EnvironmentProblem, InputError, ServerError, UsageError

EMULATED_ROOTS = ("/dev/shm",)


def describe(name: str, cls: object = None, engines: list[str] | None = None) -> dict:
    """One row; ``cls``: the workload class, or an engine's workload object."""
    from pmem_advisor.workloads.registry import workload_class

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


def list_workloads() -> list[dict]:
    """Every named workload (``describe`` rows), then the ones engines run themselves."""
    from pmem_advisor.workloads.registry import all_workloads

    return [describe(n) for n in all_workloads()] + _engine_rows()


def _engine_rows() -> list[dict]:
    """The workloads an engine runs itself (its YAML's ``workloads``: RocksDB's db_bench
    mixes, Tarantool's YCSB client), one row per engine and name."""
    from pmem_advisor.engines.registry import get_engine, specs

    rows = []
    for spec in specs():
        for name in spec.workloads:
            try:
                wl = get_engine(spec.name).workload(name)
            except (UsageError, EnvironmentProblem, ImportError):
                continue  # not made here (advice only, a missing module): not listed
            rows.append(describe(name, wl, [spec.name]))
    return rows


def parse_options(pairs: list[str]) -> dict[str, object]:
    """``--option KEY=VALUE`` pairs: a number where the value is one, else the text."""
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


def on_emulated_pmem(*paths: Path | None) -> bool:
    """Whether a path is on tmpfs standing in for PMEM (the caveat every output carries)."""
    for p in paths:
        if p is None:
            continue
        resolved = str(p.resolve())
        if any(resolved == r or resolved.startswith(r + "/") for r in EMULATED_ROOTS):
            return True
    return False


@dataclass
class WorkloadRun:
    """One measured run: the server it ran on, the workload's result and how it was set up."""

    engine: str
    binary: Any
    result: Any
    scale: int
    warmup: float
    load_s: float
    emulated: bool

    def to_json(self) -> dict:
        r = self.result
        return {
            "engine": self.engine, "flavour": self.binary.flavour,
            "version": self.binary.version, "workload": r.workload, "scale": self.scale,
            "clients": r.clients, "throughput_tps": round(r.throughput_tps, 3), "unit": r.unit,
            "latency_ms": r.latency_ms, "errors": r.errors, "duration_s": r.duration_s,
            "warmup_s": self.warmup, "load_s": round(self.load_s, 3),
            "emulated_pmem": self.emulated, "raw": r.raw,
        }


def run_workload(engine: str, workload: str, *, scale: int | None = None, clients: int = 4,
                 duration: float = 30.0, warmup: float = 5.0, repetitions: int = 1,
                 config: Path | None = None, data_dir: Path | None = None,
                 wal_dir: Path | None = None, version: str | None = None,
                 flavour: str | None = None, script: Path | None = None,
                 setup: Path | None = None, options: list[str] = (),
                 say: Callable[[str], None] = lambda line: None) -> WorkloadRun:
    """Run one measured benchmark on a fresh managed server started with the ``config`` file.
    ``say`` receives the progress lines (the server, the emulation caveat, loading, running).
    UsageError (2) for an engine or workload that does not fit, InputError (2) for an
    unreadable config, ServerError (3) with the server's log when it dies during the run."""
    from pmem_advisor.engines.api import loadable_engines
    from pmem_advisor.workloads.registry import get_workload

    managed = [e.name for e in loadable_engines() if e.instance_class is not None]
    if engine not in managed:
        raise UsageError(f"engine must be {' or '.join(managed)}, got {engine!r}",
                         hint="other engines measure through `pmem-advisor tune ENGINE`")
    opts = parse_options(list(options))
    if script is not None:
        opts["script"] = str(script)
    if setup is not None:
        opts["setup"] = str(setup)
    wl = get_workload(workload, **opts)
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
    from pmem_advisor.report.describe import EMULATION_NOTE

    binary = pick_server(engine, flavour, version)
    say(f"server: {binary.flavour} {binary.version} ({binary.source}, {binary.bindir})")
    emulated = on_emulated_pmem(data_dir, wal_dir)
    if emulated:
        say(EMULATION_NOTE)
    with create_instance(binary, data_dir=data_dir, wal_dir=wal_dir) as inst:
        inst.initialize()
        inst.start(config_text)
        conn = inst.conninfo
        try:
            say(f"loading {workload} at scale {scale} ...")
            t0 = time.monotonic()
            wl.load(conn, scale)
            load_s = time.monotonic() - t0
            say(f"running {workload}: {clients} clients, {warmup:g} s warm-up, "
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
    return WorkloadRun(engine, binary, result, scale, warmup, load_s, emulated)
