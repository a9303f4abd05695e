"""The real validation of `make bench`: does the surrogate's ranking of the arms hold on the
real server?

For one scenario of a `make bench` run (its results.json), each arm's final config at a budget
(default 10: the config the arm observed best within its first 10 trials of one seed; the
fixed arms answer with their own config) is measured on the real server through the
scenario's own evaluator (golden copy restored every run, the memory cgroup of its budget),
interleaved round-robin and repeated. The table puts the surrogate's noise-free value of each
config beside the real median and says whether the ranking held (Spearman's rank correlation
of the two; the top arm by each).

    python -m benchmarks.validate pg18-tpcb-disk --results bench-out/results.json

It takes arms x repeats real trials (minutes each): run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.harness import dataset, surrogate
from pmem_advisor.tuner.evaluator import Evaluator, TrialConfig

BUDGET = 10
REPEATS = 5
# Spearman at or above this over the arms' configs: "the ranking held". Below it the
# surrogate's ordering is not trusted for this scenario, whatever its held-out R^2 said.
HELD_SPEARMAN = 0.6
# The level of every paired test asked of the real server (here, ab and real_target): our
# config is "within noise" of the best safe arm's unless the rounds show it worse at it.
ALPHA = 0.05
OURS = "pmem-advisor"
UNSAFE = ("ceiling",)  # durability off: the best *safe* arm is the one to be measured against


@dataclass
class Candidate:
    """One config to measure, and the arms that ended on it (identical configs run once)."""

    config: TrialConfig
    arms: list[str]
    predicted: float | None = None  # the surrogate's noise-free value
    runs: list[float | None] = field(default_factory=list)  # None: the run failed
    failures: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return json.dumps([self.config.params, self.config.init_params], sort_keys=True,
                          default=str)

    def median(self) -> float | None:
        ok = [v for v in self.runs if v is not None]
        return statistics.median(ok) if ok else None


def final_configs(result: dict[str, Any], budget: int, seed: int,
                  fixed: dict[str, TrialConfig]) -> list[Candidate]:
    """Each arm's final config at ``budget`` in ``seed``: the best run it observed (what it
    would hand a DBA); fixed arms (default, rules, ceiling) answer with their own config."""
    by_key: dict[str, Candidate] = {}
    # results.json lists each arm once per budget under "name" (harness.report.write_json)
    arms = [a["name"] for a in result.get("arms", [])] or sorted(
        {t["arm"] for t in result.get("trials", [])})
    for arm in dict.fromkeys(arms):
        if arm in fixed:
            config = fixed[arm]
        else:
            runs = [t for t in result.get("trials", [])
                    if t["arm"] == arm and t["seed"] == seed and t["trial"] <= budget
                    and t.get("ok") and t.get("throughput_tps") is not None]
            if not runs:
                continue
            best = max(runs, key=lambda t: t["throughput_tps"])
            config = TrialConfig(params=dict(best["params"]),
                                 init_params=dict(best.get("init_params") or {}))
        cand = Candidate(config, [arm])
        if cand.key in by_key:
            by_key[cand.key].arms.append(arm)
        else:
            by_key[cand.key] = cand
    return list(by_key.values())


def measure_interleaved(evaluator: Evaluator, cands: list[Candidate], repeats: int, *,
                        log: Callable[[str], None] = lambda s: None) -> None:
    """``repeats`` rounds; each round runs every candidate once, the order rotated by one each
    round so that no config always runs first (or right after the same neighbour)."""
    n = len(cands)
    for rnd in range(repeats):
        for i in range(n):
            c = cands[(i + rnd) % n]
            t0 = time.monotonic()
            m = evaluator.evaluate(c.config)
            c.runs.append(m.throughput_tps if m.ok else None)
            if not m.ok:
                c.failures.append(" ".join(str(m.failure or "no result").split()))
            log(f"round {rnd + 1}/{repeats} {'/'.join(c.arms)}: "
                + (f"{m.throughput_tps:.1f} tps" if m.ok else f"failed: {c.failures[-1]}")
                + f" ({time.monotonic() - t0:.0f} s)")


def agreement(cands: list[Candidate]) -> dict[str, Any]:
    """Whether the surrogate's ranking held: Spearman of predicted vs real medians, and the
    top config by each. Candidates without a real median or prediction are left out, said."""
    both = [c for c in cands if c.median() is not None and c.predicted is not None]
    out: dict[str, Any] = {"compared": len(both),
                           "left_out": ["/".join(c.arms) for c in cands if c not in both]}
    if len(both) < 3:
        out.update(spearman=None, held=None,
                   text=f"only {len(both)} configs measured on both: no ranking to compare")
        return out
    rho = surrogate.spearman([c.predicted for c in both], [c.median() for c in both])
    top_pred = max(both, key=lambda c: c.predicted)
    top_real = max(both, key=lambda c: c.median())
    held = rho >= HELD_SPEARMAN
    out.update(spearman=rho, held=held, top_predicted="/".join(top_pred.arms),
               top_real="/".join(top_real.arms),
               text=(f"the surrogate's ranking {'held' if held else 'did NOT hold'} "
                     f"(Spearman {rho:.2f} over {len(both)} configs, held at >= "
                     f"{HELD_SPEARMAN}); top by the surrogate: {'/'.join(top_pred.arms)}, "
                     f"on the real server: {'/'.join(top_real.arms)}"))
    return out


def versus_best(cands: list[Candidate], ours: str = OURS,
                alpha: float = ALPHA) -> dict[str, Any]:
    """Our config's real runs against the best safe arm's (highest real median; the ceiling
    is not safe): the best itself, within noise, or below it. The rounds are interleaved, so
    the comparison is paired by round (advisor/tuner/stats.compare_paired: a paired t-test on
    the per-round log ratios); a failed run drops its round."""
    from pmem_advisor.tuner import stats

    mine = next((c for c in cands if ours in c.arms), None)
    safe = [c for c in cands if c.median() is not None
            and not any(a in UNSAFE for a in c.arms)]
    if mine is None or mine.median() is None or not safe:
        return {"decision": None, "text": f"{ours}: no completed runs to compare"}
    best = max(safe, key=lambda c: c.median())
    default = next((c for c in cands if "default" in c.arms and c.median()), None)
    x_default = (f" ({mine.median() / default.median():.2f}x the defaults)"
                 if default else "")
    if best is mine:
        return {"decision": "best", "best": "/".join(mine.arms),
                "text": f"{ours}'s config is the best safe arm on the real server{x_default}"}
    cmp = stats.compare_paired(mine.runs, best.runs, alpha=alpha)
    name = "/".join(best.arms)
    if cmp["ci_low_pct"] is None:
        return {"decision": None, "best": name, **cmp,
                "text": f"{ours}: too few paired rounds to compare with {name}"}
    gap = (f"{cmp['gain_pct']:+.1f}% [{cmp['ci_low_pct']:+.1f}%, {cmp['ci_high_pct']:+.1f}%] "
           f"at {cmp['confidence']:.0%}, paired over {cmp['n_a']} rounds, p {cmp['p_value']:.2f}")
    decision = "below" if cmp["decision"] == "worse" else "within-noise"
    text = (f"{ours}'s config is below the best safe arm, {name}: {gap}{x_default}"
            if decision == "below" else
            f"{ours}'s config is within noise of the best safe arm, {name}: {gap}{x_default}")
    return {**cmp, "decision": decision, "best": name, "text": text}


def from_json(saved: dict[str, Any]) -> list[Candidate]:
    """The candidates of a saved validation (its "configs"), runs and predictions included."""
    return [Candidate(TrialConfig(params=dict(c.get("params") or {}),
                                  init_params=dict(c.get("init_params") or {})),
                      list(c["arms"]), c.get("predicted"), list(c.get("runs") or []),
                      list(c.get("failures") or [])) for c in saved["configs"]]


def summary_line(name: str, data_dir: Path) -> str | None:
    """The scenario's committed real validation (benchmarks/data/NAME.validation.json) in one
    line for `make bench`: whether the ranking held and where our config stood."""
    path = data_dir / f"{name}.validation.json"
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        cands = from_json(saved)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (f"real validation ({path.name}, budget {saved.get('budget')}, "
            f"{saved.get('repeats')} interleaved rounds): {agreement(cands)['text']}; "
            f"{versus_best(cands)['text']}")


def table(cands: list[Candidate], default_median: float | None) -> str:
    lines = ["| arm(s) | surrogate (noise-free) | real median | real min-max | x default "
             "| failed |", "|---|---|---|---|---|---|"]
    for c in sorted(cands, key=lambda c: -(c.median() or 0)):
        ok = [v for v in c.runs if v is not None]
        med = c.median()
        lines.append(
            f"| {'/'.join(c.arms)} | "
            + (f"{c.predicted:,.1f}" if c.predicted is not None else "-") + " | "
            + (f"{med:,.1f}" if med is not None else "-") + " | "
            + (f"{min(ok):,.1f}-{max(ok):,.1f}" if ok else "-") + " | "
            + (f"{med / default_median:.2f}x" if med and default_median else "-")
            + f" | {len(c.failures)}/{len(c.runs)} |")
    return "\n".join(lines)


def candidates(result: dict[str, Any], data: surrogate.ScenarioData, budget: int = BUDGET,
               seed: int = 0) -> list[Candidate]:
    """The configs to measure: ``final_configs`` with the dataset's fixed points."""
    fixed = {k: c for k in ("default", "rules", "ceiling")
             if (c := data.fixed_config(k)) is not None}
    fixed.setdefault("default", TrialConfig())
    return final_configs(result, budget, seed, fixed)


