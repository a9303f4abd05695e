"""A whole `tune` run from plain options: rules -> space -> study -> trials -> reports.

The CLI and the demo call ``run_tune``; everything it starts is stopped on every exit path.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import math
import os
import re
import shutil
import signal
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna

from pmem_advisor.engines.api import EvalRequest
from pmem_advisor.engines.registry import get_engine, list_engines
from pmem_advisor.errors import EnvironmentProblem, Interrupted, UsageError
from pmem_advisor.tuner.limits import UNIT_BYTES, Limits
from pmem_advisor.tuner.samplers import SAMPLERS, make_sampler, trust_region_knowledge
from pmem_advisor.tuner.space import KnobSpec, build_space
from pmem_advisor.tuner.storage import default_url, open_storage, redact
from pmem_advisor.tuner.study import METRIC_ATTRS, open_study
from pmem_advisor.tuner.target import RESERVED_CONNECTIONS, ProductionTarget, production_target
from pmem_advisor.tuner.tuner import Observer, TuneOptions, Tuner

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(s|sec|m|min|h)?\s*$")
UNIT_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}
# Study attribute: why each worker's run ended (the reports say it).
END_ATTR = "pmem_advisor.end"
ENDS_ATTR = "pmem_advisor.ends"
# Option ranges: beyond them a value is a typo, not a benchmark (one day per window; more
# clients than one host's load generator can drive against one server).
MAX_WINDOW_S = 24 * 3600
MAX_CLIENTS = 5000
MAX_TRIALS = 100_000
# A trial's fixed cost beyond warm-up and measurement (restore, start, stop), for estimates.
TRIAL_OVERHEAD_S = 15.0
# The golden copy, the trial's working copy and WAL growth: the disk the data needs.
DISK_PER_DATA = 2.5
# The data is sized to the buffer that caches it (shared_buffers / the InnoDB buffer pool).
# Settings that size for the production load, not for the benchmark: the connection count
# and the per-connection memory the rules fitted to it (the tuned file keeps them whichever
# config wins).
PRODUCTION_KNOBS = frozenset({
    "max_connections", "work_mem", "temp_buffers", "maintenance_work_mem",
    "autovacuum_work_mem", "sort_buffer_size", "join_buffer_size", "read_buffer_size",
    "read_rnd_buffer_size", "tmp_table_size", "max_heap_table_size", "binlog_cache_size"})
EXIT_TERMINATED = 128 + signal.SIGTERM  # the shell's status for a SIGTERM'd process


class Terminated(Interrupted):
    """SIGTERM (a service manager, a killed job): cleaned up like Ctrl-C, exit 143."""

    exit_code = EXIT_TERMINATED


class _SigTerm(KeyboardInterrupt):
    """Raised in the main thread by the SIGTERM handler so every cleanup path runs."""


def parse_duration(text: str | None, what: str = "--time-budget") -> float | None:
    """'30m', '1h', '90s' -> seconds. A plain number is seconds only from a minute on: a
    budget of '5' is almost always meant as minutes, so it is refused with that fix."""
    if text is None:
        return None
    m = _DURATION.match(str(text))
    if not m:
        raise UsageError(f"bad {what} {text!r}; use e.g. 90s, 30m or 2h")
    number = float(m.group(1))
    if not math.isfinite(number) or number <= 0:
        raise UsageError(f"{what} must be a positive time, got {text!r}; use e.g. 30m")
    if m.group(2) is None and number < 60:
        raise UsageError(f"{what} {text} has no unit; did you mean {m.group(1)}m? "
                         f"(units: s, m, h; a plain number is seconds, at least 60)")
    return number * UNIT_SECONDS[m.group(2) or "s"]


def _finite(name: str, value: float | None, *, low: float, high: float,
            low_ok: bool = True) -> None:
    """A numeric option: finite and within [low, high] (``low`` excluded unless low_ok)."""
    if value is None:
        return
    bad = not math.isfinite(value) or value > high or value < low or (
        not low_ok and value == low)
    if bad:
        rel = ">=" if low_ok else ">"
        raise UsageError(f"--{name} {value} is out of range; give a number {rel} {low:g} "
                         f"and <= {high:g}")


@dataclass
class TuneRequest:
    engine: str
    workload: str
    trials: int = 20
    time_budget: str | None = None
    duration: float = 30.0
    warmup: float = 5.0
    clients: int = 4
    scale: int | None = None
    data_dir: str | None = None
    wal_dir: str | None = None
    objective: str = "throughput"
    latency_slo_ms: float | None = None
    allow_unsafe: bool = False
    use_rules: bool = True
    sampler: str = "tpe"
    seed: int | None = None
    storage: str | None = None
    study: str | None = None
    resume: bool = False
    out: str = "tune-out"
    knobs: list[str] = field(default_factory=list)
    flavour: str | None = None
    version: str | None = None
    repeats: int = 3
    heartbeat_s: int = 10
    workdir: str | None = None
    memory_bytes: int | None = None  # the production RAM budget (rules and hardware caps)
    connections: int | None = None  # the production load's peak client connections
    offline: bool = False  # embed plotly in report.html instead of a file beside it
    dsn: str | None = None  # a live server whose max_connections is the production target

    def validate(self) -> None:
        if self.engine not in list_engines():
            raise UsageError(f"engine {self.engine!r} is not one of {', '.join(list_engines())}")
        if self.objective not in METRIC_ATTRS:
            raise UsageError(f"--objective must be one of {', '.join(METRIC_ATTRS)}")
        if self.sampler not in SAMPLERS:
            raise UsageError(f"--sampler must be one of {', '.join(SAMPLERS)}")
        _finite("trials", self.trials, low=1, high=MAX_TRIALS)
        _finite("duration", self.duration, low=0, high=MAX_WINDOW_S, low_ok=False)
        _finite("warmup", self.warmup, low=0, high=MAX_WINDOW_S)
        _finite("clients", self.clients, low=1, high=MAX_CLIENTS)
        _finite("repeats", self.repeats, low=0, high=1000)
        _finite("latency-slo", self.latency_slo_ms, low=0, high=3_600_000, low_ok=False)
        _finite("scale", self.scale, low=1, high=10_000_000)
        _finite("connections", self.connections, low=1, high=262_143)  # PG's own maximum
        _finite("heartbeat", self.heartbeat_s, low=1, high=3600)
        budget = parse_duration(self.time_budget)
        if budget is not None and budget < self.trial_seconds():
            raise UsageError(f"--time-budget {self.time_budget} is shorter than one trial "
                             f"(~{self.trial_seconds():.0f} s of warm-up, measurement and "
                             f"restart); give at least {math.ceil(self.trial_seconds() / 60)}m")

    def trial_seconds(self) -> float:
        """One trial's expected wall time before any was measured."""
        return self.warmup + self.duration + TRIAL_OVERHEAD_S


