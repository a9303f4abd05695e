"""`make bench`: the tuner against its peers on surrogate servers fitted on measured data.

    python -m benchmarks.run [--scenario NAME] [--seeds N] [--budgets 5,10,20,50] [--out DIR]

Per scenario with a dataset in benchmarks/data/ (collected by ``benchmarks.collect``): fit the
surrogate (random forest or gradient boosting by cross-validation; refused when its held-out
quality is under the thresholds of ``benchmarks.harness.surrogate``), then run every arm (default,
rules, random, tpe, smac, pmem-advisor, ceiling) for every seed, interleaved, against it.
Prints a Markdown table per scenario and the targets of issue 13; writes DIR/report.md,
DIR/results.json and a convergence plot DIR/<scenario>.png. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from pmem_advisor.errors import EXIT_INTERNAL, AdvisorError, Interrupted, UsageError
from pmem_advisor.fileio import write_file_safely
from pmem_advisor.tuner.evaluator import Measurement, TrialConfig

from . import real_target, validate
from .harness import dataset, production, report, stats, surrogate
from .harness.arms import (
    ARM_NAMES,
    Arm,
    DefaultArm,
    FixedArm,
    OptunaArm,
    RulesArm,
    SearchArm,
    SmacArm,
    objective,
)
from .harness.production import ProductionMemory
from .harness.runner import run_interleaved
from .harness.space import Param, SearchSpace, clamp, optuna_distributions

BUDGETS = (5, 10, 20, 50)
SEEDS = 10
# The safe ceiling: the best safe config any searching arm finds with ten times the largest
# budget. SMAC3 and pmem-advisor (a forest refitted every trial) are left out of it for time;
# three seeds, the median best of each arm, the best arm's.
CEILING_FACTOR = 10
CEILING_SEEDS = 3
CEILING_ARMS = ("random", "tpe")
EMULATION_NOTE = ("/dev/shm is tmpfs (DRAM-backed); it stands in for persistent memory here, "
                  "as the papers' memmap= emulation did. Real PMEM is slower, above all for "
                  "writes.")
COST = {"session": 0, "reload": 1, "restart": 2, "reinit": 3}
UNSET: Any = object()  # "not computed yet" (None means: cannot be computed here)


# ------------------------------------------------------------------ the space from provenance
def harness_space(data: surrogate.ScenarioData,
                  memory: ProductionMemory | None = None) -> SearchSpace:
    """The dataset's collected space, narrowed by ``memory`` (the product's limits at the
    scenario's budget) where those are tighter: what ``tune`` would search, for every arm."""
    params = []
    for d in data.provenance.get("space") or []:
        init = d.get("scope") == "reinit"
        if d.get("choices") is not None:
            params.append(Param(d["name"], "categorical", choices=tuple(d["choices"]), init=init))
        else:
            kind = "float" if d.get("type") == "real" else "int"
            high = d["high"]
            cap = memory.cap(d["name"]) if memory is not None else None
            if cap is not None and cap < high:
                high = max(d["low"], int(cap) if kind == "int" else cap)
            params.append(Param(d["name"], kind, low=d["low"], high=high,
                                log=bool(d.get("log")), init=init))
    rules = data.fixed_config("rules")
    # the defaults as measured: with the smallest fix that holds the data, when they needed one
    default = data.fixed_config("default") or TrialConfig()
    return SearchSpace(tuple(params), default, rules,
                       "" if rules else "no rules-only config in the dataset", {},
                       source=data.provenance.get("space_source", "dataset provenance"))


def tuner_knobs(data: surrogate.ScenarioData) -> list[Any]:
    """The collected space as the tuner's SpaceKnobs (what ``transfer`` works on)."""
    from pmem_advisor.tuner.space import SpaceKnob

    out = []
    for d in data.provenance.get("space") or []:
        out.append(SpaceKnob(d["name"], d.get("type", "int"), d.get("scope", "restart"),
                             d.get("default"), low=d.get("low"), high=d.get("high"),
                             choices=d.get("choices"), log=bool(d.get("log"))))
    return out


