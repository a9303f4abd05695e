"""Real scenarios: a managed server, a workload, a placement; the spaces and the tuner's loop.

Everything that needs the product's other packages (probe, rules, catalogs, tuner, managed
instances) is imported here, lazily, so that the harness core and its tests need none of it.
A piece that is missing makes its arm or scenario say why instead of vanishing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.tuner.evaluator import Evaluator, TrialConfig

from .space import Param, SearchSpace

DATA_FILE = Path(__file__).with_name("scenarios.yaml")
# The rules know workload kinds, not workload names.
BOUND_CAP = float(2**53)
RULES_WORKLOAD = {"pgbench-tpcb": "oltp", "tpcc": "oltp", "sysbench-oltp-write-only": "oltp"}


@dataclass(frozen=True)
class Scenario:
    name: str
    engine: str
    flavour: str
    version: str
    workload: str
    placement: str  # shm | disk
    scale: int = 1
    clients: int = 4

    @property
    def emulated_pmem(self) -> bool:
        return self.placement == "shm"

    def title(self) -> str:
        where = ("data+WAL on /dev/shm (emulated PMEM)" if self.emulated_pmem
                 else "data+WAL on disk")
        return (f"{self.flavour} {self.version} {self.workload} (scale {self.scale}, "
                f"{self.clients} clients), {where}")


def load_data(path: Path = DATA_FILE) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    data["scenarios"] = [Scenario(**s) for s in data["scenarios"]]
    return data


def select(data: dict[str, Any], names: list[str] | None) -> list[Scenario]:
    by_name = {s.name: s for s in data["scenarios"]}
    if not names:
        return list(data["scenarios"])
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError(f"unknown scenario {', '.join(unknown)} (known: {', '.join(by_name)})")
    return [by_name[n] for n in names]


@dataclass
class ScenarioContext:
    """What the runner needs for one scenario; ``close`` removes what ``open_context`` made."""

    scenario: Scenario
    evaluator: Evaluator
    space: SearchSpace
    advisor_loop: Callable[[Evaluator, int, int], None] | None = None
    advisor_note: str = ""
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    cleanup: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        try:
            self.evaluator.close()
        finally:
            for fn in reversed(self.cleanup):
                fn()
            self.cleanup.clear()


# ---------------------------------------------------------------- spaces
def harness_space(tuner_space: Any, *, rules: TrialConfig | None, rules_note: str,
                  durability_off: dict[str, Any], source: str) -> SearchSpace:
    """The tuner's ``SearchSpace`` as the harness's (same knobs, ranges and log scales).

    Bounds beyond +-2**53 (catalog maxima like DBL_MAX or 2**64) are capped there for every
    arm alike: ConfigSpace cannot normalise such ranges, and no knob means anything there."""
    params = []
    for k in tuner_space.knobs:
        if k.choices is not None:
            params.append(Param(k.name, "categorical", choices=tuple(k.choices),
                                init=k.scope == "reinit"))
        else:
            low, high = (max(min(v, BOUND_CAP), -BOUND_CAP) for v in (k.low, k.high))
            params.append(Param(k.name, "float" if k.type == "real" else "int", low=low,
                                high=high, log=k.log, init=k.scope == "reinit"))
    return SearchSpace(tuple(params), TrialConfig(), rules, rules_note, durability_off, source)


def rule_values(rec: Any, catalog: Any) -> dict[str, Any]:
    """Each rule setting in the knob's base unit: parsed from the text the rules wrote, which
    is what a user would put in the config file."""
    out = {}
    for s in rec.settings:
        out[s.name] = catalog.get(s.name).parse(s.text) if s.name in catalog else s.value
    return out


def rules_config(rec: Any, catalog: Any) -> TrialConfig:
    """The rules-only config: every setting ``recommend`` made, reinit knobs apart."""
    params, init = {}, {}
    for name, value in rule_values(rec, catalog).items():
        scope = catalog.get(name).scope if name in catalog else "restart"
        (init if scope == "reinit" else params)[name] = value
    return TrialConfig(params=params, init_params=init)


# ---------------------------------------------------------------- placement
def make_dirs(scn: Scenario, disk_dir: str) -> tuple[Path, Callable[[], None]]:
    base = "/dev/shm" if scn.emulated_pmem else disk_dir
    if not os.path.isdir(base):
        raise EnvironmentProblem(f"{base} does not exist: cannot place {scn.name}")
    root = Path(tempfile.mkdtemp(prefix=f"pmem-bench-{scn.name}-", dir=base))
    os.chmod(root, 0o755)  # the unprivileged server user must reach its data below it
    return root, lambda: shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------- the real context
def open_context(scn: Scenario, cfg: dict[str, Any], *, duration: float, warmup: float,
                 disk_dir: str, scale: int | None = None,
                 clients: int | None = None) -> ScenarioContext:
    """Probe the placement, ask the rules, build both spaces, start the managed evaluator."""
    try:
        from pmem_advisor.instances import pick_server
        from pmem_advisor.knobs.catalog import load_catalog
        from pmem_advisor.probes.profile import probe
        from pmem_advisor.probes.sysaccess import SysAccess
        from pmem_advisor.rules.engine import recommend
        from pmem_advisor.rules.facts import build_facts
        from pmem_advisor.tuner.space import KnobSpec, build_space
    except ImportError as exc:  # a piece of the product is not there: say which
        raise EnvironmentProblem(f"cannot set up {scn.name}: {exc}") from exc

    scn = Scenario(**{**scn.__dict__, "scale": scale or scn.scale,
                      "clients": clients or scn.clients})
    root, remove_root = make_dirs(scn, disk_dir)
    cleanup = [remove_root]
    try:
        data_dir = root / "data"
        binary = pick_server(scn.engine, scn.flavour, scn.version)
        profile = probe(SysAccess("/"), [str(root)])
        catalog = load_catalog(scn.engine, scn.flavour, binary.version)
        specs = {k.name: KnobSpec.from_knob(k) for k in catalog}
        common = {"engine": scn.engine, "flavour": scn.flavour, "version": catalog.version}
        # The peers' space: catalog knobs and ranges, no rules (what `tune --no-rules` does).
        peers = build_space(specs, **common, important=[], use_rules=False)
        rules_note, rec, rules = "", None, None
        try:
            facts = build_facts(profile, **common, workload=RULES_WORKLOAD.get(scn.workload,
                                "oltp"), data_dir=str(root), wal_dir=str(root),
                                clients=scn.clients)
            rec = recommend(facts)
            rules = rules_config(rec, catalog)
        except Exception as exc:  # shown in the report: the rules arm says why it did not run
            rules_note = f"rules failed: {type(exc).__name__}: {exc}"
        durability = dict((cfg.get("durability_off") or {}).get(scn.flavour) or {})
        space = harness_space(peers, rules=rules, rules_note=rules_note,
                              durability_off=durability,
                              source="tuner.build_space(use_rules=False) over the catalog")
        try:
            evaluator = make_evaluator(scn, binary, root=root, duration=duration,
                                       warmup=warmup, catalog=catalog)
        except ImportError as exc:  # a piece of the product not built yet: say which
            raise EnvironmentProblem(f"cannot measure {scn.name}: {exc}") from exc
        ctx = ScenarioContext(scn, evaluator, space, cleanup=cleanup)
        ctx.meta = {"knobs": [p.name for p in space.params], "data_dir": str(data_dir),
                    "server": f"{binary.flavour} {binary.version} ({binary.source})",
                    "rules_settings": dict(rules.params) if rules else None}
        if rec is None:
            ctx.advisor_note = rules_note
        else:
            ctx.advisor_loop = advisor_loop(scn, specs, common, rec, rule_values(rec, catalog))
        return ctx
    except BaseException:
        for fn in reversed(cleanup):
            fn()
        raise


def make_evaluator(scn: Scenario, binary: Any, *, root: Path, duration: float,
                   warmup: float, catalog: Any = None) -> Evaluator:
    """The tuner's managed evaluator (one server per golden copy, restored before each trial).
    Golden copies live under ``root`` too, on the scenario's own medium."""
    from pmem_advisor.tuner.managed import ManagedEvaluator
    from pmem_advisor.workloads import get_workload

    return ManagedEvaluator(
        binary, get_workload(scn.workload), scale=scn.scale, clients=scn.clients,
        duration=duration, warmup=warmup, data_dir=root / "data", wal_dir=root / "wal",
        workdir=root, catalog=catalog,
    )


