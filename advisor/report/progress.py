"""The live view of a tuning run: the trial being measured, its config diff, results, best."""

from __future__ import annotations

from typing import Any

from optuna.trial import FrozenTrial, TrialState
from rich.console import Console
from rich.markup import escape

from pmem_advisor.report.config_file import render_value
from pmem_advisor.tuner.evaluator import TrialConfig
from pmem_advisor.tuner.space import SearchSpace
from pmem_advisor.tuner.tuner import Observer

MAX_DIFF = 6


class LiveProgress(Observer):
    """A spinner while a trial runs; one line per finished trial with the running best."""

    def __init__(self, console: Console, space: SearchSpace, total: int, objective: str,
                 catalog: Any = None) -> None:
        self.console, self.space, self.total = console, space, total
        self.objective, self.catalog = objective, catalog
        self._status: Any = None
        self._diffs: dict[int, str] = {}

    def _diff(self, config: TrialConfig, role: str) -> str:
        if role in ("default", "rules"):
            return f"[{role}]"
        ref = {**self.space.base, **(self.space.rules_params or self.space.default_params)}
        changed = [(n, v) for n, v in {**config.params, **config.init_params}.items()
                   if str(ref.get(n)) != str(v)]
        text = ", ".join(f"{n}={render_value(self.catalog, n, v)}" for n, v in changed[:MAX_DIFF])
        if len(changed) > MAX_DIFF:
            text += f", +{len(changed) - MAX_DIFF} more"
        return text or "(same as rules)"

    def _stop_status(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def trial_started(self, number: int, role: str, config: TrialConfig) -> None:
        self._diffs[number] = self._diff(config, role)
        self._stop_status()
        self._status = self.console.status(
            f"trial {number} ({number + 1}/{self.total}) measuring: "
            f"{escape(self._diffs[number])}")
        self._status.start()

    def _result(self, t: FrozenTrial) -> str:
        if t.state != TrialState.COMPLETE:
            return f"[red]failed[/]: {escape(str(t.user_attrs.get('failure', '?')))}"
        tps, p95 = t.user_attrs.get("throughput_tps"), t.user_attrs.get("latency_p95_ms")
        text = f"{tps:.1f} tps" if tps is not None else "n/a"
        if p95 is not None:
            text += f", p95 {p95:.2f} ms"
        return text + ("" if t.user_attrs.get("feasible", True) else " [yellow](over SLO)[/]")

    def trial_finished(self, trial: FrozenTrial, best: FrozenTrial | None) -> None:
        self._stop_status()
        best_text = (f"best: trial {best.number} = {best.value:.1f}"
                     if best is not None else "best: none yet")
        self.console.print(
            f"trial {trial.number:>3} {escape(self._diffs.get(trial.number, ''))}: "
            f"{self._result(trial)}  [dim]{best_text}[/]", highlight=False, markup=True,
        )

    def phase(self, text: str) -> None:
        self._stop_status()
        self._status = self.console.status(text)
        self._status.start()

    def close(self) -> None:
        self._stop_status()
