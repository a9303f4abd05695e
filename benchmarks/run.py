"""`make bench`: the tuner against its peers, side by side, interleaved in one run.

    python -m benchmarks.run [--smoke] [--scenario NAME] [--json OUT] [--out DIR] ...

Per scenario: every arm (default, rules, random, tpe, smac, pmem-advisor, ceiling) measured
through one shared evaluator, trial by trial in turn, for each seed; then a Markdown table
(stdout and DIR/report.md), a convergence plot (DIR/<scenario>.png) and JSON (DIR/results.json,
and OUT if given). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pmem_advisor.errors import EXIT_INTERNAL, AdvisorError, Interrupted, UsageError

from .harness import report, stats
from .harness.advisor_arm import AdvisorArm
from .harness.arms import ARM_NAMES, Arm, CeilingArm, DefaultArm, OptunaArm, RulesArm, SmacArm
from .harness.runner import TrialRecord, run_interleaved
from .harness.scenarios import Scenario, ScenarioContext, load_data, open_context, select

EMULATION_NOTE = (
    "note: /dev/shm is tmpfs (DRAM-backed); it stands in for persistent memory here, "
    "as the papers' memmap= emulation did. Real PMEM is slower, above all for writes."
)


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
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n")[0])
    p.add_argument("--smoke", action="store_true",
                   help="arms default, rules, tpe, pmem-advisor; 3 trials; 3 s runs; 1 scenario")
    p.add_argument("--scenario", action="append", metavar="NAME",
                   help="run only this scenario (repeatable); --list shows them")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--json", metavar="OUT", help="also write the JSON results here")
    p.add_argument("--out", default="bench-out", help="directory for report, plots, JSON")
    p.add_argument("--arms", help=f"comma-separated subset of {','.join(ARM_NAMES)}")
    p.add_argument("--budgets", type=_csv_ints,
                   help="trial budgets, e.g. 5,10,20,50 (the smaller are prefixes of the largest)")
    p.add_argument("--seeds", type=int, help="number of seeds (0, 1, ...)")
    p.add_argument("--duration", type=float, help="measured seconds per trial")
    p.add_argument("--warmup", type=float, help="warm-up seconds per trial")
    p.add_argument("--scale", type=int, help="override the scenarios' data scale")
    p.add_argument("--clients", type=int, help="override the scenarios' client count")
    p.add_argument("--ceiling-base", choices=("best", "rules"), default="best",
                   help="the safe config the unsafe ceiling starts from (default: best)")
    p.add_argument("--disk-dir", default="/var/tmp",
                   help="where 'disk' scenarios put data+WAL (default /var/tmp)")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG plots")
    return p.parse_args(argv)


def plan(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    """Resolved settings: smoke or full defaults, then explicit options on top."""
    base = dict(data["defaults"])
    names = args.scenario
    if args.smoke:
        smoke = dict(data["smoke"])
        names = names or [smoke.pop("scenario")]
        smoke.pop("scenario", None)
        base.update(smoke)
    arms = args.arms.split(",") if args.arms else list(base["arms"])
    unknown = [a for a in arms if a not in ARM_NAMES]
    if unknown:
        raise UsageError(f"unknown arm {', '.join(unknown)} (arms: {', '.join(ARM_NAMES)})")
    for key in ("budgets", "seeds", "duration", "warmup"):
        value = getattr(args, key)
        if value is not None:
            base[key] = value
    if base["seeds"] < 1 or base["duration"] <= 0 or base["warmup"] < 0:
        raise UsageError("--seeds must be >= 1, --duration > 0, --warmup >= 0")
    return {**base, "arms": arms, "scenarios": select(data, names),
            "budgets": sorted(base["budgets"]),
            "durability_off": dict(data.get("durability_off") or {})}


def make_arms(names: list[str], ctx: ScenarioContext, ceiling_base: str) -> list[Arm]:
    scn = ctx.scenario
    factories: dict[str, Callable[[], Arm]] = {
        "default": DefaultArm,
        "rules": RulesArm,
        "random": lambda: OptunaArm("random", "random"),
        "tpe": lambda: OptunaArm("tpe", "tpe"),
        "smac": SmacArm,
        "pmem-advisor": lambda: AdvisorArm(ctx.advisor_loop, ctx.advisor_note,
                                           engine=scn.engine, flavour=scn.flavour,
                                           version=scn.version),
        "ceiling": lambda: CeilingArm(ceiling_base),
    }
    return [factories[n]() for n in ARM_NAMES if n in names]


def scenario_notes(scn: Scenario, settings: dict[str, Any], ctx: ScenarioContext) -> list[str]:
    notes = []
    if scn.emulated_pmem:
        notes.append(EMULATION_NOTE)
    budgets = settings["budgets"]
    if len(budgets) > 1:
        notes.append(
            f"budgets {', '.join(map(str, budgets[:-1]))} are prefixes of the {budgets[-1]}-trial"
            " runs (one run per arm and seed, read at each budget), not separate runs; "
            "optimisers that size their start-up phase by the budget saw the largest one"
        )
    notes.append(
        f"{settings['seeds']} seed(s); arms interleaved round-robin trial by trial (the order "
        "rotates every round); every trial restores the same golden data"
    )
    notes.append(
        "best tps = the highest median over repeated measurements of one config (a failure "
        "counts 0), the same rule for every arm; spread = min - max over seeds"
    )
    if "smac" not in settings["arms"]:
        notes.append("no smac arm in this run: the 'x smac' and 'trials to 95%' columns stay "
                     "empty")
    notes.append(f"trials: {settings['duration']:g} s measured after {settings['warmup']:g} s "
                 "warm-up")
    if ctx.space.params:
        notes.append(f"peers' space ({ctx.space.source}): "
                     + ", ".join(p.name for p in ctx.space.params))
    notes.extend(ctx.notes)
    return notes


def progress_line(scenario: str) -> Callable[[TrialRecord], None]:
    def show(rec: TrialRecord) -> None:
        m = rec.measurement
        result = f"{m.throughput_tps:,.0f} tps" if m.ok and m.throughput_tps is not None else (
            f"failed: {(m.failure or 'no result')[:100]}")
        where = "final" if rec.round < 0 else f"round {rec.round + 1}"
        print(f"[{scenario}] seed {rec.seed} {where} {rec.arm} #{rec.index}: {result} "
              f"({rec.wall_s:.1f} s)", file=sys.stderr, flush=True)

    return show


def run_scenario(scn: Scenario, settings: dict[str, Any], args: argparse.Namespace,
                 open_ctx: Callable[..., ScenarioContext], out: Path) -> report.ScenarioResult:
    print(f"\n== {scn.name}: {scn.title()}", file=sys.stderr, flush=True)
    if scn.emulated_pmem:
        print(EMULATION_NOTE, file=sys.stderr)
    t0 = time.monotonic()
    ctx = open_ctx(scn, settings, duration=settings["duration"], warmup=settings["warmup"],
                   disk_dir=args.disk_dir, scale=args.scale, clients=args.clients)
    try:
        scn = ctx.scenario  # with --scale/--clients applied
        arms = make_arms(settings["arms"], ctx, args.ceiling_base)
        seeds = list(range(settings["seeds"]))
        budget = max(settings["budgets"])
        records, statuses = run_interleaved(ctx.evaluator, ctx.space, arms, budget=budget,
                                            seeds=seeds, progress=progress_line(scn.name))
    finally:
        ctx.close()
    rows = stats.compute(records, statuses, settings["budgets"], seeds)
    result = report.ScenarioResult(
        scn.name, scn.title(), settings["budgets"], seeds, records, statuses, rows,
        notes=scenario_notes(scn, settings, ctx), wall_s=time.monotonic() - t0,
        meta={**ctx.meta, "engine": scn.engine, "flavour": scn.flavour,
              "version": scn.version, "workload": scn.workload, "placement": scn.placement,
              "emulated_pmem": scn.emulated_pmem, "scale": scn.scale, "clients": scn.clients},
    )
    if not args.no_plot:
        try:
            result.plot = report.plot_convergence(result, out / f"{scn.name}.png")
        except ImportError as exc:
            result.notes.append(f"no plot: {exc} (pip install matplotlib)")
    return result


def main(argv: list[str] | None = None,
         open_ctx: Callable[..., ScenarioContext] = open_context) -> int:
    args = parse_args(argv)
    try:
        data = load_data()
        if args.list:
            for s in data["scenarios"]:
                print(f"{s.name}: {s.title()}")
            return 0
        settings = plan(args, data)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        meta = {
            "mode": "smoke" if args.smoke else "full",
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "arms": settings["arms"], "budgets": settings["budgets"], "seeds": settings["seeds"],
            "duration_s": settings["duration"], "warmup_s": settings["warmup"],
            "ceiling_base": args.ceiling_base,
        }
        results: list[report.ScenarioResult] = []
        skipped: list[dict[str, str]] = []
        for scn in settings["scenarios"]:
            try:
                results.append(run_scenario(scn, settings, args, open_ctx, out))
            except (Interrupted, KeyboardInterrupt):
                raise
            except AdvisorError as exc:  # this scenario cannot run here; the others may
                print(f"[{scn.name}] not run: {exc}", file=sys.stderr)
                skipped.append({"name": scn.name, "title": scn.title(), "reason": str(exc)})
            # Write after every scenario: a long run interrupted later keeps what it measured.
            write_outputs(results, skipped, meta, out, args.json)
        for res in results:
            print(report.markdown(res))
        for s in skipped:
            print(f"### {s['name']}: {s['title']}\n\nnot run: {s['reason']}\n")
        print(f"results: {out}/report.md, {out}/results.json"
              + (f", {args.json}" if args.json else ""), file=sys.stderr)
        return 3 if skipped else 0
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
                  meta: dict[str, Any], out: Path, json_path: str | None) -> None:
    md = "".join(report.markdown(r) + "\n" for r in results)
    md += "".join(f"### {s['name']}: {s['title']}\n\nnot run: {s['reason']}\n\n"
                  for s in skipped)
    (out / "report.md").write_text(md)
    report.write_json(results, out / "results.json", meta, skipped)
    if json_path:
        report.write_json(results, json_path, meta, skipped)


if __name__ == "__main__":
    sys.exit(main())
