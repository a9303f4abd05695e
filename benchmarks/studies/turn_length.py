"""How long the verdict's turns should be: one demo's finalists measured side by side at
several turn lengths, interleaved.

    python -m benchmarks.studies.turn_length --study demo-out/study.db --turns 1,2,4 --rounds 6 \
        --out turn-rows.jsonl
    python -m benchmarks.studies.turn_length --summarise turn-rows.jsonl \
        --json benchmarks/data/noise/demo-turn-length.json

The configs are a finished demo's (its study: the tuned, rules-only and defaults trials of the
verdict), measured as the verdict measures them (``Evaluator.evaluate_in_turns``, 28 s each,
three servers up at once, the idle ones paused), once per turn length per round, the lengths'
order rotating each round. Two figures per length: the spread of the per-round log ratio of
tuned to rules-only over the rounds (what the paired test sees; from a handful of rounds it is
itself uncertain by a third), and the error of that ratio within each round, from its turn
cycles (the tuned and rules-only turns of one cycle paired; root mean square over the rounds):
the part of the round-to-round spread that shorter turns can remove.
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

ROLES = ("tuned", "rules", "default")


def finalists(study_db: Path) -> list[Any]:
    """The verdict's three configs of a finished demo (tuned, rules-only, defaults)."""
    from pmem_advisor.errors import UsageError
    from pmem_advisor.tuner.verdict import VERDICT_ATTR, trial_config

    study = demo_study.load(study_db)
    numbers = ((study.user_attrs.get(VERDICT_ATTR) or {}).get("trials") or {}) if study else {}
    if not all(r in numbers for r in ROLES):
        raise UsageError(f"{study_db} has no verdict over tuned, rules-only and defaults")
    by_number = {t.number: t for t in study.trials}
    return [trial_config(by_number[numbers[role]]) for role in ROLES]


def measure(configs: list[Any], turns: list[int], rounds: int, out: Path) -> None:
    from .. import noise

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    evaluator, close, info = noise.open_demo(log, noise.demo.MEMORY)
    try:
        evaluator.evaluate(configs[2])  # makes the golden copy the side-by-side runs need
        with dataset.appender(out) as f:
            for rnd in range(rounds):
                shift = rnd % len(turns)
                for turn_s in turns[shift:] + turns[:shift]:
                    started = time.time()
                    ms = evaluator.evaluate_in_turns(configs, turn_s)
                    row = {"round": rnd, "turn_s": turn_s,
                           "wall": round(time.time() - started, 1),
                           "tps": [m.throughput_tps for m in ms],
                           "turn_tps": [m.raw.get("turn_tps") for m in ms],
                           "failures": [m.failure for m in ms], "setup": info}
                    dataset.append_row(f, row)
                    tps = row["tps"]
                    ratio = (f"{tps[0] / tps[1]:.3f}" if all(tps[:2]) else "n/a")
                    log(f"round {rnd + 1} of {rounds}, {turn_s} s turns: tuned/rules-only "
                        f"{ratio} ({row['wall']:.0f} s)")
    finally:
        close()


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_turn: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        if all(r["tps"][:2]) and all(r["turn_tps"][:2]):
            by_turn.setdefault(int(r["turn_s"]), []).append(r)
    out: dict[str, Any] = {
        "metric": "between_rounds_pct: stdev of the per-round log ratio tuned / rules-only; "
                  "within_round_pct: its error inside a round, from the round's turn cycles "
                  "(root mean square over the rounds)",
        "turns": {}}
    for turn_s, rs in sorted(by_turn.items()):
        ratios = [math.log(r["tps"][0] / r["tps"][1]) for r in rs]
        within = []
        for r in rs:
            a, b = r["turn_tps"][0], r["turn_tps"][1]
            d = [math.log(x / y) for x, y in zip(a, b, strict=False)]
            if len(d) >= 2:
                within.append(statistics.stdev(d) / math.sqrt(len(d)))
        out["turns"][str(turn_s)] = {
            "rounds": len(rs),
            "gain_pct": round(100 * (math.exp(statistics.fmean(ratios)) - 1), 1),
            "between_rounds_pct": (round(100 * statistics.stdev(ratios), 1)
                                   if len(ratios) >= 2 else None),
            "within_round_pct": (round(100 * math.sqrt(statistics.fmean(
                [w * w for w in within])), 1) if within else None),
            "wall_s": round(statistics.fmean(r["wall"] for r in rs), 1)}
    return out


def main(argv: list[str] | None = None) -> int:
    p = demo_study.parser("python -m benchmarks.studies.turn_length", __doc__)
    p.add_argument("--turns", default="1,2,4", help="turn lengths in seconds (default 1,2,4)")
    p.add_argument("--rounds", type=int, default=6)
    args = p.parse_args(argv)
    return guarded(lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    from pmem_advisor.errors import UsageError

    if demo_study.summarised(args, summarise, "benchmarks.studies.turn_length"):
        return 0
    try:
        turns = [int(x) for x in args.turns.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--turns {args.turns!r}: whole seconds, comma-separated") from None
    if not turns or min(turns) < 1 or args.rounds < 2:
        raise UsageError("--turns of at least 1 s each, --rounds of at least 2")
    measure(finalists(args.study), turns, args.rounds, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