def validate(cands: list[Candidate], data: surrogate.ScenarioData, evaluator: Evaluator, *,
             budget: int = BUDGET, seed: int = 0, repeats: int = REPEATS,
             log: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """The whole validation of ``cands`` (see ``candidates``) on ``evaluator`` (the real
    server, or a stand-in in tests)."""
    x, y = data.training()
    fitted = surrogate.fit(x, y, seed=0)
    if fitted.model is not None:
        model = surrogate.SurrogateEvaluator(data, fitted, seed=seed)
        for c in cands:
            c.predicted = model.expected(c.config)
    measure_interleaved(evaluator, cands, repeats, log=log)
    default = next((c for c in cands if "default" in c.arms), None)
    verdict = agreement(cands)
    return {"scenario": data.name, "budget": budget, "seed": seed, "repeats": repeats,
            "agreement": verdict, "versus_best": versus_best(cands),
            "table": table(cands, default.median() if default else None),
            "configs": [{"arms": c.arms, "params": c.config.params,
                         "init_params": c.config.init_params, "predicted": c.predicted,
                         "runs": c.runs, "failures": c.failures} for c in cands]}


def scenario_parser(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """The arguments every question to a scenario's real server shares: the scenario, the
    datasets' directory, where the JSON goes."""
    p = argparse.ArgumentParser(prog=prog, description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", help="a scenario name (benchmarks/scenarios/NAME.yaml)")
    p.add_argument("--data-dir", default=str(dataset.DATA_DIR))
    p.add_argument("--out", help="write the runs and the verdict as JSON here")
    return p


def bench_result(path: str, scenario: str) -> dict[str, Any]:
    """``scenario``'s result in a `make bench` results.json; a usage error when the file
    cannot be read or does not cover it."""
    from pmem_advisor.errors import UsageError

    try:
        results = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {exc}; run `make bench` first") from None
    listed = (results.get("scenarios", results.get("results", []))
              if isinstance(results, dict) else [])
    result = next((r for r in listed if isinstance(r, dict) and r.get("name") == scenario),
                  None)
    if result is None:
        raise UsageError(f"{path} has no scenario {scenario!r}")
    return result


def scenario_data(args: argparse.Namespace) -> surrogate.ScenarioData:
    """The dataset of ``args.scenario`` in ``args.data_dir``; a usage error when it is not
    there."""
    from pmem_advisor.errors import UsageError

    try:
        data = surrogate.load_scenario(args.scenario, Path(args.data_dir))
    except OSError as exc:
        raise UsageError(f"no dataset for {args.scenario} in {args.data_dir} "
                         f"({exc.strerror or exc})") from None
    if not data.rows and not data.provenance:  # a mistyped --data-dir: not a server's time
        raise UsageError(f"no dataset for {args.scenario} in {args.data_dir}")
    return data


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = scenario_parser("python -m benchmarks.validate", __doc__)
    p.add_argument("--results", default="bench-out/results.json",
                   help="the results.json of a `make bench` run that covered the scenario")
    p.add_argument("--budget", type=int, default=BUDGET)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=REPEATS)
    return p.parse_args(argv)


def on_real_server(name: str, measure: Callable[[Evaluator, Callable[[str], None]],
                                                 dict[str, Any]]) -> dict[str, Any]:
    """``measure`` run on scenario ``name``'s real server (started, then stopped whatever
    happens), progress on stderr; the emulation caveat added to its result when /dev/shm
    stands in for PMEM, so it reaches every output."""
    from benchmarks import collect
    from benchmarks.harness import scenario as scenarios

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    ctx = collect.open_real(scenarios.get(name), log=log)
    try:
        out = measure(ctx.evaluator, log)
    finally:
        ctx.close()
    if ctx.scenario.emulated_pmem:
        out["notes"] = [collect.EMULATION_NOTE]
        print(f"note: {collect.EMULATION_NOTE}", file=sys.stderr)
    return out


def guarded(body: Callable[[], int]) -> int:
    """``body``'s exit code; a usage error, an interrupt or a bug as one line and its own
    exit code, never a traceback."""
    from pmem_advisor.errors import EXIT_INTERNAL, AdvisorError, Interrupted

    try:
        return body()
    except AdvisorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except (Interrupted, KeyboardInterrupt):
        print("interrupted: nothing is written", file=sys.stderr)
        return Interrupted.exit_code
    except Exception as exc:  # a bug: one line, and the exit code says so
        print(f"internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return guarded(lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    from pmem_advisor.errors import UsageError

    if args.budget < 1 or args.repeats < 3:
        raise UsageError("--budget must be >= 1 and --repeats >= 3 (a median of fewer "
                         "runs says nothing on a noisy machine)")
    result = bench_result(args.results, args.scenario)
    data = scenario_data(args)
    try:  # before any server starts: a file of another shape fails in a second
        cands = candidates(result, data, args.budget, args.seed)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{args.results} is not a `make bench` results.json this version "
                         f"reads ({type(exc).__name__}: {exc})") from None
    out = on_real_server(args.scenario, lambda ev, log: validate(
        cands, data, ev, budget=args.budget, seed=args.seed, repeats=args.repeats, log=log))
    print(out["table"])
    print(out["agreement"]["text"])
    print(out["versus_best"]["text"])
    if args.out:
        dataset.write_json(Path(args.out), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
