"""Collect a scenario's dataset: real measurements the surrogate benchmark is fitted on.

    python -m benchmarks.collect SCENARIO [--minutes N] [--max-rows N] [--force]
    make bench-collect SCENARIO=pg18-tpcb-disk MINUTES=60

Every trial goes through the tuner's own evaluator (``ManagedEvaluator``: the golden copy is
restored before every trial), with the server held to the scenario's memory budget by a
memory cgroup. The order of points is fixed by the row number, so a collection split over
many runs measures the same sequence as one long run:

1. screen: defaults, rules-only, unsafe ceiling, interleaved, ``repeats`` rounds: the noise,
   and whether the scenario has room at all (printed; a scenario without room is not
   collected further unless --force);
2. then cycles of ten: eight Sobol points over the no-rules space (the tuner's space without
   rules, hardware limits at the budget, no durability risks), one repeat of an anchor
   (defaults, rules, ceiling in turn: drift with the machine's load) and one repeat of an
   earlier Sobol point (noise away from the anchors).

3. with ``--finalists K`` (run after the sequence): the finalists. The best of many single
   noisy runs is biased upward (the winner's curse: of 40 configs measured once at ~14% run
   noise, the top row is mostly luck), and a surrogate fitted on it invents a fast region
   where one lucky run stood. TUNA (EuroSys'25) re-measures its finalists before it believes
   them; here the K Sobol points with the best median so far are measured again, round by
   round, until each of the K best has ``FINALIST_RUNS`` runs (a point that drops out of the
   K best after a repeat makes room for the next), with a rules anchor after every round
   (drift). These rows are ``repeat-sobol`` rows marked ``"phase": "finalists"``; the
   sequence of step 2 goes on after them unchanged.

Each row records os.getloadavg() before and after and the share of CPU time the hypervisor
took meanwhile (steal): other work on the machine is part of the noise, and the data says how
much there was.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pmem_advisor.errors import EXIT_INTERNAL, AdvisorError, Interrupted, UsageError
from pmem_advisor.tuner.cpu_steal import measure, steal_clause
from pmem_advisor.tuner.evaluator import Evaluator, Measurement, TrialConfig
from pmem_advisor.tuner.transfer import from_unit, sobol_points

from .harness import dataset
from .harness.scenario import Scenario, durability_off, get

CYCLE = 10  # rows per cycle after the screen: 8 Sobol, 1 anchor repeat, 1 Sobol repeat
ANCHOR_SLOT, REPEAT_SLOT = 9, 4
ANCHORS = ("default", "rules", "ceiling")
FINALISTS_PHASE = "finalists"
FINALIST_RUNS = 3  # the median of three runs: one lucky run no longer decides a finalist
SOBOL_SEED = 20261123
# Engines run as managed servers by the shared evaluator (pick_server); every other engine
# is measured by its own evaluator (Engine.evaluator), in the scenario's memory cgroup.
MANAGED_ENGINES = ("postgres", "mysql")
RULES_WORKLOAD = {"pgbench-tpcb": "oltp", "tpcc": "oltp", "sysbench-oltp-write-only": "oltp"}
EMULATION_NOTE = ("/dev/shm is tmpfs (DRAM-backed) standing in for persistent memory, as the "
                  "papers' memmap= emulation did; real PMEM is slower, above all for writes")


# ------------------------------------------------------------------------------ the points
def sobol_unit(dims: int, index: int, seed: int = SOBOL_SEED) -> list[float]:
    """The ``index``-th point of one scrambled Sobol sequence: the same for every run."""
    return [float(x) for x in sobol_points(dims, 1, seed=seed, skip=index)[0]]


def sobol_config(space: Any, index: int) -> TrialConfig:
    unit = sobol_unit(len(space.knobs), index)
    values = {k.name: from_unit(k, u) for k, u in zip(space.knobs, unit, strict=True)}
    runtime, init = space.split(values, snap=True)
    return TrialConfig(params=runtime, init_params=init)


@dataclass
class Point:
    kind: str  # default | rules | ceiling | sobol | repeat-<anchor> | repeat-sobol
    config: TrialConfig
    sobol: int | None = None  # the Sobol index (also of a repeated Sobol point)


def screen_kinds(has_rules: bool) -> list[str]:
    return [k for k in ANCHORS if has_rules or k != "rules"]


def point_for(row: int, ctx: CollectContext, rows: list[dict[str, Any]] | None = None) -> Point:
    """The point measured at row number ``row``: a function of ``row`` and, for the ceiling,
    of the rows before it (see ``CollectContext.ceiling``)."""
    kinds = screen_kinds(ctx.rules is not None)
    screen = len(kinds) * ctx.scenario.repeats
    if row < screen:
        kind = kinds[row % len(kinds)]
        return Point(kind, ctx.anchor(kind, rows or []))
    j = row - screen
    cycle, slot = divmod(j, CYCLE)
    if slot == ANCHOR_SLOT:
        kind = kinds[cycle % len(kinds)]
        return Point(f"repeat-{kind}", ctx.anchor(kind, rows or []))
    if slot == REPEAT_SLOT:  # an earlier Sobol point, walking back through them
        done = cycle * (CYCLE - 2) + REPEAT_SLOT
        index = (cycle * 3) % done
        return Point("repeat-sobol", sobol_config(ctx.space, index), index)
    index = cycle * (CYCLE - 2) + slot - (1 if slot > REPEAT_SLOT else 0)
    return Point("sobol", sobol_config(ctx.space, index), index)


def sequence_length(rows: list[dict[str, Any]]) -> int:
    """How far the fixed sequence has come: every row but the finalists'."""
    return sum(1 for r in rows if r.get("phase") != FINALISTS_PHASE)


