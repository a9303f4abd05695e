"""Interleaving: every arm gets its next trial in turn, round by round, on one evaluator.

Machine drift (thermal state, page cache, background load) then hits all arms alike. Within
a round the arm order rotates, so no arm is always first after another arm's trial. Seeds
run one after another; inside a seed everything is interleaved.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pmem_advisor.tuner.evaluator import Evaluator, Measurement, TrialConfig

from .arms import Arm
from .space import SearchSpace


@dataclass
class TrialRecord:
    arm: str
    seed: int
    index: int  # 1-based trial number of this arm in this seed
    round: int  # interleaving round (0-based)
    config: TrialConfig
    measurement: Measurement
    wall_s: float  # propose + evaluate + observe: what this trial cost the arm

    def to_dict(self) -> dict[str, Any]:
        m = self.measurement
        return {
            "arm": self.arm,
            "seed": self.seed,
            "trial": self.index,
            "round": self.round,
            "params": self.config.params,
            "init_params": self.config.init_params,
            "ok": m.ok,
            "throughput_tps": m.throughput_tps,
            "latency_ms": m.latency_ms,
            "failure": m.failure,
            "wall_s": round(self.wall_s, 3),
        }


@dataclass
class ArmStatus:
    name: str
    searching: bool
    budget: int
    note: str
    unavailable: str | None = None
    errors: list[str] = field(default_factory=list)  # a loop arm's crash, per seed


def run_interleaved(
    evaluator: Evaluator,
    space: SearchSpace,
    arms: Sequence[Arm],
    *,
    budget: int,
    seeds: Sequence[int],
    progress: Callable[[TrialRecord], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[list[TrialRecord], list[ArmStatus]]:
    """Run every available arm for every seed, interleaved; return all trials and statuses."""
    statuses = []
    for arm in arms:
        arm.prepare(space)
        statuses.append(
            ArmStatus(arm.name, arm.searching, budget if arm.searching else 1, arm.note,
                      arm.unavailable)
        )
    usable = [a for a in arms if a.unavailable is None]
    records: list[TrialRecord] = []
    for seed in seeds:
        run = _SeedRun(evaluator, seed, progress, clock)
        try:
            active = [a for a in usable if run.start(a, space, budget if a.searching else 1)]
            rnd = 0
            while active:
                active = [a for a in active if not a.exhausted()]
                if not active:
                    break
                shift = rnd % len(active)
                for arm in active[shift:] + active[:shift]:
                    if not run.trial(arm, rnd):
                        active.remove(arm)
                rnd += 1
        finally:
            for arm in usable:
                arm.close()
        for arm, status in zip(arms, statuses, strict=True):
            err = run.failed.get(arm.name)
            if err:
                status.errors.append(f"seed {seed}: {err}")
        records.extend(run.records)
    return records, statuses


class _SeedRun:
    """The trials of one seed: numbering per arm, timing, progress."""

    def __init__(self, evaluator: Evaluator, seed: int,
                 progress: Callable[[TrialRecord], None] | None,
                 clock: Callable[[], float]) -> None:
        self.evaluator, self.seed, self.progress, self.clock = evaluator, seed, progress, clock
        self.records: list[TrialRecord] = []
        self.counts: dict[str, int] = {}
        self.failed: dict[str, str] = {}  # arm -> its own error (an optimiser's bug, ...)

    def _fail(self, arm: Arm, exc: Exception) -> bool:
        """An arm's own code broke: it stops for this seed, says why, the others go on.
        (The evaluator's errors are not caught here: without measurements nothing can go on.)"""
        self.failed[arm.name] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        return False

    def start(self, arm: Arm, space: SearchSpace, budget: int) -> bool:
        try:
            arm.start(space, budget, self.seed)
        except Exception as exc:
            return self._fail(arm, exc)
        return True

    def trial(self, arm: Arm, rnd: int) -> bool:
        """One trial of ``arm``; False when the arm has nothing more to propose or broke."""
        t0 = self.clock()
        try:
            config = arm.propose()
        except Exception as exc:
            return self._fail(arm, exc)
        if config is None:
            return False
        stream = getattr(self.evaluator, "use_stream", None)
        if stream is not None:  # a simulated server: each arm draws its noise from its own
            stream(arm.name)    # stream, so no arm's result depends on which others ran
        m = self.evaluator.evaluate(config)
        try:
            arm.observe(config, m)
        except Exception as exc:
            self._fail(arm, exc)
        n = self.counts[arm.name] = self.counts.get(arm.name, 0) + 1
        rec = TrialRecord(arm.name, self.seed, n, rnd, config, m, self.clock() - t0)
        self.records.append(rec)
        if self.progress:
            self.progress(rec)
        return arm.name not in self.failed
