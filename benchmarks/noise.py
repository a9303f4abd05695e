"""Measure the run-to-run noise of one config, and what it depends on.

    python -m benchmarks.noise demo --rounds 8 --out noise-out/demo.jsonl
    python -m benchmarks.noise pg18-tpcb-disk --rounds 5 --out noise-out/pg18-tpcb-disk.jsonl
    python -m benchmarks.noise --summarise noise-out/demo.jsonl \
        --json benchmarks/data/noise/demo.json

One config (the server defaults) is measured again and again through the tuner's own evaluator
(golden copy restored before every run), in **arms** that differ in one factor each: the
measurement as it was (a fixed warm-up), one longer run whose warm-up the steady-state
detector cuts (workloads/interim.py), that run with the server and the load generator on
separate CPUs (instances/affinity.py), that run with VACUUM ANALYZE / ANALYZE TABLE after
the restore, that run with pgbench's threads at the CPU count instead of one per client. The
arms are interleaved (A B C D A B C D ...): the machine is shared with other work, and a slow
change of its load then hits every arm alike. Every row records the load average before and
after.

The long runs keep their per-second samples, so the summary also answers, from the same runs,
how the spread falls with the run length and what the detector's cut is worth against a fixed
warm-up (``window`` rows: the tps of each run over a sub-window). The figure of merit is the
spread per minute of measurement: the coefficient of variation of the mean of as many runs as
fit in one minute of wall time, ``cv * sqrt(wall seconds per run / 60)`` (lower is better;
fixed costs of a run, restore and start, count in its wall time).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pmem_advisor.tuner.cpu_steal import measure as measure_run
from pmem_advisor.tuner.cpu_steal import steal_clause
from pmem_advisor.tuner.evaluator import TrialConfig

from . import demo

DEMO = "demo"
# The demo's own run (benchmarks/demo.py): embedded PostgreSQL 18, data on /dev/shm, pgbench
# tpcb-like with 4 clients; the scale is the one `tune` picks there (session.choose_scale).
DEMO_CLIENTS, DEMO_WARMUP, DEMO_DURATION = int(demo.CLIENTS), float(demo.WARMUP), \
    float(demo.DURATION)


@dataclass(frozen=True)
class Arm:
    name: str
    warmup_mode: str  # steady | fixed (workloads.base.Workload.warmup_mode)
    warmup_s: float
    duration_s: float
    pin: bool = False
    analyze: bool = False
    thread_per_client: bool = True  # pgbench: one load-generator thread per client
    # A pair arm measures the config twice per round, as the verdict compares two configs:
    # "sequence" one run after the other, "turns" side by side in the workload's turns
    # (Evaluator.evaluate_in_turns). Its figure is the spread of the pair's log ratio.
    pair: str | None = None


def arms_for(scenario: str, names: list[str] | None = None) -> list[Arm]:
    """The arms measured per scenario: today's measurement and the candidates (the long
    steady run also gives every shorter window in the summary)."""
    if scenario != DEMO and not _managed(scenario):
        return _own_evaluator_arms(scenario, names)
    if scenario == DEMO:
        today = Arm("today", "steady", DEMO_WARMUP, DEMO_DURATION)  # as `tune` measures
        short, long = 15, 30
    else:
        today = Arm("today", "fixed", 10, 25)
        short, long = 35, 60
    w = today.warmup_s
    arms = [today,
            Arm(f"steady{short}", "steady", w, short - w),
            Arm(f"steady{short}-pinned", "steady", w, short - w, pin=True),
            Arm(f"steady{long}", "steady", w, long - w),
            Arm(f"steady{long}-pinned", "steady", w, long - w, pin=True),
            Arm(f"steady{long}-analyze", "steady", w, long - w, analyze=True),
            Arm(f"steady{long}-threads-per-cpu", "steady", w, long - w,
                thread_per_client=False)]
    if scenario == DEMO:  # what the verdict's paired comparison sees, as tune measures it
        arms += [Arm("pair-one-after-another", today.warmup_mode, w, today.duration_s,
                     pair="sequence"),
                 Arm("pair-in-turns", today.warmup_mode, w, today.duration_s, pair="turns")]
    if names:
        arms = [a for a in arms if a.name in names]
    return arms


def _managed(scenario: str) -> bool:
    from .collect import MANAGED_ENGINES
    from .harness.scenario import get

    return get(scenario).engine in MANAGED_ENGINES


def _own_evaluator_arms(scenario: str, names: list[str] | None) -> list[Arm]:
    """RocksDB, DuckDB and Tarantool are measured by their engines' own evaluators, whose
    load generators (db_bench, the DuckDB runner, the Lua client) report one figure per run,
    no per-second samples: no steady-state detector, no pinning, no ANALYZE. Their arms are
    the scenario's own measurement and one 60 s run with the same fixed warm-up, the length
    the SQL scenarios' candidates go to."""
    from .harness.scenario import get

    scn = get(scenario)
    w = float(scn.warmup_s)
    arms = [Arm("today", "fixed", w, float(scn.duration_s)), Arm("fixed60", "fixed", w, 60 - w)]
    return [a for a in arms if a.name in names] if names else arms