def finalists_due(ctx: CollectContext, rows: list[dict[str, Any]], count: int,
                  runs: int = FINALIST_RUNS) -> list[Point]:
    """The finalists still short of ``runs`` runs, fewest runs first, then best median: of
    the Sobol points, the ``count`` whose runs so far have the highest median (a failed run
    counts 0 tps). Empty when the ``count`` best all have their runs."""
    groups: dict[int, list[float]] = {}
    for r in rows:
        if r.get("kind") in ("sobol", "repeat-sobol") and r.get("sobol") is not None:
            groups.setdefault(int(r["sobol"]), []).append(dataset.tps(r) if r.get("ok") else 0.0)
    ranked = sorted(groups, key=lambda i: (-statistics.median(groups[i]), i))[:count]
    due = sorted((i for i in ranked if len(groups[i]) < runs),
                 key=lambda i: (len(groups[i]), ranked.index(i)))
    return [Point("repeat-sobol", sobol_config(ctx.space, i), i) for i in due]


def next_finalist(ctx: CollectContext, rows: list[dict[str, Any]], count: int) -> Point | None:
    """The next row of the finalists' phase, None when it is done: the rules again after
    every ``count`` finalist runs (the machine's drift, as the sequence's anchors), else the
    finalist due first."""
    due = finalists_due(ctx, rows, count)
    if not due:
        return None
    since = 0
    for r in reversed(rows):
        if r.get("phase") != FINALISTS_PHASE or r.get("kind") == "repeat-rules":
            break
        since += 1
    if ctx.rules is not None and since >= count:
        return Point("repeat-rules", ctx.anchor("rules", rows))
    return due[0]


# ------------------------------------------------------------------------------ the context
@dataclass
class CollectContext:
    scenario: Scenario
    evaluator: Evaluator
    space: Any  # pmem_advisor.tuner.space.SearchSpace, no rules
    rules: TrialConfig | None
    ceiling_settings: dict[str, Any]
    provenance: dict[str, Any] = field(default_factory=dict)
    peak_bytes: Callable[[], int | None] = lambda: None
    cleanup: list[Callable[[], None]] = field(default_factory=list)
    # the server's defaults, with the smallest change that makes them hold the data (an
    # in-memory engine's arena; tuner/feasible.py): usually nothing
    default: TrialConfig = field(default_factory=TrialConfig)

    def anchor(self, kind: str, rows: list[dict[str, Any]]) -> TrialConfig:
        if kind == "default":
            return self.default
        if kind == "rules":
            assert self.rules is not None
            return self.rules
        return self.ceiling(rows)

    def ceiling(self, rows: list[dict[str, Any]]) -> TrialConfig:
        """Durability off on top of the better of defaults and rules-only as measured before
        the first ceiling row; every later ceiling row repeats that first one exactly."""
        for r in rows:
            if r.get("kind") == "ceiling":
                return TrialConfig(params=dict(r["params"]), init_params=dict(r["init_params"]))
        base = self.default
        if self.rules is not None:
            d = dataset.median_or_none(dataset.by_kind(rows, "default"))
            r = dataset.median_or_none(dataset.by_kind(rows, "rules"))
            if r is not None and (d is None or r >= d):
                base = self.rules
        return TrialConfig(params={**base.params, **self.ceiling_settings},
                           init_params=dict(base.init_params))

    def close(self) -> None:
        try:
            self.evaluator.close()
        finally:
            for fn in reversed(self.cleanup):
                fn()
            self.cleanup.clear()