# ------------------------------------------------------------------ the arms
class MeasuredArm(FixedArm):
    """A fixed point exactly as the dataset measured it (the unsafe ceiling)."""

    def __init__(self, name: str, config: TrialConfig | None, note: str, why_missing: str):
        super().__init__(name, note)
        self._fixed, self.why_missing = config, why_missing

    def config_for(self, space: SearchSpace) -> TrialConfig | None:
        return self._fixed

    def prepare(self, space: SearchSpace) -> None:
        self.unavailable = None if self._fixed is not None else self.why_missing


class AdvisorArm(SearchArm):
    """pmem-advisor's search: the trust-region sampler centred on the rules-only config, knobs
    ranked by knowledge, warm starts from similar scenarios (never this one)."""

    name = "pmem-advisor"

    def __init__(self, *, base: TrialConfig, centre: dict[str, Any], importance: list[str],
                 bounds: dict[str, Any], warm_starts: list[dict[str, Any]], note: str,
                 score: Any = None):
        super().__init__()
        self.base, self.centre, self.importance = base, centre, importance
        self.bounds, self.warm, self.note, self.score = bounds, warm_starts, note, score

    def start(self, space: SearchSpace, budget: int, seed: int) -> None:
        import optuna

        from pmem_advisor.tuner.samplers import make_sampler

        super().start(space, budget, seed)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = make_sampler("trust-region", seed=seed, n_trials=budget, centre=self.centre,
                               importance=self.importance, warm_starts=self.warm,
                               bounds=self.bounds, score=self.score)
        self.study = optuna.create_study(direction="maximize", sampler=sampler)
        self.dists = optuna_distributions(space)

    def ask(self) -> TrialConfig:
        self.trial = self.study.ask(self.dists)
        sampled = self.space.config(dict(self.trial.params))
        return TrialConfig(params={**self.base.params, **sampled.params},
                           init_params={**self.base.init_params, **sampled.init_params})

    def observe(self, config: TrialConfig, measurement: Measurement) -> None:
        self.study.tell(self.trial, objective(measurement))


def current_rules(scn: dict[str, Any]) -> dict[str, Any] | None:
    """Today's rules for the scenario (this host probed at the scenario's path, its memory
    budget, CPUs and clients): the config, bounds and importance ``tune`` would give the trust
    region now. None when the scenario's path or server catalog is not here."""
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess
    from pmem_advisor.rules.combine import recommend
    from pmem_advisor.rules.facts import build_facts
    from pmem_advisor.workloads.registry import get_workload

    from .collect import rules_config
    from .harness.scenario import validate as validate_scenario

    try:
        s = validate_scenario(dict(scn))
        if not os.path.isdir(s.path):
            return None
        catalog = load_catalog(s.engine, s.flavour, s.version)
        common = {"engine": s.engine, "flavour": s.flavour, "version": catalog.version}
        workload = get_workload(s.workload, engine=s.engine, **s.workload_options)
        facts = build_facts(probe(SysAccess("/"), [s.path]), **common,
                            workload=s.rules_workload, data_dir=s.path, wal_dir=s.path,
                            memory_bytes=s.memory_bytes, cpus=s.cpus, clients=s.clients,
                            storage_engine=getattr(workload, "storage_engine", None))
        rec = recommend(facts)
        memory = production.from_recommendation(rec, catalog, s.engine, s.flavour,
                                                s.memory_bytes)
    except (AdvisorError, OSError, KeyError, ValueError):
        return None
    cfg = rules_config(rec, catalog)
    return {"params": cfg.params, "init_params": cfg.init_params,
            "bounds": {k: list(v) for k, v in rec.bounds.items()},
            "important": list(rec.important), "fired": list(rec.fired), "memory": memory}