# ------------------------------------------------------------------------------ measuring
def open_demo(log: Callable[[str], None], memory: str | None = None
              ) -> tuple[Any, Callable[[], None], dict[str, Any]]:
    """The demo's evaluator: embedded PostgreSQL 18 (the default `tune postgres` picks) with
    its data on /dev/shm, at the scale `tune` chooses for the demo's rules (for ``memory``, the
    demo's --memory, with the server held to it by a memory cgroup as `tune` does)."""
    import shutil

    from pmem_advisor.engines.api import EvalRequest
    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.tuner.session import TuneRequest
    from pmem_advisor.workloads.registry import get_workload

    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    root = Path(tempfile.mkdtemp(prefix="pmem-noise-demo-", dir=base))
    os.chmod(root, 0o755)
    engine = get_engine("postgres")
    req = TuneRequest(engine="postgres", workload="pgbench-tpcb", clients=DEMO_CLIENTS)
    binary = engine.find_binary(req.flavour, req.version)
    workload = get_workload("pgbench-tpcb")
    scale = demo_scale(binary, workload, root, memory)
    group = None
    if memory:
        from pmem_advisor.knobs.units import parse_bytes
        from pmem_advisor.tuner.session import memory_cgroup

        group, enforced = memory_cgroup(parse_bytes(memory, "--memory"))
        log(f"[demo] {enforced}")
    log(f"[demo] {binary.flavour} {binary.version}, pgbench-tpcb scale {scale}, "
        f"{DEMO_CLIENTS} clients, data on {root}")
    evaluator = engine.evaluator(EvalRequest(
        binary, workload, scale=scale, clients=DEMO_CLIENTS, duration=DEMO_DURATION,
        warmup=DEMO_WARMUP, data_dir=root / "data", wal_dir=None, workdir=None, catalog=None,
        cgroup=group))
    info = {"server": f"{binary.flavour} {binary.version}", "scale": scale,
            "clients": DEMO_CLIENTS, "medium": "/dev/shm (tmpfs standing in for PMEM)",
            "memory": memory or "the host's"}

    def close() -> None:
        try:
            evaluator.close()
        finally:
            if group is not None:
                group.remove()
            shutil.rmtree(root, ignore_errors=True)

    return evaluator, close, info


