"""What the tuner and the benchmark harness measure through: an Evaluator runs one config.

The contract every evaluator keeps (the tuner relies on it):
- ``evaluate`` never raises for a config the server rejects or crashes on: it returns a
  ``Measurement`` with ``ok=False`` and the server's own reason in ``failure``.
- It raises ``pmem_advisor.errors.EnvironmentProblem`` only when nothing can be measured at
  all (no server binary, no load generator), and ``Interrupted``/``KeyboardInterrupt`` after
  cleaning up.
- Every trial starts from the same data (a restored golden copy), so results are comparable.
- ``close`` stops everything it started and removes its temporary files; it is idempotent.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class TrialConfig:
    """One point of the search space.

    ``params``: restart/reload/session knobs, name -> value in the server's base unit.
    ``init_params``: re-initialisation knobs (``innodb_page_size``, ``wal_segment_size``,
    ``wal_on_separate_path``...): trials sharing them share one golden copy.
    """

    params: dict[str, Any] = field(default_factory=dict)
    init_params: dict[str, Any] = field(default_factory=dict)

    def init_key(self) -> tuple:
        return tuple(sorted((k, str(v)) for k, v in self.init_params.items()))


@dataclass
class Measurement:
    ok: bool
    throughput_tps: float | None = None
    latency_ms: dict[str, float | None] = field(
        default_factory=lambda: {"p50": None, "p95": None, "p99": None}
    )
    errors: int = 0
    duration_s: float = 0.0
    failure: str | None = None  # the server's reason when ok is False
    raw: dict[str, Any] = field(default_factory=dict)
    # Per-second throughput while the run went (workloads/interim.py), when the tool reports it.
    interim_tps: list[float] = field(default_factory=list)
    stopped_early: bool = False  # ``on_interim`` stopped the run: throughput is of the part run

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Evaluator(ABC):
    """Runs a workload against a server started with a given config and measures it."""

    engine: str  # "postgres" | "mysql"
    flavour: str  # "postgresql" | "mysql" | "mariadb"
    version: str
    # Called with the run's interim throughput samples so far, where the workload reports
    # them; True stops the run early (the Measurement says ``stopped_early``). Set per call.
    on_interim: Any = None

    @abstractmethod
    def evaluate(self, config: TrialConfig) -> Measurement:
        """Start the server with ``config`` on fresh golden data, run the workload, measure."""

    def in_turns_refusal(self, configs: list[TrialConfig], turn_s: int) -> str | None:
        """None when ``evaluate_in_turns`` can measure these configs side by side here in
        turns of ``turn_s`` seconds, else why not (the caller then measures them one after
        another)."""
        return "this evaluator runs one server at a time"

    def evaluate_in_turns(self, configs: list[TrialConfig], turn_s: int) -> list[Measurement]:
        """One Measurement per config, measured side by side: every config's server up at
        once on its own copy of the golden data, the workload taking turns of ``turn_s``
        seconds on each while the others are paused, ``duration`` seconds each in all. Only
        after ``in_turns_refusal(configs, turn_s)`` said None."""
        raise NotImplementedError(self.in_turns_refusal(configs, turn_s) or "no turns here")

    def close(self) -> None:  # noqa: B027 - optional hook, idempotent
        """Stop everything started and remove temporary files."""

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
