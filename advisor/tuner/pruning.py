"""Stopping a trial early: an Optuna pruner on the run's interim throughput.

A search trial reports its per-second throughput while it runs (workloads/interim.py) as
Optuna intermediate values at steps 1, 2, ... (the tuner's own value sits at
``tuner.MEASURED_STEP`` and ``FINAL_STEP``, see tuner.py). ``InterimPruner`` stops the trial
when its steady part is clearly below the incumbent, the best measured trial so far:

- the samples before the steady-state cut are ignored (the detector of workloads/interim.py,
  the fixed warm-up when it cannot tell yet), so a slow ramp is never pruned;
- fewer than ``min_points`` steady samples never prune (too few to say anything);
- "clearly below": the upper confidence bound of the steady mean lies under the incumbent's
  value less ``margin_pct``. The bound is z standard errors of the run's mean: the error of
  its samples (widened for their lag-1 autocorrelation, as for any time-series mean) and the
  error no sample of one run shows, the run-to-run spread of one config (``run_noise_pct``).
  On the shared VMs the machine's own speed shifts by ~25% for 10-20 s at a time with no steal
  reported: five seconds of a slow spell are steady, tightly spread and still say nothing
  about the config (the demo's pruner stopped its later winner that way). The incumbent is one
  run too, with the same run-to-run spread: the bound is of the difference of two runs, so
  both errors enter it (a slow spell of 0.74x at 7 s was pruned while only the trial's counted,
  and that trial won another demo run). The incumbent's one run is also the luckiest of the
  search as much as the best (the winner's curse), hence the margin.

A pruned trial keeps the mean of what it ran as its value (the samplers still learn from it)
and is recorded as pruned-by-interim, never as a failure; the time it saves goes to the
re-measurement of the finalists. Minimising objectives (latency) are never pruned here: the
interim samples are throughput.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import optuna
from optuna.trial import FrozenTrial

PRUNED_BY_INTERIM_ATTR = "pruned_by_interim"
# Steps: interim samples are reported at 1..n; the trial's measured value at MEASURED_STEP (0)
# and at FINAL_STEP, beyond any sample, so that samplers which rank pruned trials by their last
# step (TPE) rank every measured trial by its value, not by how many samples it happened to have.
FINAL_STEP = 1_000_000


@dataclass
class InterimDecision:
    prune: bool
    reason: str | None = None
    mean: float | None = None
    upper: float | None = None
    incumbent: float | None = None


def interim_samples(trial: FrozenTrial) -> list[float]:
    """The trial's interim samples in step order (steps 1 .. FINAL_STEP - 1)."""
    return [v for s, v in sorted(trial.intermediate_values.items()) if 0 < s < FINAL_STEP]


# One config's run-to-run spread on a quiet machine (docs/measurements.md, "Noise, measured":
# 2.7-14% for the scenarios' and the demo's runs): the least error a single run's mean carries.
RUN_NOISE_PCT = 10.0


def upper_bound(samples: list[float], z: float, run_noise_pct: float = 0.0,
                against: float = 0.0) -> tuple[float, float]:
    """(mean, mean + z standard errors): the samples' error widened for lag-1
    autocorrelation, combined with ``run_noise_pct`` of the mean (the run-to-run spread) and,
    when the mean is compared with another single run ``against``, ``run_noise_pct`` of it."""
    n = len(samples)
    mean = statistics.fmean(samples)
    sd = statistics.stdev(samples) if n > 1 else 0.0
    rho = 0.0
    if n > 2 and sd > 0:
        dev = [x - mean for x in samples]
        rho = sum(a * b for a, b in zip(dev, dev[1:], strict=False)) / sum(d * d for d in dev)
        rho = min(max(rho, 0.0), 0.95)
    n_eff = n * (1 - rho) / (1 + rho)
    within = sd / math.sqrt(max(n_eff, 1.0))
    between = mean * run_noise_pct / 100.0
    other = against * run_noise_pct / 100.0
    return mean, mean + z * math.hypot(within, between, other)


class InterimPruner(optuna.pruners.BasePruner):
    """Prune a trial whose steady interim throughput is clearly below the incumbent's."""

    def __init__(self, *, incumbent: float | None = None, warmup_s: float = 0.0,
                 min_points: int = 5, margin_pct: float = 5.0, z: float = 2.58,
                 run_noise_pct: float = RUN_NOISE_PCT) -> None:
        self.incumbent = incumbent  # None: the best measured trial of the study
        self.warmup_s, self.min_points = warmup_s, min_points
        self.margin_pct, self.z, self.run_noise_pct = margin_pct, z, run_noise_pct

    def decide(self, study: optuna.Study, trial: FrozenTrial) -> InterimDecision:
        from pmem_advisor.workloads.interim import steady_start

        if study.direction != optuna.study.StudyDirection.MAXIMIZE:
            return InterimDecision(False, "minimising: interim throughput says nothing")
        samples = interim_samples(trial)
        cut = steady_start(samples, min_after=self.min_points)
        if cut is None:
            cut = min(len(samples), int(math.ceil(self.warmup_s)))
        steady = samples[cut:]
        if len(steady) < self.min_points:
            return InterimDecision(False, f"{len(steady)} steady samples, fewer than "
                                          f"{self.min_points}: too few to prune")
        incumbent = self.incumbent if self.incumbent is not None else _incumbent(study, trial)
        if incumbent is None:
            return InterimDecision(False, "no incumbent yet")
        mean, upper = upper_bound(steady, self.z, self.run_noise_pct, against=incumbent)
        line = incumbent * (1 - self.margin_pct / 100.0)
        if upper < line:
            return InterimDecision(True, f"interim {mean:,.1f}/s (upper bound {upper:,.1f}) "
                                   f"after {len(samples)} s is clearly below the incumbent's "
                                   f"{incumbent:,.1f} less {self.margin_pct:g}%", mean, upper,
                                   incumbent)
        return InterimDecision(False, None, mean, upper, incumbent)

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        return self.decide(study, trial).prune


def _incumbent(study: optuna.Study, trial: FrozenTrial) -> float | None:
    from pmem_advisor.tuner.study import measured

    vals = [measured(t) for t in study.get_trials(deepcopy=False)
            if t.number != trial.number and not t.user_attrs.get(PRUNED_BY_INTERIM_ATTR)]
    vals = [v for v in vals if v is not None]
    return max(vals) if vals else None