# ------------------------------------------------------------------------------ the verdict
# The screen's paired test: two comparisons (the ceiling and the rules against the
# defaults), so each at half of the 5% a single claim would get (Bonferroni).
SCREEN_ALPHA = 0.05 / 2


def screen_rounds(rows: list[dict[str, Any]], kind: str, kinds: int = len(ANCHORS)
                  ) -> dict[int, float | None]:
    """One anchor's screen runs by interleaved round (a failed run is None)."""
    out: dict[int, float | None] = {}
    for i, r in enumerate(rows):
        if r.get("kind") == kind:
            tps = dataset.tps(r)
            out[i // kinds] = tps if tps > 0 else None
    return out


def screen_verdict(rows: list[dict[str, Any]], repeats: int) -> tuple[bool | None, list[str]]:
    """Whether the screen shows room beyond the noise: None while it is incomplete.

    Room = the ceiling's or the rules' worst run beats the defaults' best run (their ranges
    do not overlap), or a paired t-test over the interleaved rounds (the tuner's own
    ``compare_paired``) finds it better than the defaults: with more rounds than the default
    three, a steady gain smaller than a loaded machine's run-to-run spread still shows, as
    the tuner's verdict would find it. The noise printed is each point's range over its
    repeats."""
    from pmem_advisor.tuner.stats import compare_paired

    d, r, c = (dataset.by_kind(rows, k) for k in ANCHORS)
    if len(d) < repeats or len(c) < repeats:
        return None, [f"screen incomplete ({len(d)} default, {len(r)} rules, {len(c)} ceiling "
                      f"measurements of {repeats})"]
    med_d = dataset.median_or_none(d) or 0.0
    lines = []
    for name, vals in (("defaults", d), ("rules", r), ("ceiling", c)):
        if not vals:
            lines.append(f"{name}: not measured")
            continue
        med = dataset.median_or_none(vals) or 0.0
        spread = (max(vals) - min(vals)) / med if med else float("inf")
        ratio = f", {med / med_d:.2f}x defaults" if med_d and name != "defaults" else ""
        lines.append(f"{name}: median {med:,.0f} tps (range {min(vals):,.0f}-{max(vals):,.0f},"
                     f" spread {spread:.0%}){ratio}")
    room = []
    kinds = len(ANCHORS) if r else len(ANCHORS) - 1
    screen = rows[: kinds * repeats]
    base = screen_rounds(screen, "default", kinds)
    for name, kind, vals in (("ceiling", "ceiling", c), ("rules", "rules", r)):
        if not vals:
            continue
        if min(vals) > max(d):
            room.append(f"{name}'s worst run beats the defaults' best")
            continue
        runs = screen_rounds(screen, kind, kinds)
        order = sorted(base)
        test = compare_paired([runs.get(i) for i in order], [base[i] for i in order],
                              alpha=SCREEN_ALPHA)
        if test["p_value"] is not None:
            lines.append(f"{name} vs defaults, paired by round ({test['n_a']} rounds): "
                         f"{test['gain_pct']:+.1f}% [{test['ci_low_pct']:+.1f}%, "
                         f"{test['ci_high_pct']:+.1f}%] at {1 - SCREEN_ALPHA:.1%}, "
                         f"p {test['p_value']:.3f}")
        if test["decision"] == "better":
            room.append(f"{name} beats the defaults in a paired test over {test['n_a']} "
                        f"interleaved rounds (p {test['p_value']:.3f})")
    if r and max(r) < min(d):
        lines.append("WARNING: the rules-only config lost to the defaults in every run")
    if room:
        lines.append("kept: " + "; ".join(room) + " (room beyond the noise)")
        return True, lines
    lines.append("not kept: neither the ceiling nor the rules separate from the defaults' "
                 "range or beat them in a paired test (no room beyond the noise)")
    return False, lines


# ------------------------------------------------------------------------------ collecting
def git_commit() -> str:
    try:
        here = Path(__file__).resolve().parent.parent
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--",
                                "advisor", "benchmarks/collect.py", "workloads"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def measure_row(ctx: CollectContext, row: int, point: Point, run_id: str) -> dict[str, Any]:
    load_before = os.getloadavg()
    started = time.time()
    m: Measurement = measure(ctx.evaluator, point.config)
    return {
        "row": row, "kind": point.kind, "sobol": point.sobol, "run": run_id,
        "params": point.config.params, "init_params": point.config.init_params,
        "ok": m.ok, "tps": m.throughput_tps, "latency_ms": m.latency_ms,
        "failure": m.failure, "errors": m.errors,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "wall_s": round(time.time() - started, 2),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "cpu_steal_pct": m.raw.get("cpu_steal_pct"),
        "cgroup_peak_bytes": ctx.peak_bytes(),
    }


def collect(ctx: CollectContext, data_dir: Path, *, minutes: float | None = None,
            max_rows: int | None = None, force: bool = False, finalists: int = 0,
            log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)) -> int:
    """Append rows until the time or row limit; returns the rows added. Resumes where the
    dataset ends. ``finalists``: measure the finalists (step 3 of the module's docstring)
    instead of going on with the sequence, until they have their runs or a limit comes."""
    scn = ctx.scenario
    path = dataset.rows_path(scn.name, data_dir)
    prov_path = dataset.provenance_path(scn.name, data_dir)
    deadline = time.monotonic() + minutes * 60 if minutes else None
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:4]
    added = 0
    with dataset.appender(path) as f:
        rows = dataset.read_rows(path, repair=True)
        prov = dataset.read_json(prov_path)
        kept = adopt_dataset(ctx, prov, rows, log) if rows else set()
        prov.update({k: v for k, v in ctx.provenance.items() if k != "runs" and k not in kept})
        run = {"id": run_id, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "first_row": len(rows), "commit": git_commit(),
               "loadavg_start": [round(x, 2) for x in os.getloadavg()]}
        prov.setdefault("runs", []).append(run)
        dataset.write_json(prov_path, prov)
        log(f"[{scn.name}] {len(rows)} rows so far; collecting into {path}")
        try:
            while True:
                kept, lines = screen_verdict(rows, scn.repeats)
                if kept is False and not force:
                    for line in lines:
                        log(f"[{scn.name}] {line}")
                    log(f"[{scn.name}] stopping: no room beyond the noise (--force collects "
                        "anyway)")
                    break
                if max_rows is not None and added >= max_rows:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    break
                phase = None
                if finalists:
                    point = next_finalist(ctx, rows, finalists)
                    if point is None:
                        log(f"[{scn.name}] the {finalists} best Sobol points have "
                            f"{FINALIST_RUNS} runs each: finalists done")
                        break
                    phase = FINALISTS_PHASE
                else:
                    point = point_for(sequence_length(rows), ctx, rows)
                row = measure_row(ctx, len(rows), point, run_id)
                if phase:
                    row["phase"] = phase
                dataset.append_row(f, row)
                rows.append(row)
                added += 1
                result = (f"{row['tps']:,.0f} tps" if row["ok"] else
                          f"failed: {(row['failure'] or '')[:120]}")
                log(f"[{scn.name}] row {row['row']} {point.kind}"
                    f"{'' if point.sobol is None else ' #' + str(point.sobol)}: {result} "
                    f"({row['wall_s']:.0f} s, load {row['loadavg_before'][0]:.1f}"
                    f"{steal_clause(row.get('cpu_steal_pct'))})")
                if kept is None:
                    now, lines = screen_verdict(rows, scn.repeats)
                    if now is not None:
                        for line in lines:
                            log(f"[{scn.name}] {line}")
        finally:
            run.update(ended=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       rows_added=added,
                       loadavg_end=[round(x, 2) for x in os.getloadavg()])
            prov["rows"] = len(rows)
            prov["screen"] = screen_verdict(rows, scn.repeats)[1]
            prov["machine_load"] = load_note(rows, scn.clients)
            dataset.write_json(prov_path, prov)
    return added