def _workload(name: str, engine: str) -> Any:
    """The engine's workload ``name`` (``Engine.workload``): its own names first, then the
    shared ones that list it; UsageError for unknown names or another engine's workload."""
    try:
        import pmem_advisor.workloads.registry  # noqa: F401 - every engine's default source
    except ImportError as e:
        raise EnvironmentProblem(f"workloads are not available: {e}") from None
    return get_engine(engine).workload(name)


def _data_dir(req: TuneRequest) -> str:
    from pmem_advisor.instances.base import default_workdir

    return req.data_dir or str(Path(req.workdir) if req.workdir else default_workdir())


def _profile(req: TuneRequest) -> dict:
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess

    # Without --data-dir the trials' data lives in the managed work dir: the rules must see
    # that medium (a rotational virtio disk here), not assume an SSD.
    paths = [p for p in (_data_dir(req), req.wal_dir) if p]
    return probe(SysAccess("/"), paths)


def _recommendation(req: TuneRequest, binary: Any, catalog: Any, kind: str, profile: dict,
                    target: ProductionTarget, storage_engine: str | None = None) -> Any:
    """The rules' recommendation for the production target on this machine's hardware."""
    from pmem_advisor.rules.combine import recommend
    from pmem_advisor.rules.facts import build_facts

    facts = build_facts(profile, engine=req.engine, flavour=binary.flavour,
                        version=binary.version, workload=kind, data_dir=_data_dir(req),
                        wal_dir=req.wal_dir, clients=target.connections,
                        allow_unsafe=req.allow_unsafe, memory_bytes=target.memory_bytes,
                        storage_engine=storage_engine)
    return recommend(facts, catalog=catalog)


