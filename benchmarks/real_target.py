"""Ask the real server whether a `make bench` target between two arms holds. "pmem-advisor@5
>= SMAC3@50" is judged on the surrogate, and an optimiser given ten times the trials has ten
times the chances to land on a corner the surrogate over-predicts. Here each arm's pick at
its budget (the config it observed best, what it would hand a DBA) is taken from several
seeds of a bench run and measured on the scenario's real server, every pick in every round,
interleaved and rotated (``validate.measure_interleaved``). The tuner's paired test on the log
ratios (``tuner.stats.compare_paired``) is said twice: paired by seed and round (how much these
picks differ) and with the seed as the unit, each seed's two medians (whether one arm's picks
beat the other's in general; few seeds rarely decide it).

    python -m benchmarks.real_target mariadb1011-oltp-write-only-disk \\
        --results /tmp/bench/results.json --ours pmem-advisor@5 --theirs smac@50 \\
        --seeds 0-4 --rounds 3

It takes (distinct picks) x rounds real runs (about 45 s each on the MariaDB scenarios): run
it on a quiet machine. With ``--out``, the JSON beside the dataset
(``benchmarks/data/NAME.real-target.json``) puts its verdict under the target in `make bench`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import dataset, surrogate
from benchmarks.validate import (
    ALPHA,
    Candidate,
    bench_result,
    final_configs,
    guarded,
    measure_interleaved,
    on_real_server,
    scenario_data,
    scenario_parser,
)
from pmem_advisor.tuner.evaluator import Evaluator

MIN_PAIRS = 3  # a paired t-test on two pairs has one degree of freedom: it says nothing
SUFFIX = ".real-target.json"


def parse_arm(text: str) -> tuple[str, int]:
    """``ARM@BUDGET`` (``smac@50``)."""
    from pmem_advisor.errors import UsageError

    arm, _, budget = text.partition("@")
    try:
        n = int(budget)
    except ValueError:
        n = 0
    if not arm or n < 1:
        raise UsageError(f"{text!r}: give an arm and its budget as ARM@N (smac@50)")
    return arm, n


def parse_seeds(text: str) -> list[int]:
    """``0-4`` or ``0,3,7``."""
    from pmem_advisor.errors import UsageError

    seeds: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            seeds.extend(range(int(low), int(high or low) + 1))
    except ValueError:
        raise UsageError(f"--seeds {text!r}: give seeds as 0-4 or 0,3,7") from None
    if not seeds:
        raise UsageError(f"--seeds {text!r} names no seed")
    return list(dict.fromkeys(seeds))


def picks(result: dict[str, Any], arm: str, budget: int, seeds: list[int]
          ) -> dict[int, Candidate]:
    """``arm``'s final config at ``budget`` in each seed that has one."""
    one = {"arms": [{"name": arm}], "trials": result.get("trials", [])}
    out = {}
    for seed in seeds:
        found = final_configs(one, budget, seed, {})
        if found:
            out[seed] = found[0]
    return out


