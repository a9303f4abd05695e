"""How often the verdict decides, and how: `tune`'s own ``decide`` on simulated interleaved rounds.

    python -m benchmarks.studies.verdict_power --spread 4.5 [--rules -6] [--tuned 0] [--rounds 6]

Each draw is one verdict phase: ``--rounds`` rounds of tuned, rules-only and defaults, every
run's throughput the config's true level times a round effect (``--round-spread``, what a
round's runs share) times its own noise (``--spread``, the per-config coefficient of variation
that `make demo` prints), both log-normal. The draws go through the same looks, alpha split
and decision as `tune` (``verdict.decide``, the early look at round 3), and the table gives how
often each outcome came and which config it wrote, and the chance that three runs in a row
decide alike. It answers "with this machine's noise, how often can the demo decide?" without
measuring: the figures of a run of `make demo` (its repeat spread, its intervals) go in.
"""

from __future__ import annotations

import argparse
import collections
import math
from typing import Any

import numpy as np

from pmem_advisor.tuner.verdict import decide, make_plan, settles

ROLES = ("tuned", "rules", "default")


def simulate(*, spread_pct: float, round_spread_pct: float = 2.0, rules_pct: float = 0.0,
             tuned_pct: float = 0.0, rounds: int = 6, draws: int = 2000, seed: int = 1
             ) -> dict[tuple[str, str], float]:
    """(kind, emitted role) -> share of the draws. Levels are relative to the defaults."""
    rng = np.random.default_rng(seed)
    plan = make_plan(rounds, ROLES, paired=True)
    level = {"tuned": math.log1p(tuned_pct / 100), "rules": math.log1p(rules_pct / 100),
             "default": 0.0}
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    for _ in range(draws):
        shared = rng.normal(0.0, round_spread_pct / 100, rounds)
        runs = {r: 1000.0 * np.exp(level[r] + shared + rng.normal(0.0, spread_pct / 100,
                                                                     rounds)) for r in ROLES}
        verdict: dict[str, Any] = {}
        for look in plan.looks:
            by_round = {r: {i: float(runs[r][i]) for i in range(look)} for r in ROLES}
            values = {r: [float(v) for v in runs[r][:look]] for r in ROLES}
            verdict = decide(values, plan, final=look == plan.looks[-1], by_round=by_round,
                             look=look)
            if settles(verdict):  # tune's own rule for ending the rounds
                break
        counts[(verdict["kind"], verdict["emit"])] += 1
    return {k: n / draws for k, n in counts.most_common()}


def three_alike(shares: dict[tuple[str, str], float]) -> float:
    """The chance that three independent runs reach the same decided outcome."""
    return sum(p ** 3 for (kind, _), p in shares.items() if kind != "inconclusive")


def _number(low: float, what: str, integer: bool = False, above: bool = False):
    """An argparse type: a number at least (or, with ``above``, more than) ``low``; anything
    else is a one-line usage error (exit 2)."""
    def parse(text: str) -> float:
        try:
            x = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(x) or x < low or (above and x == low):
            raise argparse.ArgumentTypeError(
                f"{what} must be {'more than' if above else 'at least'} {low:g}, not {text}")
        return x
    return parse


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.studies.verdict_power",
                                description=__doc__.split("\n\n")[0])
    spread = _number(0.0, "a spread")
    level = _number(-100.0, "a level vs the defaults", above=True)
    p.add_argument("--spread", type=spread, required=True,
                   help="per-config run-to-run spread, %% (make demo prints it)")
    p.add_argument("--round-spread", type=spread, default=2.0,
                   help="the part a round's runs share, %% (default 2)")
    p.add_argument("--rules", type=level, default=0.0, help="rules-only vs defaults, %%")
    p.add_argument("--tuned", type=level, default=0.0, help="tuned vs defaults, %%")
    p.add_argument("--rounds", type=_number(2, "--rounds", integer=True), default=6,
                   help="interleaved rounds at most (at least 2: a paired test needs them)")
    p.add_argument("--draws", type=_number(1, "--draws", integer=True), default=2000)
    a = p.parse_args(argv)
    shares = simulate(spread_pct=a.spread, round_spread_pct=a.round_spread,
                      rules_pct=a.rules, tuned_pct=a.tuned, rounds=a.rounds, draws=a.draws)
    print(f"spread {a.spread}% per run ({a.round_spread}% shared by a round), rules-only "
          f"{a.rules:+}%, tuned {a.tuned:+}% vs defaults, {a.rounds} rounds, {a.draws} draws")
    print("| outcome | config written | share |\n|---|---|---|")
    for (kind, emit), share in shares.items():
        print(f"| {kind} | {emit} | {100 * share:.1f}% |")
    print(f"three runs in a row decided alike: {100 * three_alike(shares):.0f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