def demo_scale(binary: Any, workload: Any, root: Path, memory: str | None = None) -> int:
    """The scale `tune postgres --clients 4 [--memory M]` picks here for data on ``root``."""
    from pmem_advisor.cli.main import main as cli

    out = root / "scale-probe"
    out.mkdir()
    profile = out / "profile.json"
    conf = out / "rules.conf"
    quiet = open(os.devnull, "w")  # noqa: SIM115 - closed below
    old = sys.stdout
    try:
        sys.stdout = quiet
        cli(["probe", "--path", str(root), "--out", str(profile)])
        cli(["recommend", "postgres", "--profile", str(profile), "--data-dir", str(root),
             "--clients", str(DEMO_CLIENTS), "--out", str(conf),
             *(["--memory", memory] if memory else [])])
    finally:
        sys.stdout = old
        quiet.close()
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.tuner.session import choose_scale

    catalog = load_catalog("postgres", binary.flavour, binary.version)
    shared = None
    for line in conf.read_text().splitlines():
        name, _, value = line.partition("=")
        if name.strip() == "shared_buffers":
            shared = catalog.get("shared_buffers").parse(value.split("#")[0].strip().strip("'"))
    from pmem_advisor.tuner.limits import UNIT_BYTES

    unit = UNIT_BYTES.get(catalog.get("shared_buffers").unit) or 1
    scale, _, _ = choose_scale(workload, scale=None, clients=DEMO_CLIENTS,
                               buffer_name="shared_buffers",
                               buffer_bytes=int(shared * unit) if shared else None,
                               free_bytes=None)
    return scale


def open_scenario(name: str, log: Callable[[str], None]
                  ) -> tuple[Any, Callable[[], None], dict[str, Any]]:
    from .collect import open_real
    from .harness.scenario import get

    scn = get(name)
    ctx = open_real(scn, log=log)
    info = {"server": f"{scn.flavour} {scn.version}", "scale": scn.scale,
            "clients": scn.clients, "medium": scn.medium, "memory_budget": scn.memory_budget}
    return ctx.evaluator, ctx.close, info


def configure(evaluator: Any, arm: Arm) -> None:
    from pmem_advisor.instances.affinity import split

    evaluator.warmup, evaluator.duration = arm.warmup_s, arm.duration_s
    workload = getattr(evaluator, "workload", None)
    if hasattr(workload, "thread_per_client"):  # pgbench's -j: one per client or per CPU
        workload.thread_per_client = arm.thread_per_client
    if arm.warmup_mode == "fixed" and not arm.pin and not arm.analyze:
        # what every evaluator has; the engines' own evaluators have nothing else to set
        if hasattr(workload, "warmup_mode"):
            workload.warmup_mode = "fixed"
        if hasattr(evaluator, "cpus"):
            evaluator.cpus = None
        if hasattr(evaluator, "analyze_after_restore"):
            evaluator.analyze_after_restore = False
        return
    evaluator.workload.warmup_mode = arm.warmup_mode
    evaluator.cpus = split() if arm.pin else None
    evaluator.analyze_after_restore = arm.analyze


def measure(scenario: str, arms: list[Arm], rounds: int, out: Path,
            log: Callable[[str], None], memory: str | None = None) -> None:
    opener = ((lambda lg: open_demo(lg, memory)) if scenario == DEMO else
              (lambda lg: open_scenario(scenario, lg)))
    evaluator, close, info = opener(log)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(out, "a", encoding="utf-8") as f:
            for rnd in range(1, rounds + 1):
                for arm in arms:
                    configure(evaluator, arm)
                    load_before = os.getloadavg()
                    started = time.time()
                    for member, m in enumerate(_runs(evaluator, arm)):
                        _write_row(f, log, scenario, arm, rnd, member, m, started,
                                   load_before, info)
    finally:
        close()


def _runs(evaluator: Any, arm: Arm) -> list[Any]:
    """The arm's runs of one round: one, or a pair (one after the other, or in turns)."""
    if arm.pair is None:
        return [measure_run(evaluator, TrialConfig())]
    if arm.pair == "sequence":
        return [measure_run(evaluator, TrialConfig()), measure_run(evaluator, TrialConfig())]
    from pmem_advisor.tuner.cpu_steal import measure_in_turns_undisturbed
    from pmem_advisor.tuner.verdict import turn_seconds

    pair = [TrialConfig(), TrialConfig()]
    turn_s = turn_seconds(evaluator)
    why = evaluator.in_turns_refusal(pair, turn_s)
    if why is not None:
        raise SystemExit(f"error: the pair cannot run in turns here: {why}")
    runs, _ = measure_in_turns_undisturbed(evaluator, pair, turn_s, may_rerun=lambda: False)
    return runs