def _default_connections(engine: str, kind: str) -> int | None:
    """The rules' connection count for a workload kind when no client count is known."""
    try:
        return get_engine(engine).default_connections(kind)
    except (ImportError, KeyError):
        return None


def _setting_bytes(rec: Any, catalog: Any, name: str) -> int | None:
    for s in getattr(rec, "settings", []):
        if s.name == name and isinstance(s.value, (int, float)) and not isinstance(s.value, bool):
            try:
                unit = catalog.get(name).unit
            except Exception:  # noqa: BLE001 - a knob this version lacks
                unit = None
            per = UNIT_BYTES.get(unit)
            return int(s.value * per) if per else None
    return None


def _free_bytes(path: str) -> int | None:
    probe = path
    while probe and not os.path.exists(probe):  # the data dir may not exist yet
        probe = os.path.dirname(probe.rstrip("/")) or "/"
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return None


def choose_scale(workload: Any, *, scale: int | None, clients: int, buffer_name: str,
                 buffer_bytes: int | None, free_bytes: int | None
                 ) -> tuple[int, list[str], list[str]]:
    """(scale, notes, warnings): by default the data is at least as large as the buffer the
    tuned file sizes, so the memory knobs are tuned on data that does not fit them (as in
    production) rather than on a cached toy; a given ``--scale`` is kept and warned about."""
    from pmem_advisor.rules.memory import gib, mib

    def human_bytes(n: int) -> str:  # approximate data sizes: 1.2 GiB, 128.2 MiB
        return gib(n) if n >= 1 << 30 else mib(n)

    notes: list[str] = []
    warnings: list[str] = []
    per_client = getattr(workload, "scale_per_client", 0)
    if scale is None:
        chosen = workload.default_scale
        why = f"the workload's default {chosen}"
        need = workload.scale_for_bytes(buffer_bytes) if buffer_bytes else None
        if need is not None and need > chosen:
            chosen = need
            why = (f"data at least {buffer_name} ({human_bytes(buffer_bytes)}) as the tuned "
                   "file sizes it, so the buffer cannot hold all of it")
        if per_client and chosen < clients * per_client:
            chosen = clients * per_client
            why += f"; at least {per_client} per client ({clients})"
        data = workload.data_bytes(chosen)
        if free_bytes is not None and data and data * DISK_PER_DATA > free_bytes:
            fit = max(1, int(free_bytes / DISK_PER_DATA) // workload.bytes_per_scale)
            warnings.append(f"warning: scale {chosen} (~{human_bytes(data)}) needs "
                            f"~{human_bytes(int(data * DISK_PER_DATA))} of disk, "
                            f"{human_bytes(free_bytes)} free: using scale {fit}")
            chosen = fit
        size = f"~{human_bytes(workload.data_bytes(chosen))}" if data else "size unknown"
        notes.append(f"data: {workload.name} scale {chosen} ({size}): {why}; loaded once per "
                     "study into the golden copy (--scale to override)")
    else:
        chosen = scale
        data = workload.data_bytes(chosen)
        notes.append(f"data: {workload.name} scale {chosen} (--scale"
                     + (f", ~{human_bytes(data)})" if data else ")"))
        if data is not None and buffer_bytes and data < buffer_bytes:
            need = workload.scale_for_bytes(buffer_bytes)
            warnings.append(f"warning: the data (~{human_bytes(data)} at scale {chosen}) is "
                            f"smaller than {buffer_name} ({human_bytes(buffer_bytes)}) being "
                            "sized: memory knobs are tuned on a cached toy; use --scale "
                            f"{need} or more for representative data")
    if per_client and chosen < clients * per_client:
        warnings.append(f"warning: {workload.name} scale {chosen} < --clients {clients}: "
                        f"clients wait on the same {chosen} branch row(s), so the run "
                        f"measures row-lock contention; use --scale {clients} or more")
    return chosen, notes, warnings


def emulated(profile: dict | None) -> bool:
    return any(p.get("emulated_pmem") for p in (profile or {}).get("paths", []))


def check_out_dir(out: Path) -> None:
    """The output directory exists and takes a file (not read-only, not full): else exit 3
    before anything is measured."""
    from pmem_advisor.fileio import (
        create_exclusive,
        ensure_dir,
        held_dir,
        refuse_planted_entries,
        unlink_at,
    )

    ensure_dir(out)
    refuse_planted_entries(out)  # a link or FIFO at an output's name: exit 3, before measuring
    try:
        with held_dir(out) as dfd:
            fd, probe = create_exclusive(dfd, ".pmem-advisor-probe-")
            try:
                os.write(fd, b"x" * 4096)
                os.fsync(fd)
            finally:
                os.close(fd)
                unlink_at(dfd, probe)
    except OSError as e:
        raise EnvironmentProblem(f"cannot write to --out {out}: {e.strerror or e}",
                                 hint="give a writable directory with free space") from None


def end_reason(e: BaseException | None, stop_reason: str | None) -> tuple[str, str]:
    """(reason, detail) for the study's end record."""
    if e is None:
        return stop_reason or "done", ""
    if isinstance(e, (_SigTerm, Terminated)):
        return "terminated", "SIGTERM"
    if isinstance(e, (KeyboardInterrupt, Interrupted)):
        return "interrupted", "SIGINT (Ctrl-C)"
    if disk_full(e):
        return "disk-full", str(e)[:300]
    return "error", f"{type(e).__name__}: {e}"[:300]


def disk_full(e: BaseException) -> bool:
    return (isinstance(e, OSError) and e.errno == errno.ENOSPC) or \
        "No space left on device" in str(e)


def record_end(study: optuna.Study, reason: str, detail: str) -> None:
    """The study says why this worker's run ended (reports show it); best effort."""
    entry = {"reason": reason, "detail": detail,
             "worker": f"{socket.gethostname()}:{os.getpid()}",
             "at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
    with contextlib.suppress(Exception):  # a full disk may refuse this too
        # One key per run: workers that end together must not read-modify-write one list
        # (that lost an entry when two workers finished at once).
        study.set_user_attr(f"{ENDS_ATTR}.{entry['worker']}.{uuid.uuid4().hex[:8]}", entry)
        study.set_user_attr(END_ATTR, entry)


def run_ends(study: optuna.Study) -> list[dict[str, Any]]:
    """Why each worker's run ended, oldest first (one entry per run of any worker)."""
    attrs = study.user_attrs
    ends = list(attrs.get(ENDS_ATTR) or [])  # a study from before one key per run
    ends += [v for k, v in attrs.items() if k.startswith(ENDS_ATTR + ".")]
    return sorted(ends, key=lambda e: str(e.get("at", "")))


@contextlib.contextmanager
def sigterm_as_interrupt():
    """SIGTERM unwinds like Ctrl-C (trial failed with its reason, servers stopped, scratch
    removed); only in the main thread and where no host handler is installed."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    previous_hook = sys.unraisablehook

    def handler(signum: int, frame: object) -> None:
        raise _SigTerm("terminated by SIGTERM")

    def redeliver(unraisable: Any) -> None:
        # A signal that lands while a finalizer or a weakref callback runs (SQLAlchemy's
        # gc callbacks, found by CI) raises there, and Python only prints "Exception
        # ignored": the run would go on to its end and exit 0. The signal is sent again, so
        # its handler raises at the next point in ordinary code. It is sent from another
        # thread a moment later: sent from here, the handler would raise inside this hook
        # (still inside the finalizer) and be lost again.
        exc_type = getattr(unraisable, "exc_type", None)
        if isinstance(exc_type, type) and issubclass(exc_type, KeyboardInterrupt):
            signum = signal.SIGTERM if issubclass(exc_type, _SigTerm) else signal.SIGINT
            again = threading.Timer(0.05, os.kill, (os.getpid(), signum))
            again.daemon = True
            again.start()
            return
        previous_hook(unraisable)

    signal.signal(signal.SIGTERM, handler)
    sys.unraisablehook = redeliver
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        sys.unraisablehook = previous_hook


def run_recorded(tuner: Tuner, study: optuna.Study, *, cleanup: Any = None
                 ) -> BaseException | None:
    """Run the tuner with SIGTERM unwinding like Ctrl-C, call ``cleanup`` (stop servers,
    remove scratch) on every path, and record in the study why the run ended. Returns the
    exception that ended it (the caller reports and re-raises it), None when it finished."""
    failure: BaseException | None = None
    with sigterm_as_interrupt():
        try:
            tuner.run()
        except BaseException as e:  # noqa: BLE001 - recorded, returned to the caller
            failure = e
        finally:
            if cleanup is not None:
                cleanup()
    reason, detail = end_reason(failure, tuner.stop_reason)
    record_end(study, reason, detail)
    return failure


def shared_room(engine: str, binary: Any, catalog: Any, settings: dict[str, Any],
                budget_bytes: int) -> int | None:
    """Bytes one global buffer may take in the search: the budget's fitted share less what
    the production connections may use at worst (the rules' per-connection settings), so that
    the search does not spend trials on buffers that cannot fit beside them."""
    try:
        from pmem_advisor.rules.memory import BUDGET_SHARE, worst_case

        est = worst_case(engine, settings, flavour=binary.flavour, version=binary.version,
                         catalog=catalog)
    except Exception:  # noqa: BLE001 - no estimate: the plain share of the budget
        return None
    if est is None:  # the engine has no memory model
        return None
    return int(budget_bytes * BUDGET_SHARE - est.per_connection_bytes * est.connections
               - est.background_bytes)


def data_limits(engine: Any, workload: Any, scale: int, catalog: Any, specs: dict[str, Any],
                limits: Limits, rule_bounds: dict[str, Any], *, binary: Any,
                budget_bytes: int) -> Limits:
    """``limits`` with what the data at ``scale`` demands (``Engine.data_bounds``); a bound
    the engine's version cannot take, or a scale no config within the budget can hold, is a
    one-line UsageError before anything is loaded."""
    import dataclasses

    from pmem_advisor.rules.model import human_bytes
    from pmem_advisor.tuner.feasible import by_knob, check_catalog, refuse_unfit_scale

    bounds = engine.data_bounds(workload, scale, catalog, budget_bytes)
    if not bounds:
        return limits
    check_catalog(bounds, specs, binary.version, binary.flavour)
    refuse_unfit_scale(lambda s: engine.data_bounds(workload, s, catalog, budget_bytes),
                       scale, specs,
                       limits, rule_bounds, workload=workload.name,
                       budget=human_bytes(budget_bytes))
    return dataclasses.replace(limits, data_bounds=by_knob(bounds))


def memory_gate(engine: str, flavour: str, version: str, catalog: Any, base: dict[str, Any],
                budget_bytes: int, files_in_memory: bool = False,
                host_cpus: int | None = None) -> Any:
    """A check that a searched config's worst-case memory (every production connection
    running its largest query) fits the production budget: a config that could be OOM-killed
    in production is not worth measuring, however fast it runs with a few clients."""
    from pmem_advisor.rules.memory import worst_case
    from pmem_advisor.rules.model import human_bytes

    def gate(params: dict[str, Any]) -> str | None:
        try:
            est = worst_case(engine, {**base, **params}, flavour=flavour, version=version,
                             catalog=catalog, files_in_memory=files_in_memory,
                             host_cpus=host_cpus)
        except Exception:  # noqa: BLE001 - an estimate we cannot make does not block a trial
            return None
        if est is None or est.total_bytes <= budget_bytes:
            return None
        return (f"worst-case memory {human_bytes(est.total_bytes)} ({est.connections} "
                f"connections) exceeds the {human_bytes(budget_bytes)} production budget")
    return gate


def memory_cgroup(memory_bytes: int | None) -> tuple[Any, str]:
    """(cgroup or None, the line saying whether the budget is enforced): with --memory, every
    managed server runs in a memory cgroup of that size, so a config that does not fit its
    budget fails in the trial as it would in production."""
    if memory_bytes is None:
        return None, "memory budget: not enforced on the trials (no --memory)"
    from pmem_advisor.instances.cgroup import CgroupUnavailable, MemoryCgroup

    try:
        group = MemoryCgroup.create(f"tune-{os.getpid()}", memory_bytes)
    except (CgroupUnavailable, OSError, ValueError) as e:
        return None, f"memory budget not enforced: {e}"
    return group, f"memory budget enforced: {group.describe()}"


def _say(console: Any, text: str) -> None:
    if console is not None:
        console.print(text, highlight=False, markup=False)


def run_tune(req: TuneRequest, *, progress: Any = None, console: Any = None) -> dict[str, Any]:
    """Run (or resume) a study; returns the summary written to ``req.out``.

    Exit paths: ``Terminated`` (143) on SIGTERM, ``Interrupted`` (130) on Ctrl-C, both after
    failing the running trial with its reason and stopping everything; ``EnvironmentProblem``
    (3) when no trial was measured (no config written), on a full disk or an unwritable
    --out. The study records why the run ended (``END_ATTR``)."""
    started = time.monotonic()
    with sigterm_as_interrupt():
        try:
            return _run_tune(req, progress=progress, console=console, started=started)
        except _SigTerm:
            raise Terminated("terminated by SIGTERM; the study is kept: resume with "
                             "--resume") from None


def _run_tune(req: TuneRequest, *, progress: Any, console: Any, started: float
              ) -> dict[str, Any]:
    from pmem_advisor.instances import reap_stale
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.report.build import write_reports
    from pmem_advisor.tuner.managed import check_data_dir

    req.validate()
    budget = parse_duration(req.time_budget)
    workload = _workload(req.workload, req.engine)
    out = Path(req.out)
    check_out_dir(out)
    reaper_notes: list[str] = []
    reap_stale(reaper_notes)  # a killed earlier run's servers and data go first
    for note in reaper_notes:  # what it left alone, and why, is the user's to know (stderr)
        if console is not None:
            console.print(f"note: {note}", markup=False, highlight=False)
        else:
            print(f"note: {note}", file=sys.stderr)
    check_data_dir(req.data_dir, "data dir")
    check_data_dir(req.wal_dir, "wal dir")
    engine = get_engine(req.engine)
    binary = engine.find_binary(req.flavour, req.version)  # exit 3 naming the package
    catalog = load_catalog(req.engine, binary.flavour, binary.version)
    for name in req.knobs:
        catalog.get(name)  # UnknownKnobError with the closest names
    profile = _profile(req)
    target = production_target(
        req.engine, clients=req.clients, connections=req.connections,
        memory_bytes=req.memory_bytes, dsn=req.dsn, profile=profile,
        default_connections=_default_connections(req.engine, workload.kind))
    host = production_target(req.engine, clients=1, profile=profile).memory_bytes
    if target.memory_bytes > host:
        from pmem_advisor.rules.model import human_bytes

        raise UsageError(f"--memory {human_bytes(target.memory_bytes)} is more than this "
                         f"machine's {human_bytes(host)}: the trials run here; size a config "
                         "for a larger host with `pmem-advisor recommend --memory`")
    url = req.storage or default_url(out)
    storage = open_storage(url, heartbeat_s=req.heartbeat_s)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    name = req.study or f"{binary.flavour}-{req.workload}-{req.objective}"
    rec = _recommendation(req, binary, catalog, workload.kind, profile, target,
                          getattr(workload, "storage_engine", None))
    buffer = engine.main_buffer
    scale, notes, warns = choose_scale(
        workload, scale=req.scale, clients=req.clients,
        buffer_name=buffer or "a quarter of the memory budget",
        buffer_bytes=(_setting_bytes(rec, catalog, buffer) if buffer else None)
        or target.memory_bytes // 4,
        free_bytes=_free_bytes(_data_dir(req)))
    keep = PRODUCTION_KNOBS | engine.production_knobs  # other engines name theirs (YAML)
    production = {s.name: s.value for s in rec.settings if s.name in keep}
    in_memory = rec.facts.data_in_memory  # tmpfs: the files the server writes are RAM
    unfit = memory_gate(req.engine, binary.flavour, binary.version, catalog,
                        {s.name: s.value for s in rec.settings}, target.memory_bytes,
                        in_memory, rec.facts.cpus)({})
    if unfit:
        warns.append(f"warning: the rules' own settings do not fit: {unfit}; pass "
                     "--connections (fewer) or a larger --memory")
    specs = {k.name: KnobSpec.from_knob(k) for k in catalog}
    limits = Limits.for_host(target.memory_bytes, req.data_dir, shared_room_bytes=shared_room(
        req.engine, binary, catalog, {s.name: s.value for s in rec.settings},
        target.memory_bytes))
    limits = data_limits(engine, workload, scale, catalog, specs, limits,
                         rec.bounds if req.use_rules else {}, binary=binary,
                         budget_bytes=target.memory_bytes)
    space = build_space(
        specs, engine=req.engine, flavour=binary.flavour, version=binary.version,
        important=list(rec.important), bounds=rec.bounds, priors=rec.priors,
        rule_settings={s.name: s.value for s in rec.settings},
        reasons={s.name: f"{s.rule}: {s.reason}" for s in rec.settings},
        extra_knobs=list(dict.fromkeys([*req.knobs, *engine.workload_knobs(workload)])),
        allow_unsafe=req.allow_unsafe, use_rules=req.use_rules,
        limits=limits,
    )
    notes += space.fix_notes
    cgroup, enforced = memory_cgroup(req.memory_bytes)
    target.notes.append(enforced)
    meta = {"engine": req.engine, "flavour": binary.flavour, "version": binary.version,
            "workload": req.workload, "objective": req.objective,
            "latency_slo_ms": req.latency_slo_ms, "scale": scale, "clients": req.clients,
            "duration_s": req.duration, "warmup_s": req.warmup, "use_rules": req.use_rules,
            "repeats": req.repeats,
            "emulated_pmem": emulated(profile), "target": target.to_dict(),
            "production_settings": production, "data_notes": [*notes, *warns],
            "allow_unsafe": req.allow_unsafe, "memory_bytes": target.memory_bytes,
            "connections": target.connections, "data_dir": _data_dir(req),
            "wal_dir": req.wal_dir, "memory_enforced": enforced}
    knowledge = (trust_region_knowledge(space, list(rec.important), rec.bounds)
                 if req.sampler == "trust-region" else {})
    sampler = make_sampler(req.sampler, seed=req.seed, n_trials=req.trials, **knowledge)
    try:
        study, space = open_study(storage, name, meta, space, resume=req.resume,
                                  sampler=sampler)
    except optuna.exceptions.StorageInternalError as e:
        if cgroup is not None:
            cgroup.remove()
        raise EnvironmentProblem(f"the study storage {redact(url)} cannot be written "
                                 f"(read-only or full disk?): {type(e).__name__}") from None
    except BaseException:
        if cgroup is not None:
            cgroup.remove()
        raise
    from pmem_advisor.tuner.results import PROFILE_ATTR

    study.set_user_attr(PROFILE_ATTR, profile)  # the deploy gate checks the file against it
    for line in [f"server: {binary.flavour} {binary.version} ({binary.bindir})",
                 *target.describe(),
                 *(f"production target: max_connections {v} in the tuned file (trials use "
                   f"at least --clients {req.clients} + {RESERVED_CONNECTIONS})"
                   for n, v in production.items() if n == "max_connections"),
                 *notes, *warns]:
        _say(console, line)
    _say(console, f"study {name!r} in {redact(url)}: searching "
         + ", ".join(f"{k.name} ({k.scope})" for k in space.knobs))
    evaluator = engine.evaluator(EvalRequest(
        binary, workload, scale=scale, clients=req.clients,
        duration=req.duration, warmup=req.warmup, data_dir=req.data_dir, wal_dir=req.wal_dir,
        workdir=req.workdir, catalog=catalog, cgroup=cgroup,
    ))
    observer = progress(space, catalog) if progress else Observer()
    evaluator.on_phase = observer.run_phase
    options = TuneOptions(trials=req.trials, objective=req.objective,
                          latency_slo_ms=req.latency_slo_ms, time_budget_s=budget,
                          repeats=req.repeats, started=started,
                          trial_estimate_s=req.trial_seconds(), warmup_s=req.warmup,
                          memory_gate=memory_gate(req.engine, binary.flavour, binary.version,
                                                  catalog, space.base, target.memory_bytes,
                                                  in_memory, rec.facts.cpus))
    tuner = Tuner(study, space, evaluator, options, observer)
    summary: dict[str, Any] | None = None

    def cleanup() -> None:
        try:
            if hasattr(observer, "close"):
                observer.close()
        finally:
            try:
                evaluator.close()
            finally:
                if cgroup is not None:
                    cgroup.remove()

    failure = run_recorded(tuner, study, cleanup=cleanup)
    reason, detail = end_reason(failure, tuner.stop_reason)
    if any(t.state.is_finished() for t in study.get_trials(deepcopy=False)):
        try:
            summary = write_reports(study, out, offline=req.offline)
        except OSError as e:
            if failure is None:
                raise EnvironmentProblem(f"cannot write the reports to {out}: "
                                         f"{e.strerror or e}") from None
    if failure is not None:
        if isinstance(failure, _SigTerm):
            raise failure
        if isinstance(failure, KeyboardInterrupt):
            raise Interrupted(f"interrupted; the study is kept: resume with --resume "
                              f"(study {name!r} in {redact(url)})") from None
        if disk_full(failure) and not isinstance(failure, EnvironmentProblem):
            raise EnvironmentProblem(f"disk full: {failure}") from None
        raise failure
    summary = summary or {}
    summary["emulated_pmem"] = meta["emulated_pmem"]
    summary.setdefault("end", {"reason": reason, "detail": detail})
    if not summary.get("config_file") and not _any_success(study):
        raise EnvironmentProblem(
            "no trial was measured successfully, so no config was written: "
            + _first_failure(study, reason), hint=f"see {out / 'report.md'}")
    return summary


def _any_success(study: optuna.Study) -> bool:
    from pmem_advisor.tuner.study import measured

    return any(measured(t) is not None for t in study.get_trials(deepcopy=False))


def _first_failure(study: optuna.Study, reason: str) -> str:
    from pmem_advisor.tuner.study import FAILURE_ATTR

    for t in study.get_trials(deepcopy=False):
        if t.user_attrs.get(FAILURE_ATTR):
            return f"trial {t.number}: {t.user_attrs[FAILURE_ATTR]}"
    if reason == "budget":
        return "the time budget ended before a trial finished"
    return "no trial ran"