def scenario_class(name: str) -> str | None:
    """A dataset's workload class as its scenario (benchmarks/scenarios/NAME.yaml) defines it
    now; None when the scenario is gone or unreadable (the dataset's record then decides)."""
    from .harness.scenario import SCENARIO_DIR
    from .harness.scenario import load as load_scenario

    path = SCENARIO_DIR / f"{name}.yaml"
    try:
        return load_scenario(path).workload_class if path.is_file() else None
    except (AdvisorError, OSError, ValueError):
        return None


def advisor_arm(data: surrogate.ScenarioData, space: SearchSpace, data_dir: Path,
                use_transfer: bool = True, now: Any = UNSET) -> tuple[AdvisorArm, list[str]]:
    """The pmem-advisor arm for this scenario, and notes on what knowledge it got: today's
    rules (their config as the centre, their bounds and importance), the dataset's rules when
    they cannot be computed here."""
    from pmem_advisor.tuner import transfer
    from pmem_advisor.tuner.transfer import clip_to_bounds

    prov = data.provenance
    scn = prov.get("scenario") or {}
    rules = prov.get("rules") or {}
    if now is UNSET:
        now = current_rules(scn)
    in_space = {p.name: p for p in space.params}
    if now and any(n in in_space for n in [*now["params"], *now["bounds"]]):
        rules = now
    in_space = {p.name: p for p in space.params}
    rule_params = {**(rules.get("params") or {}), **(rules.get("init_params") or {})}
    centre = {n: clamp(in_space[n], v) for n, v in rule_params.items() if n in in_space}
    centre = {n: v for n, v in centre.items() if v is not None}
    base = TrialConfig(
        params={n: v for n, v in (rules.get("params") or {}).items() if n not in in_space},
        init_params={n: v for n, v in (rules.get("init_params") or {}).items()
                     if n not in in_space})
    notes = []
    knobs = tuner_knobs(data)
    sources = []
    if use_transfer:
        sources = transfer.similar_sources(data_dir, engine=scn.get("engine", ""),
                                           workload_class=(scenario_class(data.name)
                                                           or scn.get("workload_class", "")),
                                           exclude={data.name}, class_of=scenario_class)
    learnt = transfer.Transfer.fit(knobs, sources)
    warm = learnt.warm_starts(2, centre=centre, bounds=rules.get("bounds"))
    # Defaults as the last warm start: the rules can lose to them on a host they misjudge.
    # Not where the rules' bounds exclude them: the sampler would clip them into the bounds,
    # a point that is neither the defaults nor the rules (MariaDB at 1 GiB: a 256 MB pool, a
    # 128 MB redo log) and a trial of the first few spent on it; the defaults are measured as
    # their own baseline anyway.
    default = {}
    for k in knobs:
        if k.name in in_space and k.default is not None:
            try:
                default[k.name] = k.coerce(k.default)
            except (TypeError, ValueError):
                continue  # a default the range cannot hold (an "auto" value)
    bounds = rules.get("bounds") or {}
    if default and default != centre and all(
            clip_to_bounds(k, default[k.name], bounds) == default[k.name]
            for k in knobs if k.name in default):
        warm.append(default)
    important = [n for n in rules.get("important") or [] if n in in_space]
    by_transfer = sorted(learnt.importance, key=lambda n: -learnt.importance[n])
    scope = {k.name: COST.get(k.scope, 2) for k in knobs}
    rest = sorted((n for n in in_space if n not in important and n not in by_transfer),
                  key=lambda n: scope.get(n, 2))
    importance = [*important, *[n for n in by_transfer if n not in important], *rest]
    if sources:
        notes.append(f"pmem-advisor warm-started from {', '.join(learnt.sources)} "
                     "(same engine and workload class; never its own dataset)")
    else:
        notes.append("pmem-advisor had no similar scenario to learn from (no transfer)")
    notes.append("pmem-advisor: " + ("today's rules (centre, bounds, importance)"
                                      if rules is now else "the dataset's rules"))
    note = ("trust-region sampler (advisor/tuner/samplers.py) centred on the rules-only config,"
            f" rules' bounds, knob order {', '.join(importance[:4])}...; "
            f"{len(warm)} warm start(s); local moves alternating with global points over the "
            "bounds, ranked by the transfer model, then by a forest's expected improvement on "
            "its own trials")
    # trial 1 is the rules' config exactly: the server's default where the rules set nothing
    # (not a random value: the sampler draws the knobs its centre lacks)
    centre = {**{n: v for n, v in default.items() if n not in centre}, **centre}
    return AdvisorArm(base=base, centre=centre, importance=importance,
                      bounds=rules.get("bounds") or {}, warm_starts=warm, note=note,
                      score=learnt.score if learnt.model is not None else None), notes