def load_note(rows: list[dict[str, Any]], clients: int) -> str | None:
    """What the machine's load was while the rows were measured, in words: other work on a
    shared machine is part of the noise, and the provenance says so. The benchmark itself
    keeps up to two threads per client runnable (the client's and the server's thread or
    process for its connection), so only a load above that says other work ran; the rows'
    CPU steal says what the hypervisor's other guests took."""
    loads = [r["loadavg_before"][0] for r in rows if r.get("loadavg_before")]
    if not loads:
        return None
    cores = os.cpu_count() or 1
    own = 2 * clients
    text = f"1-minute load average {min(loads):.1f}-{max(loads):.1f} on {cores} cores"
    if max(loads) > own + cores:
        text += (f" while the rows ran, above the {own} runnable threads the benchmark's own "
                 f"{clients} clients and their server connections account for: other work ran "
                 "on the machine, and part of the spread is its")
    else:
        text += (f", within what the benchmark's own {clients} clients and their server "
                 f"connections account for (up to {own} runnable threads)")
    return text


def space_record(space: Any) -> list[dict[str, Any]]:
    """The space as stored in the provenance (enough to rebuild it on resume)."""
    return [{"name": k.name, "type": k.type, "scope": k.scope, "low": k.low, "high": k.high,
             "log": k.log, "choices": k.choices, "default": k.default, "step": k.step,
             "source": k.source, "unit_bytes": k.unit_bytes} for k in space.knobs]


