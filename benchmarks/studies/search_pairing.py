"""Would the search pick better if it measured as the verdict does? A finished demo's search
configs, each against rules-only, measured two ways in interleaved rounds:

- ``sequential``: as the search measured before tuner/pairing.py (and still measures a trial
  it cannot pair), one run per config one after another (rules-only first, then the
  candidates in a rotating order), each candidate's ratio to the round's rules-only run;
- ``paired``: as the verdict measures, and the search where it can, each candidate side by
  side with rules-only (``Evaluator.evaluate_in_turns``, 1 s turns, ``--paired-seconds``
  each), its ratio to the rules-only turns beside it.

    python -m benchmarks.studies.search_pairing --study demo-out/study.db --rounds 4 \\
        --out rows.jsonl
    python -m benchmarks.studies.search_pairing --summarise rows.jsonl --json summary.json

Per way: the error of one measurement of a candidate's ratio (the spread of its log ratio over
the rounds, pooled over the candidates), each candidate's gain and the wall time per round. The
search picks among candidates by one such ratio each, so that error says how far apart two
candidates must be before the pick is more than the machine's swings. The verdict's turns (1 s)
come from ``Workload.turn_s``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import demo_study
from benchmarks.harness import dataset
from benchmarks.validate import guarded

MODES = ("sequential", "paired")


def configs(study_db: Path) -> tuple[list[int], list[Any]]:
    """Trial numbers and configs of a finished demo: rules-only first, then every measured
    search trial."""
    from pmem_advisor.errors import UsageError
    from pmem_advisor.tuner.study import CONFIG_ATTR, ROLE_ATTR, measured
    from pmem_advisor.tuner.verdict import trial_config

    study = demo_study.load(study_db)
    trials = [t for t in (study.trials if study else []) if t.user_attrs.get(CONFIG_ATTR)
              and measured(t) is not None]
    rules = [t for t in trials if t.user_attrs.get(ROLE_ATTR) == "rules"]
    search = [t for t in trials if t.user_attrs.get(ROLE_ATTR) == "search"]
    if not rules or len(search) < 2:
        raise UsageError(f"{study_db} has no measured rules-only trial and two search trials")
    chosen = [rules[0], *search]
    return [t.number for t in chosen], [trial_config(t) for t in chosen]


def measure(numbers: list[int], configs_: list[Any], rounds: int, paired_s: int, out: Path
            ) -> None:
    from pmem_advisor.tuner.verdict import turn_seconds

    from .. import noise

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    evaluator, close, info = noise.open_demo(log, noise.demo.MEMORY)
    turn_s = turn_seconds(evaluator)
    sequential_s = evaluator.duration
    rules, candidates = configs_[0], list(range(1, len(configs_)))
    try:
        with dataset.appender(out) as f:
            for rnd in range(rounds):
                shift = rnd % len(candidates)
                order = candidates[shift:] + candidates[:shift]
                # round 0 runs sequential first: its first run makes the golden copy that
                # the side-by-side servers are restored from
                modes = MODES if rnd % 2 == 0 else MODES[::-1]
                for mode in modes:
                    started = time.time()
                    tps: list[float | None] = [None] * len(configs_)
                    if mode == "sequential":
                        evaluator.duration = sequential_s
                        for k in [0, *order]:
                            m = evaluator.evaluate(configs_[k])
                            tps[k] = m.throughput_tps if m.ok else None
                        ratios = {k: tps[k] / tps[0] if tps[k] and tps[0] else None
                                  for k in candidates}
                    else:
                        evaluator.duration = paired_s
                        ratios = {}
                        for k in order:
                            ms = evaluator.evaluate_in_turns([rules, configs_[k]], turn_s)
                            ok = all(m.ok and m.throughput_tps for m in ms)
                            ratios[k] = (ms[1].throughput_tps / ms[0].throughput_tps
                                         if ok else None)
                    row = {"round": rnd, "mode": mode, "trials": numbers,
                           "ratios": [ratios[k] for k in candidates],
                           "seconds": sequential_s if mode == "sequential" else paired_s,
                           "turn_s": turn_s, "wall": round(time.time() - started, 1),
                           "setup": info}
                    dataset.append_row(f, row)
                    shown = ", ".join(f"{r:.3f}" if r else "failed" for r in row["ratios"])
                    log(f"round {rnd + 1} of {rounds}, {mode}: candidates / rules-only "
                        f"{shown} ({row['wall']:.0f} s)")
    finally:
        close()


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per way: the pooled error of one ratio, each candidate's gain over rules-only (the
    geometric mean over the rounds) and the wall time per round."""
    logs: dict[str, list[list[float | None]]] = {m: [] for m in MODES}
    walls: dict[str, list[float]] = {m: [] for m in MODES}
    for r in rows:
        logs[r["mode"]].append([math.log(x) if x else None for x in r["ratios"]])
        walls[r["mode"]].append(float(r["wall"]))
    width = {len(v) for m in MODES for v in logs[m]}
    if len(width) != 1:
        raise ValueError("rows of different studies, or none")
    n = width.pop()
    out: dict[str, Any] = {
        "metric": "error_pct: the spread over the rounds of one candidate's log ratio to "
                  "rules-only, pooled over the candidates (n - 1 each); gain_pct: each "
                  "candidate over rules-only, the geometric mean over the rounds",
        "ways": {}}
    for m in MODES:
        rounds = [v for v in logs[m] if all(x is not None for x in v)]
        if not rounds:
            continue
        dev, gains = [], []
        for k in range(n):
            xs = [v[k] for v in rounds]
            mean = statistics.fmean(xs)
            gains.append(round(100 * (math.exp(mean) - 1), 1))
            dev += [(x - mean) ** 2 for x in xs]
        dof = len(rounds) * n - n
        out["ways"][m] = {
            "rounds": len(rounds),
            "error_pct": round(100 * math.sqrt(sum(dev) / dof), 1) if dof > 0 else None,
            "gain_pct": gains,
            "wall_s": round(statistics.fmean(walls[m]), 1)}
    return out


def main(argv: list[str] | None = None) -> int:
    p = demo_study.parser("python -m benchmarks.studies.search_pairing", __doc__)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--paired-seconds", type=int, default=14,
                   help="seconds of turns per config side by side (default 14: the "
                        "search's 28 s per trial shared by two configs)")
    args = p.parse_args(argv)
    return guarded(lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    from pmem_advisor.errors import UsageError

    if demo_study.summarised(args, summarise, "benchmarks.studies.search_pairing"):
        return 0
    if args.rounds < 2 or args.paired_seconds < 2:
        raise UsageError("--rounds of at least 2, --paired-seconds of at least 2")
    measure(*configs(args.study), args.rounds, args.paired_seconds, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