def make_arms(names: list[str], data: surrogate.ScenarioData, space: SearchSpace,
              data_dir: Path, now: Any = UNSET) -> tuple[list[Arm], list[str]]:
    notes: list[str] = []
    arms: list[Arm] = []
    for name in ARM_NAMES:
        if name not in names:
            continue
        if name == "default":
            arms.append(DefaultArm())
        elif name == "rules":
            arms.append(RulesArm())
        elif name in ("random", "tpe"):
            arms.append(OptunaArm(name, name))
        elif name == "smac":
            arms.append(SmacArm())
        elif name == "pmem-advisor":
            arm, more = advisor_arm(data, space, data_dir, now=now)
            arms.append(arm)
            notes.extend(more)
        elif name == "ceiling":
            arms.append(MeasuredArm("ceiling", data.fixed_config("ceiling"),
                                    data.provenance.get("ceiling", "durability off"),
                                    "no ceiling measured in the dataset"))
    return arms, notes


# ------------------------------------------------------------------ one scenario
def targets(rows: list[stats.ArmStats], safe: float | None = None) -> list[str]:
    """Issue 13's and 26's targets, each with its figure: met, missed or not measurable. The
    ceiling target is against the safe ceiling (``safe_ceiling``); the unsafe one (durability
    off) stays as a reference line."""
    def med(name: str, budget: int | None = None) -> float | None:
        cands = [r for r in rows if r.name == name and r.available
                 and (budget is None or r.budget == budget)]
        return cands[0].best_tps_median if cands else None

    out = []
    d, r, c = med("default"), med("rules"), med("ceiling")
    a5, a20, s50 = med("pmem-advisor", 5), med("pmem-advisor", 20), med("smac", 50)
    best50 = max((x.best_tps_median or 0) for x in rows if x.available and x.searching
                 and x.budget == 50) if any(x.budget == 50 for x in rows) else None

    def line(label: str, ok: bool | None, figure: str) -> str:
        verdict = "n/a" if ok is None else ("MET" if ok else "MISSED")
        return f"target {label}: {verdict} ({figure})"

    out.append(line("rules-only >= defaults", None if not (d and r) else r >= d,
                    f"{r / d:.2f}x" if d and r else "not measured"))
    out.append(line("pmem-advisor@5 >= smac@50", None if not (a5 and s50) else a5 >= s50,
                    f"{a5 / s50:.2f}x{by_seed(rows, ('pmem-advisor', 5), ('smac', 50))}"
                    if a5 and s50 else "not measured"))
    out.append(line("pmem-advisor@20 >= 0.9x best arm@50",
                    None if not (a20 and best50) else a20 >= 0.9 * best50,
                    f"{a20 / best50:.2f}x" if a20 and best50 else "not measured"))
    out.append(line("pmem-advisor@20 >= 0.9x safe ceiling", None if not (a20 and safe) else
                    a20 >= 0.9 * safe, f"{a20 / safe:.2f}x of {safe:,.0f} tps" if a20 and safe
                    else "not measured"))
    if a20 and c:
        out.append(f"reference: pmem-advisor@20 is {a20 / c:.2f}x the unsafe ceiling "
                   f"({c:,.0f} tps, durability off: no safe config is meant to reach it)")
    return out