def _write_row(f: Any, log: Callable[[str], None], scenario: str, arm: Arm, rnd: int,
               member: int, m: Any, started: float, load_before: tuple[float, ...],
               info: dict[str, Any]) -> None:
    """One row per run (a pair arm writes two rows of a round: member 0 and 1)."""
    row = {"scenario": scenario, "arm": asdict(arm), "round": rnd, "member": member,
           "ok": m.ok, "tps": m.throughput_tps, "failure": m.failure,
           "interim_tps": m.interim_tps,
           "window": {k: m.raw.get(k) for k in ("warmup_mode", "warmup_cut_s",
                                                "steady_detected", "measured_samples", "note")},
           "wall_s": round(time.time() - started, 2),
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
           "loadavg_before": [round(x, 2) for x in load_before],
           "loadavg_after": [round(x, 2) for x in os.getloadavg()],
           "cpu_steal_pct": m.raw.get("cpu_steal_pct"),
           **({"turn_tps": m.raw["turn_tps"]} if m.raw.get("turn_tps") else {}),
           "setup": info}
    f.write(json.dumps(row) + "\n")
    f.flush()
    tps = f"{m.throughput_tps:,.0f} tps" if m.ok else f"failed: {m.failure}"
    log(f"[{scenario}] round {rnd} {arm.name}{f' #{member + 1}' if arm.pair else ''}: {tps} "
        f"({row['wall_s']:.0f} s, cut {row['window']['warmup_cut_s']}, load "
        f"{load_before[0]:.1f}{steal_clause(row['cpu_steal_pct'])})")


# ------------------------------------------------------------------------------ summarising
def cv_pct(values: list[float]) -> float | None:
    vals = [v for v in values if v is not None]
    if len(vals) < 2 or statistics.fmean(vals) == 0:
        return None
    return 100.0 * statistics.stdev(vals) / statistics.fmean(vals)


