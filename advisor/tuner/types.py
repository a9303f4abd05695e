"""The contract between the tuner (tuner/tuner.py) and the parts it drives: the options of a
run, the progress hooks and what the final re-measurement (tuner/verdict.py) and the paired
search (tuner/pairing.py) see of a tuner. They import this module, never tuner.py: the arrows
go one way (tuner -> pairing -> verdict -> types)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

    from pmem_advisor.tuner.evaluator import Evaluator, TrialConfig


@dataclass
class TuneOptions:
    trials: int
    objective: str = "throughput"  # throughput | p95 | p99
    latency_slo_ms: float | None = None
    time_budget_s: float | None = None
    repeats: int = 3  # re-measurements of each finalist and baseline at the end
    top_k: int = 3
    max_init_combos: int = 3  # golden copies (re-initialisations) the search may use
    min_per_combo: int = 2  # search trials each golden copy gets before the best one is kept
    started: float | None = None  # time.monotonic() when the run began (the budget's origin)
    # Production memory gate: config params -> why it cannot be deployed (its worst-case
    # memory exceeds the budget), or None. A search trial that fails it is not run.
    memory_gate: Any = None
    trial_estimate_s: float = 60.0  # a trial's wall time before one was measured
    # Stop a search trial whose interim throughput is clearly below the incumbent
    # (tuner/pruning.py); the warm-up the pruner waits out when no steady state shows yet.
    prune: bool = True
    warmup_s: float = 0.0
    # Measure each search trial side by side with rules-only where the evaluator can
    # (tuner/pairing.py): the pick among them is then made by ratios the host's swings hardly
    # move; a trial that cannot be paired runs alone as before.
    paired_search: bool = True


class Observer:
    """Progress hooks (the CLI shows them live); the defaults do nothing."""

    def trial_started(self, number: int, role: str, config: TrialConfig) -> None: ...

    def trial_finished(self, trial: FrozenTrial, best: FrozenTrial | None) -> None: ...

    def phase(self, text: str) -> None: ...

    def run_phase(self, name: str, expected_s: float | None = None,
                  then: str | None = None) -> None:
        """Inside a trial: restore, start, warm-up (then measure), ... with expected seconds."""

    def estimate(self, remaining_s: float | None, done: int, total: int) -> None:
        """The tuner's estimate of the time left (search + re-measurement)."""

    def remeasured(self, round_no: int, rounds: int, label: str, number: int,
                   value: float | None, failure: str | None, metric: str = "") -> None:
        """One re-measurement run finished (a line each, also where no status line shows)."""


class TunerView(Protocol):
    """What the final re-measurement reads of the tuner that ran the search."""

    study: optuna.Study
    evaluator: Evaluator
    options: TuneOptions
    observer: Observer