def _space_key(record: list[dict[str, Any]]) -> list[tuple]:
    return [(d["name"], d.get("low"), d.get("high"), d.get("log"), d.get("choices"))
            for d in record]


def adopt_dataset(ctx: CollectContext, prov: dict[str, Any], rows: list[dict[str, Any]],
                  log: Callable[[str], None]) -> set[str]:
    """A resumed dataset keeps measuring what it began with: its space and its rules-only
    config, even when the code now builds others (the rows must stay comparable). Returns the
    provenance keys to keep as they are; the differences are logged and recorded."""
    from pmem_advisor.tuner.space import SearchSpace as TunerSpace
    from pmem_advisor.tuner.space import SpaceKnob

    kept = set()
    old_space = prov.get("space")
    if old_space and _space_key(old_space) != _space_key(space_record(ctx.space)):
        log(f"[{ctx.scenario.name}] the no-rules space changed since this dataset began: "
            "keeping the dataset's space (recorded as space_now)")
        prov["space_now"] = space_record(ctx.space)
        fields = set(SpaceKnob.__dataclass_fields__)
        ctx.space = TunerSpace(ctx.space.engine, ctx.space.flavour, ctx.space.version,
                               [SpaceKnob(**{k: v for k, v in d.items() if k in fields})
                                for d in old_space])
        kept.add("space")
    first = next((r for r in rows if r.get("kind") == "rules"), None)
    if first is not None:
        dataset_rules = TrialConfig(params=dict(first["params"]),
                                    init_params=dict(first["init_params"]))
        if ctx.rules != dataset_rules:
            log(f"[{ctx.scenario.name}] the rules-only config changed since this dataset "
                f"began: measuring the dataset's (row {first['row']}) for comparable rows; "
                "the current one is recorded as rules_now")
            prov["rules_now"] = (ctx.provenance.get("rules") or {}) | {
                "params": ctx.rules.params if ctx.rules else None}
            ctx.rules = dataset_rules
            kept.add("rules")
    return kept


# ------------------------------------------------------------------------------ real servers
def rule_values(rec: Any, catalog: Any) -> dict[str, Any]:
    """Each rule setting in the knob's base unit, parsed from the text the rules wrote."""
    return {s.name: catalog.get(s.name).parse(s.text) if s.name in catalog else s.value
            for s in rec.settings}


def rules_config(rec: Any, catalog: Any) -> TrialConfig:
    params, init = {}, {}
    for name, value in rule_values(rec, catalog).items():
        scope = catalog.get(name).scope if name in catalog else "restart"
        (init if scope == "reinit" else params)[name] = value
    return TrialConfig(params=params, init_params=init)


