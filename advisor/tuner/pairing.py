"""Search trials measured beside rules-only: the search's pick made by paired ratios.

The search hands the verdict its best trial, picked by one measurement per config. Run one
after another, that measurement carries the host's slow swings: on the demo's shared VMs one
candidate's ratio to rules-only erred 9.9% run after run (twice, 6 and 5 interleaved rounds,
benchmarks/data/noise/demo-search-pairing-*.json), more than the 3-10% the configs worth
having gain, so the pick was often a lucky run and the demo's decision changed from run to
run. Measured side by side with rules-only, the workload taking 1 s turns on each server
(``Evaluator.evaluate_in_turns``, as the verdict measures), the same ratio erred 2.3-2.5% in
the same time (14 s each instead of 28 s alone).

So a search trial runs beside rules-only when the evaluator can hold both servers: the
seconds of load a trial alone gets (warm-up and run) are split between the two, each warming
up and then measured for ``(duration - warm-up) / 2`` seconds, and the value
the search ranks it by is its ratio to the rules-only turns beside it times rules-only's own
measured run. Every paired trial shares that reference, so their ranking is the ratios'. A
trial runs alone (the reason recorded) when there is no measured rules-only trial, the objective
is a latency percentile (turns cannot pool percentiles), or the evaluator refuses (one server
at a time, no memory budget, configs with different golden copies, too little memory or disk);
then the interim pruner may stop it, which turns do not feed.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from pmem_advisor.errors import EnvironmentProblem
from pmem_advisor.tuner.cpu_steal import measure, measure_in_turns_undisturbed
from pmem_advisor.tuner.evaluator import Evaluator, Measurement, TrialConfig
from pmem_advisor.tuner.study import ROLE_ATTR, measured
from pmem_advisor.tuner.verdict import trial_config, turn_seconds

# A trial's record of how it was measured: {"against_trial", "ratio", "rules_tps", "value",
# "seconds_each", "turn_s"} when side by side, {"alone": why} when not.
PAIRED_ATTR = "paired_with_rules"


@dataclass(frozen=True)
class Pairing:
    rules: FrozenTrial  # the measured rules-only trial the candidate runs beside
    rules_config: TrialConfig
    seconds_each: int  # each config's seconds of turns
    turn_s: int


@contextlib.contextmanager
def _duration(evaluator: Any, seconds: float) -> Iterator[None]:
    """The evaluator measuring ``seconds`` per config for the block, then as before."""
    before = evaluator.duration
    evaluator.duration = seconds
    try:
        yield
    finally:
        evaluator.duration = before


def pairing(study: optuna.Study, evaluator: Evaluator, candidate: TrialConfig,
            objective: str) -> Pairing | str:
    """How to measure a search trial beside rules-only, or why it runs alone."""
    if objective != "throughput":
        return "the objective is a latency percentile, which turns cannot pool"
    rules = next((t for t in study.get_trials(deepcopy=False)
                  if t.user_attrs.get(ROLE_ATTR) == "rules" and measured(t) is not None),
                 None)
    if rules is None:
        return "no measured rules-only trial to run beside"
    duration = getattr(evaluator, "duration", None)
    if not isinstance(duration, int | float) or duration <= 0:
        return "this evaluator runs one server at a time"
    turn_s = turn_seconds(evaluator)
    # The load a trial alone gets (warm-up + run), shared: each server warms up on its own.
    warmup = getattr(evaluator, "warmup", 0) or 0
    seconds = max(2 * turn_s, math.floor((duration - warmup) / 2))
    rules_config = trial_config(rules)
    with _duration(evaluator, seconds):
        why = evaluator.in_turns_refusal([rules_config, candidate], turn_s)
    if why is not None:
        return why
    return Pairing(rules, rules_config, seconds, turn_s)


def measure_paired(evaluator: Evaluator, p: Pairing, candidate: TrialConfig
                   ) -> tuple[Measurement, dict[str, Any]]:
    """The candidate's measurement beside rules-only and the pairing record (PAIRED_ATTR).
    A candidate that failed is its own failure; a rules-only side that failed beside it (not
    the candidate's doing) has the candidate measured alone instead, the record saying why,
    as does a side by side that could not be set up (no room for the copy after all)."""
    try:
        with _duration(evaluator, p.seconds_each):
            (rules_m, cand_m), _ = measure_in_turns_undisturbed(
                evaluator, [p.rules_config, candidate], p.turn_s, may_rerun=lambda: False)
    except EnvironmentProblem as e:
        return measure(evaluator, candidate), {
            "alone": f"side by side failed ({' '.join(str(e).split())[:200]})"}
    if not cand_m.ok:
        return cand_m, {"against_trial": p.rules.number, "failed": True}
    if not rules_m.ok or not rules_m.throughput_tps or cand_m.throughput_tps is None:
        why = rules_m.failure or "rules-only measured nothing beside it"
        return measure(evaluator, candidate), {
            "alone": f"rules-only failed beside it ({' '.join(str(why).split())[:200]})"}
    ratio = cand_m.throughput_tps / rules_m.throughput_tps
    reference = float(measured(p.rules))
    return cand_m, {"against_trial": p.rules.number, "ratio": round(ratio, 4),
                    "tps": round(cand_m.throughput_tps, 1),
                    "rules_tps": round(rules_m.throughput_tps, 1),
                    "value": ratio * reference, "seconds_each": p.seconds_each,
                    "turn_s": p.turn_s}


def paired_value(record: dict[str, Any] | None) -> float | None:
    """The value a paired trial is ranked by (None: it ran alone or failed)."""
    v = (record or {}).get("value")
    return float(v) if v is not None else None