def by_seed(rows: list[stats.ArmStats], ours: tuple[str, int], theirs: tuple[str, int]) -> str:
    """The two arms seed by seed (each seed is one search against the same server): how many
    seeds ours is ahead and a Wilcoxon signed-rank test of the pairs, so a ratio of medians
    inside the noise is not read as a win or a loss. Empty with fewer than 6 paired seeds (the
    test cannot reach p < 0.05 below that)."""
    def per_seed(name: str, budget: int) -> list[float | None]:
        return next((r.best_tps_all for r in rows if r.name == name and r.budget == budget
                     and r.available), [])

    pairs = [(a, b) for a, b in zip(per_seed(*ours), per_seed(*theirs), strict=False)
             if a is not None and b is not None]
    if len(pairs) < 6:
        return ""
    from scipy.stats import wilcoxon

    diffs = [a - b for a, b in pairs]
    ahead = sum(d > 0 for d in diffs)
    if not any(diffs):
        return f"; seed by seed: alike in all {len(pairs)}"
    p = float(wilcoxon(diffs).pvalue)
    word = ("no significant difference" if p >= 0.05
            else "significantly ahead" if sum(diffs) > 0 else "significantly behind")
    return (f"; seed by seed: ahead in {ahead} of {len(pairs)}, Wilcoxon signed-rank p "
            f"{p:.2f}: {word}")


def safe_ceiling(data: surrogate.ScenarioData, fitted: surrogate.Fit, space: SearchSpace,
                 data_dir: Path, settings: dict[str, Any],
                 memory: ProductionMemory | None = None) -> tuple[float | None, str]:
    """The best safe config any arm finds with ten times the largest budget: the median over
    ``CEILING_SEEDS`` seeds of each searching arm's best, the best arm's; and how it was had."""
    budget = CEILING_FACTOR * max(settings["budgets"])
    names = [a for a in CEILING_ARMS if a in settings["arms"]]
    arms, _ = make_arms(names, data, space, data_dir)
    if not arms:
        return None, "no searching arm to find it"
    seeds = list(range(100, 100 + CEILING_SEEDS))
    records, statuses = run_seeds(data, fitted, space, arms, budget, seeds, settings["jobs"],
                                  memory)
    rows = stats.compute(records, statuses, [budget], seeds)
    best = {r.name: r.best_tps_median for r in rows if r.available and r.searching
            and r.budget == budget and r.best_tps_median}
    if not best:
        return None, "no arm found a config"
    arm = max(best, key=best.__getitem__)
    how = (f"safe ceiling {best[arm]:,.0f} tps: the best of {', '.join(best)} at {budget} "
           f"trials (median over {len(seeds)} seeds; {arm}'s; SMAC3 and pmem-advisor left "
           "out for time), the "
           "space excludes every durability risk")
    return best[arm], how


def noise_line(name: str, data_dir: Path) -> str | None:
    """The scenario's measured noise (benchmarks/data/noise/NAME.json, from benchmarks.noise):
    the spread of repeated runs of one config, before and after, per minute of measurement."""
    import json

    path = data_dir / "noise" / f"{name}.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    arms = summary.get("arms") or {}
    parts = [f"{n} {a['cv_pct']:.1f}% ({a['per_minute_pct']:.1f}% per minute, {a['n']} runs)"
             for n, a in arms.items() if a.get("cv_pct") is not None
             and a.get("per_minute_pct") is not None]
    load = summary.get("loadavg_1m") or {}
    where = summary.get("machine_note", "").split(":")[0] or "machine"
    return (f"noise ({path.name}, {where}, load average {load.get('min')}-"
            f"{load.get('max')}): spread of one config's runs " + "; ".join(parts)) \
        if parts else None


