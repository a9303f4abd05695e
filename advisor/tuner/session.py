"""A whole `tune` run from plain options: rules -> space -> study -> trials -> reports.

The CLI and the demo call ``run_tune``; everything it starts is stopped on every exit path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna

from pmem_advisor.errors import EnvironmentProblem, Interrupted, UsageError
from pmem_advisor.tuner.limits import Limits
from pmem_advisor.tuner.samplers import SAMPLERS, make_sampler
from pmem_advisor.tuner.space import KnobSpec, build_space
from pmem_advisor.tuner.storage import default_url, open_storage, redact
from pmem_advisor.tuner.study import open_study
from pmem_advisor.tuner.tuner import METRIC_ATTRS, Observer, TuneOptions, Tuner

ENGINES = ("postgres", "mysql")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$")


def parse_duration(text: str | None) -> float | None:
    """'30m', '1h', '90s' or plain seconds -> seconds."""
    if text is None:
        return None
    m = _DURATION.match(str(text))
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"bad time budget {text!r}; use e.g. 90s, 30m or 2h")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]


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
    memory_bytes: int | None = None  # the server's RAM budget (rules and hardware caps)

    def validate(self) -> None:
        if self.engine not in ENGINES:
            raise UsageError(f"engine {self.engine!r} is not one of {', '.join(ENGINES)}")
        if self.trials < 1:
            raise UsageError(f"--trials must be at least 1, got {self.trials}")
        if self.objective not in METRIC_ATTRS:
            raise UsageError(f"--objective must be one of {', '.join(METRIC_ATTRS)}")
        if self.sampler not in SAMPLERS:
            raise UsageError(f"--sampler must be one of {', '.join(SAMPLERS)}")
        for name, v in (("duration", self.duration), ("clients", self.clients)):
            if v <= 0:
                raise UsageError(f"--{name} must be positive, got {v}")
        if self.warmup < 0 or self.repeats < 0:
            raise UsageError("--warmup and --repeats must not be negative")
        if self.latency_slo_ms is not None and self.latency_slo_ms <= 0:
            raise UsageError(f"--latency-slo must be positive, got {self.latency_slo_ms}")
        if self.scale is not None and self.scale < 1:
            raise UsageError(f"--scale must be at least 1, got {self.scale}")
        parse_duration(self.time_budget)


def _workload(name: str, engine: str) -> Any:
    try:
        from pmem_advisor.workloads.registry import get_workload
    except ImportError as e:
        raise EnvironmentProblem(f"workloads are not available: {e}") from None
    w = get_workload(name)  # UsageError for unknown names
    if engine not in w.engines:
        raise UsageError(f"workload {name} runs on {'/'.join(w.engines)}, not on {engine}")
    return w


def _recommendation(req: TuneRequest, binary: Any, catalog: Any, kind: str) -> tuple[Any, dict]:
    """The rules' recommendation for this machine (probed live) and the profile."""
    from pmem_advisor.instances.base import default_workdir
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess
    from pmem_advisor.rules.engine import recommend
    from pmem_advisor.rules.facts import build_facts

    # Without --data-dir the trials' data lives in the managed work dir: the rules must see
    # that medium (a rotational virtio disk here), not assume an SSD.
    data_dir = req.data_dir or str(Path(req.workdir) if req.workdir else default_workdir())
    paths = [p for p in (data_dir, req.wal_dir) if p]
    profile = probe(SysAccess("/"), paths)
    facts = build_facts(profile, engine=req.engine, flavour=binary.flavour,
                        version=binary.version, workload=kind, data_dir=data_dir,
                        wal_dir=req.wal_dir, clients=req.clients, allow_unsafe=req.allow_unsafe,
                        memory_bytes=req.memory_bytes)
    return recommend(facts, catalog=catalog), profile


def emulated(profile: dict | None) -> bool:
    return any(p.get("emulated_pmem") for p in (profile or {}).get("paths", []))


def run_tune(req: TuneRequest, *, progress: Any = None, console: Any = None) -> dict[str, Any]:
    """Run (or resume) a study; returns the summary written to ``req.out``."""
    from pmem_advisor.instances import pick_server, reap_stale
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.report.build import write_reports
    from pmem_advisor.tuner.managed import ManagedEvaluator, check_data_dir

    req.validate()
    budget = parse_duration(req.time_budget)
    workload = _workload(req.workload, req.engine)
    reap_stale()  # a killed earlier run's servers and data go first
    check_data_dir(req.data_dir, "data dir")
    check_data_dir(req.wal_dir, "wal dir")
    binary = pick_server(req.engine, req.flavour, req.version)
    catalog = load_catalog(req.engine, binary.flavour, binary.version)
    for name in req.knobs:
        catalog.get(name)  # UnknownKnobError with the closest names
    out = Path(req.out)
    out.mkdir(parents=True, exist_ok=True)
    url = req.storage or default_url(out)
    storage = open_storage(url, heartbeat_s=req.heartbeat_s)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    name = req.study or f"{binary.flavour}-{req.workload}-{req.objective}"
    rec, profile = _recommendation(req, binary, catalog, workload.kind)
    specs = {k.name: KnobSpec.from_knob(k) for k in catalog}
    space = build_space(
        specs, engine=req.engine, flavour=binary.flavour, version=binary.version,
        important=list(rec.important), bounds=rec.bounds, priors=rec.priors,
        rule_settings={s.name: s.value for s in rec.settings},
        reasons={s.name: f"{s.rule}: {s.reason}" for s in rec.settings},
        extra_knobs=req.knobs, allow_unsafe=req.allow_unsafe, use_rules=req.use_rules,
        limits=Limits.for_host(req.memory_bytes, req.data_dir),
    )
    meta = {"engine": req.engine, "flavour": binary.flavour, "version": binary.version,
            "workload": req.workload, "objective": req.objective,
            "latency_slo_ms": req.latency_slo_ms, "scale": req.scale, "clients": req.clients,
            "duration_s": req.duration, "warmup_s": req.warmup, "use_rules": req.use_rules,
            "emulated_pmem": emulated(profile)}
    sampler = make_sampler(req.sampler, seed=req.seed, n_trials=req.trials)
    study, space = open_study(storage, name, meta, space, resume=req.resume, sampler=sampler)
    if console is not None:
        console.print(f"study {name!r} in {redact(url)}: searching "
                      + ", ".join(f"{k.name} ({k.scope})" for k in space.knobs))
    evaluator = ManagedEvaluator(
        binary, workload, scale=req.scale or workload.default_scale, clients=req.clients,
        duration=req.duration, warmup=req.warmup, data_dir=req.data_dir, wal_dir=req.wal_dir,
        workdir=req.workdir, catalog=catalog,
    )
    observer = progress(space, catalog) if progress else Observer()
    options = TuneOptions(trials=req.trials, objective=req.objective,
                          latency_slo_ms=req.latency_slo_ms, time_budget_s=budget,
                          repeats=req.repeats)
    try:
        Tuner(study, space, evaluator, options, observer).run()
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted; the study is kept: resume with --resume "
                          f"(study {name!r} in {redact(url)})") from None
    finally:
        if hasattr(observer, "close"):
            observer.close()
        evaluator.close()
        if any(t.state.is_finished() for t in study.get_trials(deepcopy=False)):
            summary = write_reports(study, out)
    summary["emulated_pmem"] = meta["emulated_pmem"]
    return summary