def check(evaluator: Evaluator, ours: dict[int, Candidate], theirs: dict[int, Candidate],
          rounds: int, *, labels: tuple[str, str],
          predict: Callable[[Candidate], float | None] = lambda c: None,
          log: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Every distinct pick measured ``rounds`` times, interleaved; ours against theirs paired
    by seed and round."""
    seeds = [s for s in ours if s in theirs]
    distinct: dict[str, Candidate] = {}
    for side, label in ((ours, labels[0]), (theirs, labels[1])):
        for seed in seeds:
            c = side[seed]
            kept = distinct.setdefault(c.key, Candidate(c.config, []))
            kept.arms.append(f"{label} seed {seed}")
    cands = list(distinct.values())
    for c in cands:
        c.predicted = predict(c)
    measure_interleaved(evaluator, cands, rounds, log=log)
    per_seed = []
    for seed in seeds:
        mine, other = distinct[ours[seed].key], distinct[theirs[seed].key]
        per_seed.append({"seed": seed, "same_config": mine is other,
                         "ours": {"params": mine.config.params, "predicted": mine.predicted,
                                  "runs": mine.runs, "median": mine.median()},
                         "theirs": {"params": other.config.params,
                                    "predicted": other.predicted, "runs": other.runs,
                                    "median": other.median()}})
    return {"ours": labels[0], "theirs": labels[1], "rounds": rounds, "per_seed": per_seed,
            "verdict": by_round(per_seed),
            "failures": {" / ".join(c.arms): c.failures for c in cands if c.failures}}


def by_round(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    """Ours against theirs paired by seed and round (both picks of a seed ran in each round)."""
    from pmem_advisor.tuner.stats import compare_paired

    return compare_paired([r for s in per_seed for r in s["ours"]["runs"]],
                          [r for s in per_seed for r in s["theirs"]["runs"]], alpha=ALPHA)


def combine(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Checks of one target on one scenario, run at different times on different seeds, as
    one: each seed's two picks ran in the same rounds of one run, so the pairing holds."""
    from pmem_advisor.errors import UsageError

    same = ("scenario", "ours", "theirs", "rounds")
    first = parts[0]
    for part in parts[1:]:
        if any(part.get(k) != first.get(k) for k in same):
            raise UsageError("checks to combine must share the scenario, both arms and the "
                             f"rounds: {', '.join(str(part.get(k)) for k in same)} against "
                             f"{', '.join(str(first.get(k)) for k in same)}")
    per_seed = sorted((s for part in parts for s in part["per_seed"]), key=lambda s: s["seed"])
    seeds = seeds_of({"per_seed": per_seed})
    twice = sorted({s for s in seeds if seeds.count(s) > 1})
    if twice:
        raise UsageError(f"seed {_seeds(twice)} is in more than one check")
    return {**{k: first.get(k) for k in same}, "per_seed": per_seed,
            "verdict": by_round(per_seed),
            "failures": {k: v for part in parts for k, v in (part.get("failures") or {}).items()},
            # a part that was itself combined counts the runs it came from
            "combined_from": sum(part.get("combined_from") or 1 for part in parts)}


def seeds_of(result: dict[str, Any]) -> list[int]:
    return [s["seed"] for s in result["per_seed"]]


def by_seed(result: dict[str, Any]) -> dict[str, Any]:
    """Ours against theirs with the seed as the unit (each seed's two medians): the test of
    whether one arm's picks beat the other's in general, where the rounds only say how much
    these picks differ."""
    from pmem_advisor.tuner.stats import compare_paired

    seeds = result["per_seed"]
    return compare_paired([s["ours"]["median"] for s in seeds],
                          [s["theirs"]["median"] for s in seeds], alpha=ALPHA)


def summary(result: dict[str, Any]) -> str:
    v = result["verdict"]
    head = (f"on the real server, {result['ours']} against {result['theirs']} "
            f"(each one's pick in seeds {_seeds(seeds_of(result))}; {result['rounds']} "
            "interleaved rounds"
            + (f", {result['combined_from']} runs combined" if result.get("combined_from")
               else "") + ")")
    if v.get("gain_pct") is None or v.get("ci_low_pct") is None or v["n_a"] < MIN_PAIRS:
        return f"{head}: too few paired runs to compare ({v['n_a']})"
    said = {"better": "faster", "worse": "slower"}
    # a seed where either pick never ran says nothing about who is ahead
    compared = [s for s in result["per_seed"]
                if s["ours"]["median"] is not None and s["theirs"]["median"] is not None]
    # and a seed where both arms picked the same config is alike, not ours ahead
    wins = sum(1 for s in compared if s["ours"]["median"] > s["theirs"]["median"])
    alike = sum(1 for s in compared if s["same_config"])
    seeds = by_seed(result)
    seed_text = (f"seed by seed p {seeds['p_value']:.2g}: "
                 + said.get(seeds["decision"], "no significant difference")
                 if seeds.get("p_value") is not None else "too few seeds for a test")
    predicted = [s["ours"]["predicted"] / s["theirs"]["predicted"] for s in result["per_seed"]
                 if s["ours"]["predicted"] and s["theirs"]["predicted"]]
    surrogate_said = (f"; the surrogate had said {statistics.median(predicted):.2f}x"
                      if predicted else "")
    round_text = (f"ours {said[v['decision']]} on these picks" if v["decision"] in said
                  else "no significant difference")
    return (f"{head}: {v['gain_pct']:+.1f}% [{v['ci_low_pct']:+.1f}%, "
            f"{v['ci_high_pct']:+.1f}%] paired by round (p {v['p_value']:.2g}: {round_text});"
            f" ours ahead in {wins} of {len(compared)} seeds"
            + (f", {alike} with the same pick" if alike else "") + f" ({seed_text})"
            f"{surrogate_said}")


def _seeds(seeds: list[int]) -> str:
    return ", ".join(map(str, seeds))


def summary_line(name: str, data_dir: Path) -> str | None:
    """The scenario's committed check (benchmarks/data/NAME.real-target.json) in one line for
    `make bench`; None when there is none or it cannot be read."""
    try:
        return summary(json.loads((data_dir / f"{name}{SUFFIX}").read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = scenario_parser("python -m benchmarks.real_target", __doc__)
    p.add_argument("--results", default="bench-out/results.json",
                   help="the results.json of a `make bench` run that covered the scenario")
    p.add_argument("--ours", default="pmem-advisor@5", metavar="ARM@N")
    p.add_argument("--theirs", default="smac@50", metavar="ARM@N")
    p.add_argument("--seeds", default="0-4", help="the bench seeds whose picks are measured")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--combine", nargs="+", metavar="CHECK.json",
                   help="no server: combine saved checks of other seeds into one")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return guarded(lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    from pmem_advisor.errors import UsageError

    if args.combine:
        out = combine([_read_check(path, args.scenario) for path in args.combine])
        return _said(out, args.out)
    ours_arm, theirs_arm = parse_arm(args.ours), parse_arm(args.theirs)
    seeds = parse_seeds(args.seeds)
    if args.rounds * len(seeds) < MIN_PAIRS:
        raise UsageError(f"--rounds x seeds must be >= {MIN_PAIRS} (a paired test on fewer "
                         "pairs says nothing on a noisy machine)")
    result = bench_result(args.results, args.scenario)
    try:  # before any server starts: a file of another shape fails in a second
        ours = picks(result, *ours_arm, seeds)
        theirs = picks(result, *theirs_arm, seeds)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{args.results} is not a `make bench` results.json this version "
                         f"reads ({type(exc).__name__}: {exc})") from None
    both = [s for s in seeds if s in ours and s in theirs]
    if not both:
        raise UsageError(f"{args.results} has no pick of {args.ours} and {args.theirs} in "
                         f"seeds {_seeds(seeds)}")
    data = scenario_data(args)
    x, y = data.training()
    fitted = surrogate.fit(x, y, seed=0)
    model = (surrogate.SurrogateEvaluator(data, fitted, seed=0)
             if fitted.model is not None else None)
    out = on_real_server(args.scenario, lambda ev, log: check(
        ev, ours, theirs, args.rounds, labels=(args.ours, args.theirs), log=log,
        predict=lambda c: model.expected(c.config) if model else None))
    out["scenario"] = args.scenario
    return _said(out, args.out)


def _said(out: dict[str, Any], path: str | None) -> int:
    for s in out["per_seed"]:
        print(f"seed {s['seed']}: {out['ours']} " + _runs(s["ours"]["runs"])
              + f"; {out['theirs']} " + _runs(s["theirs"]["runs"]))
    print(summary(out))
    if path:
        dataset.write_json(Path(path), out)
    return 0


def _runs(runs: list[float | None]) -> str:
    return ", ".join("failed" if r is None else f"{r:,.0f}" for r in runs)


def _read_check(path: str, scenario: str) -> dict[str, Any]:
    from pmem_advisor.errors import UsageError

    try:
        check_ = json.loads(Path(path).read_text(encoding="utf-8"))
        if check_["scenario"] != scenario or not check_["per_seed"]:
            raise ValueError(f"not a check of {scenario}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"cannot combine {path}: {exc}") from None
    return check_


if __name__ == "__main__":
    sys.exit(main())