def run_scenario(data: surrogate.ScenarioData, settings: dict[str, Any], data_dir: Path,
                 out: Path, plot: bool) -> report.ScenarioResult | str:
    """The result, or the reason the scenario is refused."""
    t0 = time.monotonic()
    scn = data.provenance.get("scenario") or {}
    title = (f"{scn.get('flavour')} {scn.get('version')} {scn.get('workload')} scale "
             f"{scn.get('scale')}, {scn.get('clients')} clients, {scn.get('medium')}, "
             f"budget {scn.get('memory_budget')}")
    x, y = data.training()
    fitted = surrogate.fit(x, y, seed=0)
    ratios = surrogate.noise_ratios(data.rows)
    noise = (statistics.pstdev(ratios) if len(ratios) > 1 else float("nan"))
    noise_text = (f"repeat noise sd {noise:.1%} over {len(ratios)} runs" if ratios
                  else "no repeated runs yet")
    if fitted.model is None:
        quality = f"surrogate: none fitted on {fitted.rows} rows; {noise_text}"
    else:
        quality = (f"surrogate: {fitted.kind} chosen by {surrogate.FOLDS}-fold CV ("
                   + ", ".join(f"{k} R^2 {v:.2f}" for k, v in fitted.cv.items())
                   + ("; with failed runs, by the worse of all rows and completed runs"
                      if fitted.completed is not None else "")
                   + f"); held-out R^2 {fitted.r2:.2f}, Spearman {fitted.spearman:.2f} on "
                   f"{fitted.rows} rows (refused under R^2 {surrogate.MIN_R2} or Spearman "
                   f"{surrogate.MIN_SPEARMAN}){fitted.completed_text()}; {noise_text}")
    print(f"[{data.name}] {quality}", file=sys.stderr, flush=True)
    why = fitted.refused
    if fitted.model is None:
        why = f"only {fitted.rows} measured rows (a surrogate needs {surrogate.MIN_ROWS})"
    if why and not settings["accept_poor"]:
        return f"refused: {why}. {quality}"
    now = current_rules(scn)
    memory = now["memory"] if now else None
    space = harness_space(data, memory)
    arms, notes = make_arms(settings["arms"], data, space, data_dir, now=now)
    seeds = list(range(settings["seeds"]))
    records, statuses = run_seeds(data, fitted, space, arms, max(settings["budgets"]), seeds,
                                  settings["jobs"], memory)
    rows = stats.compute(records, statuses, settings["budgets"], seeds)
    safe, safe_how = (safe_ceiling(data, fitted, space, data_dir, settings, memory)
                      if settings.get("safe_ceiling", True) else (None, "not computed"))
    print(f"[{data.name}] {safe_how}", file=sys.stderr, flush=True)
    notes = [quality, *notes, memory_note(data, space, memory, records), safe_how]
    measured_noise = noise_line(data.name, data_dir)
    if measured_noise:
        notes.append(measured_noise)
    real = validate.summary_line(data.name, data_dir)
    if real:
        notes.append(real)
    if why:
        notes.insert(0, f"WARNING: run despite a poor surrogate ({why})")
    if scn.get("medium") == "shm":
        notes.insert(0, EMULATION_NOTE)
    notes.append(f"{len(seeds)} seeds; budgets {', '.join(map(str, settings['budgets']))} are "
                 "prefixes of one run per arm and seed; best = the config an arm observed "
                 "best, credited at the surrogate's noise-free value; default, rules and "
                 "ceiling answer with their own measured runs")
    notes.append(f"dataset: {len(data.rows)} rows measured "
                 f"{_dates(data.rows)}; load average (1 min) during trials median "
                 f"{_load(data.rows)}")
    notes.extend(targets(rows, safe))
    asked = real_target.summary_line(data.name, data_dir)  # a target asked of the real server
    if asked:
        notes.append(asked)
    result = report.ScenarioResult(data.name, title, settings["budgets"], seeds, records,
                                   statuses, rows, notes=notes, wall_s=time.monotonic() - t0,
                                   meta={"surrogate": {"kind": fitted.kind, "r2": fitted.r2,
                                                       "spearman": fitted.spearman,
                                                       "rows": fitted.rows, "cv": fitted.cv},
                                         "scenario": scn, "safe_ceiling_tps": safe,
                                         "safe_ceiling": safe_how})
    if plot:
        try:
            result.plot = report.plot_convergence(result, out / f"{data.name}.png")
        except ImportError as exc:
            result.notes.append(f"no plot: {exc} (pip install matplotlib)")
    return result


