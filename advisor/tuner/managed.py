"""The real evaluator: a managed server per golden copy, a named workload, one config per trial.

One server instance lives at a time. Trials that share their init settings share one golden
copy (initialise + load once, then restore before every trial), so a change of a reinit knob
costs one initialisation the first time and a copy afterwards.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pmem_advisor.errors import AdvisorError, CapabilityMissing, UsageError
from pmem_advisor.instances.affinity import pinned
from pmem_advisor.report.config_file import Line, render_config
from pmem_advisor.tuner.evaluator import Evaluator, Measurement, TrialConfig

GOLDEN = "golden"
# What a workload's raw result says about its measured window (workloads/interim.py).
WINDOW_KEYS = ("warmup_mode", "warmup_cut_s", "steady_detected", "measured_samples", "note")
LOG_LINES = 12
SCRATCH_PREFIX = "pmem-advisor-tune-"
# The benchmark's own needs, applied to trials only (never to the tuned file): enough
# connections for --clients plus the reserve (superuser_reserved_connections, tools).
BENCH_RESERVED_CONNECTIONS = 10


def _reason(e: Exception, log_tail: str = "") -> str:
    """The server's own reason: the error, plus its log's FATAL/ERROR lines when it has any."""
    text = str(e)
    tail = getattr(e, "log_tail", "") or log_tail
    fatal = [ln.strip() for ln in tail.splitlines()
             if any(w in ln for w in ("FATAL", "PANIC", "ERROR", "[ERROR]"))]
    if fatal and fatal[-1] not in text:
        text += f" | {fatal[-1]}"
    return " ".join(text.split())[:500]


class ManagedEvaluator(Evaluator):
    def __init__(
        self,
        binary: Any,  # pmem_advisor.instances.ServerBinary
        workload: Any,  # pmem_advisor.workloads.Workload
        *,
        scale: int,
        clients: int,
        duration: float,
        warmup: float = 0.0,
        data_dir: str | Path | None = None,
        wal_dir: str | Path | None = None,
        workdir: str | Path | None = None,
        catalog: Any = None,
        cgroup: Any = None,  # instances.cgroup.MemoryCgroup: every server runs inside it
        cpus: tuple[set[int], set[int]] | None = None,  # (server, load generator) CPUs
        analyze_after_restore: bool = False,
    ) -> None:
        self.binary, self.workload = binary, workload
        self.engine, self.flavour, self.version = binary.engine, binary.flavour, binary.version
        self.scale, self.clients = scale, clients
        self.duration, self.warmup = duration, warmup
        self.data_dir, self.wal_dir, self.workdir = data_dir, wal_dir, workdir
        self.catalog = catalog
        self.cgroup = cgroup
        # Noise controls (benchmarks/noise.py measures what each is worth): the server and the
        # load generator on separate CPUs; fresh statistics after every restore.
        self.cpus = cpus
        self.analyze_after_restore = analyze_after_restore
        root = Path(workdir) if workdir else Path(tempfile.gettempdir())
        # One scratch root per run (golden copies, load-generator logs), recorded in the
        # instance registry so that the next reaper removes it if this process is SIGKILLed.
        self.scratch = root / f"{SCRATCH_PREFIX}{uuid.uuid4().hex[:8]}"
        self.golden_dir = self.scratch / "golden"
        self._scratch_record: Any = None
        self._inst: Any = None
        self._inst_key: tuple | None = None
        self._loaded: set[tuple] = set()
        self.initialisations = 0  # how many golden copies were built (cost accounting)
        self.on_phase: Callable[..., None] | None = None  # (name, expected_s, then) for display

    def _phase(self, name: str, expected_s: float | None = None, then: str | None = None
               ) -> None:
        if self.on_phase is not None:
            self.on_phase(name, expected_s, then)

    def _make_scratch(self) -> None:
        """Create the scratch root, recorded (with its marker) before anything goes in."""
        if self._scratch_record is not None:
            return
        from pmem_advisor.instances import registry

        self._scratch_record = registry.register_scratch(
            self.scratch, what="tune scratch: golden copies and load-generator logs")
        # Live in this process: the reaper that every create_instance runs skips it (without
        # this it reaped our own scratch mid-run), and atexit/SIGHUP remove it.
        registry.track(_Scratch(self._scratch_record))
        logs = self.scratch / "logs"
        logs.mkdir(mode=0o700)
        self.workload.scratch_dir = str(logs)

    # -- one server per golden copy ------------------------------------------------------------
    def _drop_instance(self) -> None:
        if self._inst is not None:
            inst, self._inst, self._inst_key = self._inst, None, None
            inst.destroy()

    def _new_instance(self, config: TrialConfig) -> Any:
        """A managed server for ``config``'s init settings (engines with their own instance
        class override this)."""
        from pmem_advisor.instances import create_instance

        return create_instance(
            self.binary, self.workdir, data_dir=self.data_dir, wal_dir=self.wal_dir,
            init_settings=dict(config.init_params), golden_dir=self.golden_dir,
        )

    def _load_config(self) -> str:
        """The config the one-off load runs with: the server's defaults."""
        return ""

    def _prepare(self, config: TrialConfig) -> Any:
        """A stopped instance holding fresh golden data for ``config``'s init settings."""
        key = config.init_key()
        if self._inst is not None and self._inst_key != key:
            self._drop_instance()
        if self._inst is None:
            self._make_scratch()
            self.golden_dir.mkdir(parents=True, exist_ok=True)
            self._inst = self._new_instance(config)
            self._inst.cgroup = self.cgroup  # the production memory budget, enforced
            self._inst_key = key
        inst = self._inst
        if inst.has_snapshot(GOLDEN):
            self._phase("restore")
            inst.restore(GOLDEN)
            return inst
        self._phase("initialise and load (once per golden copy)")
        inst.initialize()
        self.initialisations += 1
        inst.start(self._load_config())
        self.workload.load(inst.conninfo, self.scale)
        inst.snapshot(GOLDEN)  # stops the server cleanly
        self._phase("restore")
        inst.restore(GOLDEN)
        return inst

    def bench_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """The trial's params plus what the benchmark itself needs (never in the tuned file):
        max_connections raised to the clients plus the reserve when the config has fewer."""
        out = dict(params)
        need = self.clients + BENCH_RESERVED_CONNECTIONS
        current = out.get("max_connections")
        if current is None:
            default = None
            if self.catalog is not None:
                try:
                    default = self.catalog.get("max_connections").default
                except Exception:  # noqa: BLE001 - a catalog without it: set what we need
                    default = None
            current = default
        if not isinstance(current, (int, float)) or current < need:
            out["max_connections"] = need
        return out

    def config_text(self, config: TrialConfig) -> str:
        lines = [Line(n, v) for n, v in self.bench_params(config.params).items()]
        return render_config(self.engine, lines, catalog=self.catalog,
                             header=["pmem-advisor tune: trial config"])

    # -- the contract ----------------------------------------------------------------------------
    def evaluate(self, config: TrialConfig) -> Measurement:
        try:
            return self._evaluate(config)
        except BaseException:
            self._drop_instance()  # Ctrl-C or nothing measurable: leave no server behind
            raise

    def _evaluate(self, config: TrialConfig) -> Measurement:
        try:
            inst = self._prepare(config)
        except (CapabilityMissing, UsageError):
            raise
        except AdvisorError as e:
            if not config.init_params:  # the defaults cannot even initialise: nothing to measure
                raise
            self._drop_instance()
            return Measurement(ok=False, failure=f"initialisation failed: {_reason(e)}")
        try:
            text = self.config_text(config)
        except UsageError as e:  # a value the catalog cannot render: the config is invalid
            return Measurement(ok=False, failure=str(e))
        logs_before = _log_sizes(inst)
        try:
            self._phase("start")
            with pinned(self.cpus[0] if self.cpus else None):
                inst.start(text)
                if _log_sizes(inst) != logs_before:
                    self._phase("settle the resized redo log")
                    self._settle_logs(inst, text)
        except AdvisorError as e:
            return Measurement(ok=False, failure=f"server refused the config: {_reason(e)}")
        try:
            if self.analyze_after_restore:
                from pmem_advisor.workloads.dbapi import analyze_database

                self._phase("analyze")
                analyze_database(inst.conninfo)
            if self.warmup:
                self._phase("warm-up", self.warmup, then="measure")
            else:
                self._phase("measure", self.duration)
            self.workload.on_interim = self.on_interim
            try:
                with pinned(self.cpus[1] if self.cpus else None):
                    result = self.workload.run(inst.conninfo, clients=self.clients,
                                               duration=self.duration, warmup=self.warmup)
            finally:
                self.workload.on_interim = None
        except CapabilityMissing:
            raise
        except AdvisorError as e:
            alive = inst.is_running()
            tail = "" if alive else inst.log_tail(LOG_LINES)
            what = "workload failed" if alive else "server crashed"
            self._stop(inst)
            return Measurement(ok=False, failure=f"{what}: {_reason(e, tail)}")
        if not inst.is_running():
            tail = inst.log_tail(LOG_LINES)
            self._drop_instance()
            return Measurement(ok=False, failure=f"server crashed: {_reason(Exception(''), tail)}")
        self._stop(inst)
        raw = getattr(result, "raw", None) or {}
        return Measurement(
            ok=True, throughput_tps=result.throughput_tps, latency_ms=dict(result.latency_ms),
            errors=int(result.errors or 0), duration_s=float(result.duration_s or 0.0),
            raw={"workload": result.workload, "clients": result.clients,
                 **{k: raw[k] for k in WINDOW_KEYS if k in raw}},
            interim_tps=list(raw.get("interim_tps") or []),
            stopped_early=bool(raw.get("stopped_early")),
        )

    def _settle_logs(self, inst: Any, text: str) -> None:
        """The server resized its redo log into a fresh, preallocated file: write its blocks
        once (stopped) so the trial measures steady state, as production runs after the log
        has wrapped, not first-write costs (see ``instances.precondition``)."""
        from pmem_advisor.instances.precondition import materialize

        inst.stop()
        for log in inst.log_files():
            materialize(log)
        inst.start(text)

    def _stop(self, inst: Any) -> None:
        try:
            inst.stop()
        except AdvisorError:
            self._drop_instance()  # an unclean stop: next trial starts from a new instance

    def close(self) -> None:
        try:
            self._drop_instance()
        finally:
            if self._scratch_record is not None:
                from pmem_advisor.instances import registry

                registry.untrack(_Scratch(self._scratch_record))
                registry.release_scratch(self._scratch_record)
                self._scratch_record = None
            shutil.rmtree(self.scratch, ignore_errors=True)


class _Scratch:
    """The scratch record as one of this process's live things (registry.track)."""

    def __init__(self, record: Any) -> None:
        self.record, self.id = record, record.id

    def destroy(self) -> None:
        from pmem_advisor.instances import registry

        registry.release_scratch(self.record)


def _log_sizes(inst: Any) -> dict[str, int]:
    return {str(p): p.stat().st_size for p in inst.log_files() if p.exists()}


def check_data_dir(path: str | Path | None, what: str = "data dir") -> None:
    """A user-given data/WAL directory must be new or empty (we never touch user data)."""
    if path is None:
        return
    p = Path(path)
    if p.exists() and (not p.is_dir() or any(p.iterdir())):
        raise UsageError(f"--{what.replace(' ', '-')} {p} is not empty; give a new or empty "
                         "directory")

