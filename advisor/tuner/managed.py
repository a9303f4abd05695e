"""The real evaluator: a managed server per golden copy, a named workload, one config per trial.

One server instance lives at a time, except while configs are measured in turns
(``evaluate_in_turns``): then each config has its own server and data copy, all up at once.
Trials that share their init settings share one golden copy (initialise + load once, then
restore before every trial), so a change of a reinit knob costs one initialisation the first
time and a copy afterwards.
"""

from __future__ import annotations

import math
import os
import shutil
import statistics
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
# Side by side (evaluate_in_turns): the servers' budgets must fit in what the host has free,
# with this much left for the load generator and the OS; the medium must hold the extra data
# copies this many times over (their WAL grows while they run).
MEMORY_HEADROOM_BYTES = 1 << 30
SPACE_FACTOR = 2.0


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

    def _new_instance(self, config: TrialConfig, data_dir: Path | None = None,
                      wal_dir: Path | None = None) -> Any:
        """A managed server for ``config``'s init settings, on the user's data (and WAL)
        directory unless others are given (engines with their own instance class override
        this)."""
        from pmem_advisor.instances import create_instance

        return create_instance(
            self.binary, self.workdir, data_dir=data_dir or self.data_dir,
            wal_dir=wal_dir or self.wal_dir, init_settings=dict(config.init_params),
            golden_dir=self.golden_dir,
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
        refused = self._start(inst, config)
        if refused is not None:
            return Measurement(ok=False, failure=refused)
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
            failure = _run_failure(inst, e)
            self._stop(inst)
            return Measurement(ok=False, failure=failure)
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

    # -- side by side: every config's server up, the workload taking turns -------------------
    def in_turns_refusal(self, configs: list[TrialConfig], turn_s: int) -> str | None:
        if len(configs) < 2:
            return "one config"
        if self.duration < 2 * turn_s:
            return (f"runs of {self.duration:g} s are shorter than two turns of {turn_s} s")
        if len({c.init_key() for c in configs}) > 1:
            return "the configs differ in init-time settings (each needs its own golden copy)"
        if self.cgroup is None:
            return "no memory budget (--memory) to hold each server to"
        need = len(configs) * int(self.cgroup.limit_bytes)
        avail = _mem_available()
        if avail is not None and avail < need + MEMORY_HEADROOM_BYTES:
            return (f"the host has {avail / 2**20:,.0f} MiB available; {len(configs)} servers "
                    f"of {self.cgroup.limit_bytes / 2**20:,.0f} MiB need "
                    f"{(need + MEMORY_HEADROOM_BYTES) / 2**20:,.0f} MiB with headroom")
        if not self.golden_dir.is_dir():
            return "no golden copy yet"
        size = _tree_bytes(self.golden_dir)  # every golden copy: an upper bound of this one
        for given in {d for d in (self.data_dir, self.wal_dir) if d} or {None}:
            where = Path(os.path.realpath(given)).parent if given else Path(
                self.workdir or tempfile.gettempdir())
            free = shutil.disk_usage(where).free
            if free < SPACE_FACTOR * size * (len(configs) - 1):
                return (f"{where} has {free / 2**20:,.0f} MiB free, too little for "
                        f"{len(configs) - 1} more copies of the {size / 2**20:,.0f} MiB data")
        return None

    def evaluate_in_turns(self, configs: list[TrialConfig], turn_s: int) -> list[Measurement]:
        """Config 0 runs on the user's directories, the others on fresh ones beside them (the
        same medium), each server in its own memory cgroup of the budget's size. A server
        paused between its turns does nothing (SIGSTOP): its checkpoints and vacuums run in
        its own turns, never in another config's. The throughput is that of all turns; each
        latency percentile is the median of the turns' percentiles."""
        why = self.in_turns_refusal(configs, turn_s)
        if why is not None:
            raise UsageError(f"cannot measure these configs in turns: {why}")
        turns = max(1, math.ceil(self.duration / turn_s))
        insts: list[Any] = []
        extras: list[tuple[Any, Any]] = []  # (instance, cgroup) of configs 1..n
        failures: dict[int, str] = {}
        results: dict[int, list[Any]] = {k: [] for k in range(len(configs))}
        mode = getattr(self.workload, "warmup_mode", None)
        try:
            if mode is not None:  # a turn of a warm server is measured whole
                self.workload.warmup_mode = "fixed"
            for k, config in enumerate(configs):
                inst = (self._prepare(config) if k == 0 else
                        self._turn_instance(config, k, extras))
                insts.append(inst)
                refused = self._start(inst, config)
                if refused is not None:
                    failures[k] = refused
                    continue
                if self.warmup:
                    self._phase(f"warm-up of config {k + 1} of {len(configs)}", self.warmup)
                    failures.update(self._turn(inst, k, self.warmup, None))
                inst.pause()
            for turn in range(turns):
                live = [k for k in range(len(configs)) if k not in failures]
                if not live:
                    break
                shift = turn % len(live)  # each config goes first as often as the others
                for k in live[shift:] + live[:shift]:
                    self._phase(f"turn {turn + 1} of {turns}: config {k + 1}", turn_s)
                    failures.update(self._turn(insts[k], k, turn_s, results[k]))
        finally:
            if mode is not None:
                self.workload.warmup_mode = mode
            for inst in insts:
                inst.resume()
            for inst, group in extras:
                try:
                    inst.destroy()
                finally:
                    if group is not None:
                        group.remove()
            if insts:
                if insts[0].is_running():
                    self._stop(insts[0])
                else:
                    self._drop_instance()
        return [Measurement(ok=False, failure=failures[k]) if k in failures
                else _turns_measurement(results[k], turn_s, len(configs))
                for k in range(len(configs))]

    def _turn(self, inst: Any, k: int, seconds: float, into: list[Any] | None
              ) -> dict[int, str]:
        """One turn of the workload on ``inst`` (resumed for it, paused after it); the
        config's failure, if the workload failed or the server died."""
        inst.resume()
        try:
            with pinned(self.cpus[1] if self.cpus else None):
                result = self.workload.run(inst.conninfo, clients=self.clients,
                                           duration=seconds)
        except CapabilityMissing:
            raise
        except AdvisorError as e:
            failure = _run_failure(inst, e)
            if inst.is_running():
                inst.stop()
            return {k: failure}
        if not inst.is_running():
            return {k: f"server crashed: {_reason(Exception(''), inst.log_tail(LOG_LINES))}"}
        inst.pause()
        if into is not None:
            into.append(result)
        return {}

    def _turn_instance(self, config: TrialConfig, k: int, extras: list[tuple[Any, Any]]
                       ) -> Any:
        """A server for config ``k`` on fresh directories beside the user's, restored from
        the golden copy; its own memory cgroup of the budget's size."""
        from pmem_advisor.fileio import held_dir, make_temp_dir, remove_tree
        from pmem_advisor.instances.cgroup import MemoryCgroup

        made: list[Path] = []

        def beside(given: str | Path | None, what: str) -> Path | None:
            if not given:
                return None
            # a new name of ours made by descriptor, even in a directory others can write;
            # 0711: the server user passes through, nobody lists or writes
            parent = Path(os.path.realpath(given)).parent
            with held_dir(parent) as pfd:
                fd, name = make_temp_dir(pfd, f".pmem-advisor-turn{k}-", 0o711)
                os.close(fd)
            made.append(parent / name)
            return parent / name / what

        try:
            inst = self._new_instance(config, data_dir=beside(self.data_dir, "data"),
                                      wal_dir=beside(self.wal_dir, "wal"))
        except BaseException:
            for d in made:
                remove_tree(d)
            raise
        extras.append((inst, None))  # destroyed by the caller whatever happens next
        for d in made:
            inst.add_scratch(d)
        group = MemoryCgroup.create(f"turn{k}-{os.getpid()}", int(self.cgroup.limit_bytes))
        extras[-1] = (inst, group)
        inst.cgroup = group
        self._phase("restore")
        inst.restore(GOLDEN)
        return inst

    def _start(self, inst: Any, config: TrialConfig) -> str | None:
        """Start ``inst`` with ``config``; None, or why the server (or the catalog) refused."""
        try:
            text = self.config_text(config)
        except UsageError as e:  # a value the catalog cannot render: the config is invalid
            return str(e)
        logs_before = _log_sizes(inst)
        try:
            self._phase("start")
            with pinned(self.cpus[0] if self.cpus else None):
                inst.start(text)
                if _log_sizes(inst) != logs_before:
                    self._phase("settle the resized redo log")
                    self._settle_logs(inst, text)
        except AdvisorError as e:
            return f"server refused the config: {_reason(e)}"
        return None

    def _settle_logs(self, inst: Any, text: str) -> None:
        """The server resized its redo log into a fresh, preallocated file: write its blocks
        once (stopped) so the trial measures steady state, as production runs after the log
        has wrapped, not first-write costs (see ``instances.precondition``)."""
        from pmem_advisor.instances.precondition import materialize

        inst.stop()
        for log in inst.log_files():
            # the instance's own server uid (an instance without one: the shared user's)
            user = getattr(inst, "user", None)
            if user is None:
                materialize(log)
            else:
                materialize(log, owners=(user.uid,))
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


def _run_failure(inst: Any, e: Exception) -> str:
    """Why a run failed: the workload's error, or the server's crash with its log's reason."""
    if inst.is_running():
        return f"workload failed: {_reason(e)}"
    return f"server crashed: {_reason(e, inst.log_tail(LOG_LINES))}"


def _turns_measurement(results: list[Any], turn_s: int, side_by_side: int) -> Measurement:
    seconds = [float(r.duration_s or turn_s) for r in results]
    total = sum(seconds)
    tps = sum(r.throughput_tps * s for r, s in zip(results, seconds, strict=True)) / total
    latency = {}
    for p in ("p50", "p95", "p99"):
        values = [r.latency_ms.get(p) for r in results if r.latency_ms.get(p) is not None]
        latency[p] = statistics.median(values) if values else None
    interim = [float(x) for r in results for x in (r.raw or {}).get("interim_tps") or []]
    return Measurement(
        ok=True, throughput_tps=tps, latency_ms=latency,
        errors=sum(int(r.errors or 0) for r in results), duration_s=total,
        raw={"workload": results[0].workload, "clients": results[0].clients,
             "turns": len(results), "turn_s": turn_s, "side_by_side": side_by_side,
             "turn_tps": [round(float(r.throughput_tps), 1) for r in results]},
        interim_tps=interim)


def _mem_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


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