def _one_seed(data: surrogate.ScenarioData, fitted: surrogate.Fit, space: SearchSpace,
              arms: list[Arm], budget: int, seed: int,
              memory: ProductionMemory | None = None) -> tuple[list, list]:
    """One seed on its own surrogate server (its noise seeded by the seed alone, so the
    result does not depend on how seeds are spread over processes)."""
    evaluator = surrogate.SurrogateEvaluator(data, fitted, seed=seed,
                                             unfit=memory.unfit if memory else None)
    return run_interleaved(evaluator, space, arms, budget=budget, seeds=[seed])


def run_seeds(data: surrogate.ScenarioData, fitted: surrogate.Fit, space: SearchSpace,
              arms: list[Arm], budget: int, seeds: list[int], jobs: int,
              memory: ProductionMemory | None = None) -> tuple[list, list]:
    """Every seed, in ``jobs`` processes; records in seed order, statuses merged."""
    if jobs <= 1:
        parts = [_one_seed(data, fitted, space, arms, budget, s, memory) for s in seeds]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_one_seed, data, fitted, space, arms, budget, s, memory)
                       for s in seeds]
            parts = [f.result() for f in futures]
    records = [r for recs, _ in parts for r in recs]
    statuses = parts[0][1]
    for _, more in parts[1:]:
        for st, other in zip(statuses, more, strict=True):
            st.errors.extend(other.errors)
    return records, statuses


def memory_note(data: surrogate.ScenarioData, space: SearchSpace,
                memory: ProductionMemory | None, records: list[Any]) -> str:
    """What the product's memory limits did to the arms' space and trials."""
    if memory is None:
        return ("memory: the product's limits could not be computed here (the scenario's path "
                "or server catalog is missing): every arm searched the dataset's space")
    wide = {d["name"]: d.get("high") for d in data.provenance.get("space") or []}
    narrowed = [f"{p.name} up to {memory.human(p.name, p.high)} (collected up to "
                f"{memory.human(p.name, wide[p.name])})"
                for p in space.params if p.kind != "categorical"
                and wide.get(p.name) is not None and p.high < wide[p.name]]
    gated = sum(1 for r in records if (r.measurement.failure or "").startswith(surrogate.NOT_RUN))
    return (f"memory: every arm searched what tune would at {memory.describe()}: "
            + ("; ".join(narrowed) if narrowed else "no range narrowed")
            + f"; {gated} trial(s) over the worst-case budget were not run (failed trials)")


def _dates(rows: list[dict[str, Any]]) -> str:
    days = sorted({str(r.get("started", ""))[:10] for r in rows if r.get("started")})
    return f"on {', '.join(days)}" if days else ""


def _load(rows: list[dict[str, Any]]) -> str:
    loads = [r["loadavg_before"][0] for r in rows if r.get("loadavg_before")]
    return f"{statistics.median(loads):.1f} (range {min(loads):.1f}-{max(loads):.1f})" \
        if loads else "unknown"