def per_minute(cv: float | None, wall_s: float) -> float | None:
    """The spread of the mean of as many runs as one minute of wall time holds."""
    return None if cv is None else cv * math.sqrt(max(wall_s, 1e-9) / 60.0)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per arm: runs, median, spread (CV), wall time, spread per minute; per sub-window of
    the long steady runs: the same for every (warm-up rule, length)."""
    from pmem_advisor.workloads.interim import steady_start

    ok = [r for r in rows if r.get("ok") and r.get("tps")]
    arms: dict[str, list[dict[str, Any]]] = {}
    for r in ok:
        arms.setdefault(r["arm"]["name"], []).append(r)
    load = [r["loadavg_before"][0] for r in rows]
    setup = rows[0].get("setup") if rows else None
    out: dict[str, Any] = {
        "scenario": rows[0]["scenario"] if rows else None,
        "setup": setup,
        "runs": len(rows), "failed": len(rows) - len(ok),
        "first": rows[0]["started"] if rows else None,
        "last": rows[-1]["started"] if rows else None,
        "loadavg_1m": {"min": min(load, default=None), "median":
                       statistics.median(load) if load else None, "max": max(load, default=None)},
        "cpu_steal_pct": _range([r.get("cpu_steal_pct") for r in rows]),
        "machine_note": machine_note(max(load, default=None), os.cpu_count() or 1,
                                     int((setup or {}).get("clients") or 0)),
        "metric": "cv_pct = stdev/mean of the runs' tps; per_minute_pct = cv_pct * "
                  "sqrt(wall_s / 60): the spread of the mean of one minute's runs",
        "arms": {}, "windows": [], "pairs": pair_summary(ok),
    }
    for name, rs in arms.items():
        tps = [r["tps"] for r in rs]
        wall = statistics.median(r["wall_s"] for r in rs)
        if name in out["pairs"]:  # a pair's rows carry the wall time of the pair
            wall = out["pairs"][name]["wall_s"] / 2
        cv = cv_pct(tps)
        # rows from before the field ran pgbench with threads at the CPU count
        out["arms"][name] = {"arm": {"thread_per_client": False, **rs[0]["arm"]}, "n": len(rs),
                             "median_tps": round(statistics.median(tps), 1),
                             "min_tps": round(min(tps), 1), "max_tps": round(max(tps), 1),
                             "cv_pct": _r(cv), "wall_s": round(wall, 1),
                             "per_minute_pct": _r(per_minute(cv, wall)),
                             "steady_detected": sum(1 for r in rs
                                                    if (r.get("window") or {}).get(
                                                        "steady_detected")),
                             "median_cut_s": _median([(r.get("window") or {}).get(
                                 "warmup_cut_s") for r in rs])}
    # sub-windows of the long steady runs (no pinning, no analyze): length and warm-up rule
    for name, rs in arms.items():
        arm = rs[0]["arm"]
        if arm["warmup_mode"] != "steady" or arm["pin"] or arm["analyze"] or arm.get("pair"):
            continue
        overhead = statistics.median(r["wall_s"] - len(r["interim_tps"]) for r in rs)
        total = min(len(r["interim_tps"]) for r in rs)
        fixed = int(arm["warmup_s"])
        for rule in ("fixed", "mser-cut"):
            for length in sorted({5, 8, 10, 15, 20, 25, 30, 40, 50} | {total - fixed}):
                vals, cuts = [], []
                for r in rs:
                    y = r["interim_tps"]
                    cut = fixed
                    if rule == "mser-cut":  # the detector's own cut, even before the fixed one
                        d = steady_start(y[: fixed + length], max_cut=fixed + length)
                        cut = d if d is not None else fixed
                    if cut + length > len(y):
                        break
                    vals.append(statistics.fmean(y[cut:cut + length]))
                    cuts.append(cut)
                else:
                    cv = cv_pct(vals)
                    # either rule runs the fixed warm-up + the length (the detector cuts
                    # inside that run): the same wall time
                    wall = overhead + fixed + length
                    out["windows"].append({
                        "from_arm": name, "warmup_rule": rule, "length_s": length,
                        "n": len(vals), "median_tps": round(statistics.median(vals), 1),
                        "cv_pct": _r(cv), "wall_s": round(wall, 1),
                        "per_minute_pct": _r(per_minute(cv, wall)),
                        "median_cut_s": _median(cuts)})
    return out


def pair_summary(ok: list[dict[str, Any]]) -> dict[str, Any]:
    """Per pair arm: the spread of the per-round log ratio of its two runs of one config (what
    the verdict's paired test sees between two configs), the wall time of a round's pair, and
    that spread per minute of it."""
    pairs: dict[str, dict[int, dict[int, dict[str, Any]]]] = {}
    for r in ok:
        if (r.get("arm") or {}).get("pair"):
            pairs.setdefault(r["arm"]["name"], {}).setdefault(r["round"], {})[
                r.get("member", 0)] = r
    out = {}
    for name, rounds in pairs.items():
        both = [m for m in rounds.values() if 0 in m and 1 in m]
        logs = [math.log(m[0]["tps"] / m[1]["tps"]) for m in both]
        spread = 100.0 * statistics.stdev(logs) if len(logs) >= 2 else None
        wall = statistics.median(max(m[0]["wall_s"], m[1]["wall_s"]) for m in both) \
            if both else 0.0
        out[name] = {"how": both[0][0]["arm"]["pair"] if both else None, "rounds": len(both),
                     "paired_spread_pct": _r(spread),
                     "mean_log_ratio_pct": _r(100.0 * statistics.fmean(logs)) if logs else None,
                     "wall_s": round(wall, 1), "per_minute_pct": _r(per_minute(spread, wall))}
    return out


# The measurement's own clients and server are runnable tasks: the 1-minute load average of a
# quiet machine is at most one per core plus one per client plus the server's; above that,
# other work shared the machine.
def machine_note(load_max: float | None, cores: int, clients: int = 0) -> str:
    """What the rows' load averages say about the machine, for every printed summary."""
    if load_max is not None and load_max <= cores + clients + 1:
        return (f"quiet: 1-minute load at most {load_max} before each row, on {cores} cores "
                f"with {clients} clients, arms interleaved")
    return ("shared with other work (not quiet): arms interleaved, the load average recorded "
            "per row")


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def _range(xs: list[Any]) -> dict[str, float] | None:
    """min / median / max of the rows that recorded it (older rows did not)."""
    vals = [x for x in xs if x is not None]
    return ({"min": min(vals), "median": statistics.median(vals), "max": max(vals)}
            if vals else None)


def _median(xs: list[Any]) -> float | None:
    vals = [x for x in xs if x is not None]
    return statistics.median(vals) if vals else None


def table(summary: dict[str, Any]) -> list[str]:
    lines = [f"noise: {summary['scenario']} ({summary['runs']} runs, {summary['failed']} "
             f"failed, load average {summary['loadavg_1m']['min']}-"
             f"{summary['loadavg_1m']['max']}{_steal_range(summary.get('cpu_steal_pct'))}; "
             f"{summary['machine_note']})",
             f"{'arm':<24} {'n':>3} {'median tps':>11} {'spread':>7} {'wall s':>7} "
             f"{'per min':>8}"]
    for name, a in summary["arms"].items():
        lines.append(f"{name:<24} {a['n']:>3} {a['median_tps']:>11,.0f} "
                     f"{_pct(a['cv_pct']):>7} {a['wall_s']:>7.0f} {_pct(a['per_minute_pct']):>8}")
    if summary.get("pairs"):
        lines.append("pairs of runs of the one config, as the verdict compares two configs "
                     "(spread of the per-round log ratio):")
        for name, a in summary["pairs"].items():
            lines.append(f"  {name:<24} {a['rounds']:>3} rounds  pair spread "
                         f"{_pct(a['paired_spread_pct'])}  wall {a['wall_s']:.0f} s  per min "
                         f"{_pct(a['per_minute_pct'])}")
    if summary["windows"]:
        lines.append("sub-windows of the steady runs (arm, warm-up rule, length):")
        for w in summary["windows"]:
            lines.append(f"  {w['from_arm']:<10} {w['warmup_rule']:<7} {w['length_s']:>3} s  "
                         f"cut {w['median_cut_s']}"
                         f"  spread {_pct(w['cv_pct'])}  wall {w['wall_s']:.0f} s  per min "
                         f"{_pct(w['per_minute_pct'])}")
    return lines


def _steal_range(r: dict[str, float] | None) -> str:
    return "" if not r else f", CPU steal {r['min']:.0f}-{r['max']:.0f}%"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}%"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.noise",
                                description=__doc__.split("\n")[0])
    p.add_argument("scenario", nargs="?", help="demo, or a scenario name")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--arms", help="comma-separated arm names (default: all)")
    p.add_argument("--out", help="rows (JSONL), appended")
    p.add_argument("--summarise", nargs="+", metavar="ROWS", help="summarise these row files")
    p.add_argument("--json", help="write the summary here")
    p.add_argument("--memory", help="demo only: the demo's --memory (its data size follows)")
    args = p.parse_args(argv)

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    if args.summarise:
        rows = [json.loads(ln) for path in args.summarise
                for ln in Path(path).read_text(encoding="utf-8").splitlines() if ln.strip()]
        summary = summarise(rows)
        for line in table(summary):
            print(line)
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
        return 0
    if not args.scenario or not args.out:
        p.error("give a scenario and --out (or --summarise ROWS)")
    arms = arms_for(args.scenario, args.arms.split(",") if args.arms else None)
    signal.signal(signal.SIGTERM, _terminate)  # stop the server and clean up, like Ctrl-C
    try:
        measure(args.scenario, arms, args.rounds, Path(args.out), log, args.memory)
    except KeyboardInterrupt:
        log("interrupted: the rows so far are kept")
        return 130
    return 0


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    raise SystemExit(main())
