"""The ``pmem-advisor`` arm: the real tuner's loop, stepped by the harness through a relay."""

from __future__ import annotations

from collections.abc import Callable

from pmem_advisor.tuner.evaluator import Evaluator

from .arms import LoopArm
from .space import SearchSpace


class AdvisorArm(LoopArm):
    name = "pmem-advisor"
    note = ("pmem_advisor.tuner.Tuner: rule-shaped space, trial 0 = defaults, trial 1 = "
            "rules-only, then its TPE; in-memory study, no final re-measurement")

    def __init__(self, loop: Callable[[Evaluator, int, int], None] | None,
                 why_missing: str = "", *, engine: str = "", flavour: str = "",
                 version: str = "") -> None:
        super().__init__()
        self.loop, self.why_missing = loop, why_missing
        self.engine, self.flavour, self.version = engine, flavour, version

    def prepare(self, space: SearchSpace) -> None:
        # The tuner builds its own (rule-shaped) space: an empty peers' space does not stop it.
        self.unavailable = None if self.loop else (
            self.why_missing or "the tuner's loop is not available")

    def run_loop(self, evaluator: Evaluator, space: SearchSpace, budget: int, seed: int) -> None:
        assert self.loop is not None
        self.loop(evaluator, budget, seed)