def profile_summary(profile: dict[str, Any], root: str) -> dict[str, Any]:
    cpu = profile.get("cpu") or {}
    mem = profile.get("memory") or {}
    paths = [p for p in profile.get("paths") or [] if isinstance(p, dict)]
    path = next((p for p in paths if str(p.get("path", "")).startswith(root)), paths[0]
                if paths else {})
    keep = ("path", "fstype", "medium", "medium_source", "medium_note", "rotational", "device",
            "measured")
    return {"cpu_model": cpu.get("model"), "cores": cpu.get("cores"),
            "threads": cpu.get("threads"), "memory_total_bytes": mem.get("total_bytes"),
            "path": {k: path.get(k) for k in keep if k in path}}


def open_real(scn: Scenario, *, log: Callable[[str], None]) -> CollectContext:
    """Probe, ask the rules at the budget, build the no-rules space, start the evaluator in a
    memory cgroup of the scenario's budget."""
    from pmem_advisor.engines.api import EvalRequest
    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.instances import pick_server
    from pmem_advisor.instances.cgroup import CgroupUnavailable, MemoryCgroup
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess
    from pmem_advisor.rules.combine import recommend
    from pmem_advisor.rules.facts import build_facts
    from pmem_advisor.tuner.limits import Limits
    from pmem_advisor.tuner.managed import ManagedEvaluator
    from pmem_advisor.tuner.session import data_limits
    from pmem_advisor.tuner.space import KnobSpec, build_space
    from pmem_advisor.workloads.registry import get_workload

    if not os.path.isdir(scn.path):
        raise AdvisorError(f"{scn.path} does not exist: cannot place {scn.name}")
    root = Path(tempfile.mkdtemp(prefix=f"pmem-bench-{scn.name}-", dir=scn.path))
    os.chmod(root, 0o755)  # the unprivileged server user must reach its data below it
    cleanup: list[Callable[[], None]] = [lambda: _rmtree(root)]
    managed = scn.engine in MANAGED_ENGINES
    try:
        engine = get_engine(scn.engine)
        binary = (pick_server(scn.engine, scn.flavour, scn.version) if managed
                  else engine.find_binary(scn.flavour, scn.version))
        workload = (get_workload(scn.workload, **scn.workload_options) if managed
                    else engine.workload(scn.workload, **scn.workload_options))
        profile = probe(SysAccess("/"), [str(root)])
        catalog = load_catalog(scn.engine, scn.flavour, binary.version)
        specs = {k.name: KnobSpec.from_knob(k) for k in catalog}
        common = {"engine": scn.engine, "flavour": scn.flavour, "version": catalog.version}
        limits = Limits.for_host(memory_bytes=scn.memory_bytes, data_path=str(root))
        # the data's demands (an arena that holds it) bound every arm's space, as in tune
        limits = data_limits(engine, workload, scn.scale, catalog, specs, limits, {},
                             binary=binary, budget_bytes=scn.memory_bytes)
        space = build_space(specs, **common, important=[], use_rules=False, limits=limits,
                            extra_knobs=engine.workload_knobs(workload))
        facts = build_facts(profile, **common, workload=scn.rules_workload,
                            data_dir=str(root), wal_dir=str(root), memory_bytes=scn.memory_bytes,
                            cpus=scn.cpus, clients=scn.clients,
                            storage_engine=getattr(workload, "storage_engine", None))
        rec = recommend(facts)
        rules = rules_config(rec, catalog)
        budget_note = ""
        group = None
        try:
            group = MemoryCgroup.create(f"bench-{scn.name}-{os.getpid()}", scn.memory_bytes)
            cleanup.append(group.remove)
            budget_note = group.describe()
        except CgroupUnavailable as exc:
            budget_note = f"NO MEMORY LIMIT: {exc}; the page cache may hide memory knobs"
        log(f"[{scn.name}] {budget_note}")

        class BudgetedEvaluator(ManagedEvaluator):
            """The tuner's evaluator, with the server in the cgroup (the restore already
            evicted the copy's pages: they were charged to the copying process)."""

            def _prepare(self, config: TrialConfig) -> Any:
                inst = super()._prepare(config)
                if group is not None:
                    inst.cgroup = group
                    _reset_peak(group)
                return inst

        if managed:
            evaluator = BudgetedEvaluator(
                binary, workload, scale=scn.scale, clients=scn.clients,
                duration=scn.duration_s, warmup=scn.warmup_s, data_dir=root / "data",
                wal_dir=root / "wal", workdir=root, catalog=catalog)
        else:  # the engine's own evaluator (db_bench, a DuckDB child, a Tarantool server)
            evaluator = engine.evaluator(EvalRequest(
                binary, workload, scale=scn.scale, clients=scn.clients,
                duration=scn.duration_s, warmup=scn.warmup_s, data_dir=root / "data",
                wal_dir=None, workdir=root, catalog=catalog, cgroup=group))
        prov = {
            "scenario": scn.to_dict(),
            "server": {"flavour": binary.flavour, "version": binary.version,
                       "source": str(binary.source)},
            "machine": profile_summary(profile, str(root)),
            "memory_budget": budget_note,
            "space": space_record(space),
            "space_source": "tuner.build_space(use_rules=False, limits at the memory budget)",
            "rules": {"params": rules.params, "init_params": rules.init_params,
                      "important": list(rec.important),
                      "bounds": {k: list(v) for k, v in rec.bounds.items()},
                      "priors": dict(rec.priors), "fired": list(rec.fired)},
            "ceiling": "durability off on top of the better of defaults and rules-only "
                       "(screen medians before the first ceiling row): "
                       + ", ".join(f"{k}={v}" for k, v in durability_off(scn.flavour).items()),
            "notes": ([EMULATION_NOTE] if scn.emulated_pmem else []) + space.fix_notes,
            "default_fixes": dict(space.default_fixes),
        }
        ctx = CollectContext(scn, evaluator, space, rules, durability_off(scn.flavour),
                             provenance=prov, cleanup=cleanup,
                             default=TrialConfig(params=dict(space.default_fixes)))
        if group is not None:
            ctx.peak_bytes = group.peak_bytes
        return ctx
    except BaseException:
        for fn in reversed(cleanup):
            fn()
        raise