# ------------------------------------------------------------------ main
def _csv_ints(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a comma-separated list of integers: {text}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"need positive integers: {text}")
    return sorted(set(values))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run",
                                description=__doc__.split("\n")[0])
    p.add_argument("--scenario", action="append", metavar="NAME",
                   help="only this scenario (repeatable); default: every dataset")
    p.add_argument("--data-dir", default=str(dataset.DATA_DIR))
    p.add_argument("--out", default="bench-out", help="directory for report, plots, JSON")
    p.add_argument("--arms", help=f"comma-separated subset of {','.join(ARM_NAMES)}")
    p.add_argument("--budgets", type=_csv_ints, default=list(BUDGETS))
    p.add_argument("--seeds", type=int, default=SEEDS)
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="processes running seeds side by side (default: 2)")
    p.add_argument("--accept-poor", action="store_true",
                   help="run scenarios whose surrogate is under the quality thresholds "
                        "(flagged in the output)")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--no-safe-ceiling", action="store_true",
                   help=f"skip the safe ceiling ({CEILING_FACTOR}x the largest budget)")
    return p.parse_args(argv)


HASH_SEED = "0"


def with_fixed_hash_seed(argv: list[str]) -> None:
    """Run again under PYTHONHASHSEED=0 unless already so. SMAC3's choices depend on Python's
    per-process string hash: the same seeds gave SMAC3@50 2,500 and 2,381 tps on MariaDB
    write-only in two runs; under one hash seed it repeats to the tps."""
    if os.environ.get("PYTHONHASHSEED") == HASH_SEED:
        return
    os.environ["PYTHONHASHSEED"] = HASH_SEED
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "benchmarks.run", *argv])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        arms = args.arms.split(",") if args.arms else list(ARM_NAMES)
        unknown = [a for a in arms if a not in ARM_NAMES]
        if unknown:
            raise UsageError(f"unknown arm {', '.join(unknown)} (arms: {', '.join(ARM_NAMES)})")
        if args.seeds < 1:
            raise UsageError("--seeds must be >= 1")
        data_dir = Path(args.data_dir)
        names = args.scenario or sorted(p.stem for p in data_dir.glob("*.jsonl"))
        missing = [n for n in names if not dataset.rows_path(n, data_dir).exists()]
        if missing:
            raise UsageError(f"no dataset for {', '.join(missing)} in {data_dir} "
                             "(make bench-collect SCENARIO=...)")
        if not names:
            raise UsageError(f"no datasets in {data_dir} (make bench-collect SCENARIO=...)")
        settings = {"arms": arms, "budgets": args.budgets, "seeds": args.seeds,
                    "accept_poor": args.accept_poor, "jobs": max(1, args.jobs),
                    "safe_ceiling": not args.no_safe_ceiling}
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        meta = {"mode": "surrogate", "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "host": platform.node(), "cpus": os.cpu_count(),
                "python": platform.python_version(), **settings}
        results: list[report.ScenarioResult] = []
        skipped: list[dict[str, str]] = []
        for name in names:
            print(f"\n== {name}", file=sys.stderr, flush=True)
            data = surrogate.load_scenario(name, data_dir)
            res = run_scenario(data, settings, data_dir, out, not args.no_plot)
            if isinstance(res, str):
                print(f"[{name}] {res}", file=sys.stderr)
                skipped.append({"name": name, "title": name, "reason": res})
            else:
                results.append(res)
            write_outputs(results, skipped, meta, out)
        for res in results:
            print(report.markdown(res))
        for s in skipped:
            print(f"### {s['name']}\n\n{s['reason']}\n")
        print(f"results: {out}/report.md, {out}/results.json", file=sys.stderr)
        return 0
    except (Interrupted, KeyboardInterrupt):
        print("interrupted", file=sys.stderr)
        return Interrupted.exit_code
    except AdvisorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # a bug: one line, and the exit code says so
        print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL


def write_outputs(results: list[report.ScenarioResult], skipped: list[dict[str, str]],
                  meta: dict[str, Any], out: Path) -> None:
    md = "".join(report.markdown(r) + "\n" for r in results)
    md += "".join(f"### {s['name']}\n\n{s['reason']}\n\n" for s in skipped)
    write_file_safely(out / "report.md", md, backup=False)
    report.write_json(results, out / "results.json", meta, skipped)


if __name__ == "__main__":
    with_fixed_hash_seed(sys.argv[1:])
    sys.exit(main())