def advisor_loop(scn: Scenario, specs: dict, common: dict, rec: Any,
                 settings: dict[str, Any]) -> Callable[[Evaluator, int, int], None]:
    """`pmem-advisor tune`'s own loop over its rule-shaped space for this scenario."""

    def run(evaluator: Evaluator, budget: int, seed: int) -> None:
        from pmem_advisor.tuner.space import build_space

        space = build_space(
            specs, **common, important=list(rec.important), bounds=dict(rec.bounds),
            priors=dict(rec.priors), rule_settings=settings,
            use_rules=True,
        )
        run_tuner(evaluator, space, {**common, "workload": scn.workload}, budget, seed)

    return run


def run_tuner(evaluator: Evaluator, space: Any, meta: dict[str, Any], budget: int,
              seed: int) -> None:
    """The tuner's loop (baselines enqueued, cost grouping, its TPE) in an in-memory study.
    ``repeats=0``: its final re-measurement would spend trials outside the budget every
    other arm is held to."""
    import optuna

    from pmem_advisor.tuner.samplers import make_sampler
    from pmem_advisor.tuner.study import open_study
    from pmem_advisor.tuner.tuner import TuneOptions, Tuner

    sampler = make_sampler("tpe", seed=seed, n_trials=budget)
    study, space = open_study(optuna.storages.InMemoryStorage(), f"bench-{seed}",
                              {**meta, "objective": "throughput"}, space, resume=False,
                              sampler=sampler)
    Tuner(study, space, evaluator, TuneOptions(trials=budget, repeats=0)).run()