def _reset_peak(group: Any) -> None:
    """v1 lets the high-water mark be reset; v2 (memory.peak) keeps the group's lifetime peak."""
    if group.version == 1:
        try:
            (group.path / "memory.max_usage_in_bytes").write_text("0\n")
        except OSError:
            pass


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # the evaluator stops its server and the context cleans up


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.collect",
                                description=__doc__.split("\n")[0])
    p.add_argument("scenario", help="a scenario name (benchmarks/scenarios/NAME.yaml)")
    p.add_argument("--minutes", type=float, help="start no trial after this many minutes")
    p.add_argument("--max-rows", type=int, help="stop after this many new rows")
    p.add_argument("--force", action="store_true",
                   help="collect even when the screen shows no room beyond the noise")
    p.add_argument("--data-dir", default=str(dataset.DATA_DIR), help="where the datasets live")
    p.add_argument("--finalists", type=int, default=0, metavar="K",
                   help=f"measure the K best Sobol points again until each has "
                        f"{FINALIST_RUNS} runs, instead of going on with the sequence")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    ctx = None
    try:
        if args.finalists < 0:
            raise UsageError(f"--finalists must be 0 or more, not {args.finalists}")
        scn = get(args.scenario)
        log(f"[{scn.name}] {scn.title()}")
        if scn.emulated_pmem:
            log(f"[{scn.name}] note: {EMULATION_NOTE}")
        ctx = open_real(scn, log=log)
        added = collect(ctx, Path(args.data_dir), minutes=args.minutes, max_rows=args.max_rows,
                        force=args.force, finalists=args.finalists, log=log)
        log(f"[{scn.name}] added {added} rows")
        return 0
    except (Interrupted, KeyboardInterrupt):
        log("interrupted: the row in flight is lost, every earlier row is kept")
        return Interrupted.exit_code
    except AdvisorError as exc:
        log(f"error: {exc}")
        return exc.exit_code
    except Exception as exc:  # a bug: one line, and the exit code says so
        log(f"internal error: {type(exc).__name__}: {exc}")
        return EXIT_INTERNAL
    finally:
        if ctx is not None:
            ctx.close()


if __name__ == "__main__":
    sys.exit(main())
