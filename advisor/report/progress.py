"""The live view of a tuning run: the trial and its phase (restore, start, warm-up, measure,
re-measure) with elapsed time and an ETA; one line per finished trial with the running best."""

from __future__ import annotations

import time
from typing import Any

from optuna.trial import FrozenTrial
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from pmem_advisor.report.config_file import render_value
from pmem_advisor.tuner.evaluator import TrialConfig
from pmem_advisor.tuner.pairing import PAIRED_ATTR
from pmem_advisor.tuner.space import SearchSpace
from pmem_advisor.tuner.study import measured
from pmem_advisor.tuner.tuner import Observer

MAX_DIFF = 6


def clock(seconds: float | None) -> str:
    """12s, 4m05s, 1h02m: short enough for a status line."""
    if seconds is None:
        return "?"
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class _StatusLine:
    """Re-rendered on every refresh, so elapsed time and ETA tick without extra threads."""

    def __init__(self, owner: LiveProgress) -> None:
        self.owner = owner

    def __rich__(self) -> Text:
        return Text(self.owner.status_text(), no_wrap=True, overflow="ellipsis")


class LiveProgress(Observer):
    """A spinner while a trial runs; one line per finished trial with the running best."""

    def __init__(self, console: Console, space: SearchSpace, total: int, objective: str,
                 catalog: Any = None, *, trial_estimate_s: float | None = None,
                 now: Any = time.monotonic) -> None:
        self.console, self.space, self.total = console, space, total
        self.objective, self.catalog = objective, catalog
        self._now = now
        self._t0 = now()
        self._status: Any = None
        self._diffs: dict[int, str] = {}
        self._title = "starting"
        self._phase: tuple[str, float, float | None, str | None] | None = None
        self._remaining: float | None = None  # the tuner's estimate, when it was given
        self._remaining_at = self._t0
        self._trial_estimate = trial_estimate_s

    # -- the status line ---------------------------------------------------------------------
    def eta(self) -> float | None:
        if self._remaining is None:
            return None
        return max(0.0, self._remaining - (self._now() - self._remaining_at))

    def status_text(self) -> str:
        now = self._now()
        parts = [self._title]
        if self._phase is not None:
            name, since, expected, then = self._phase
            spent = now - since
            if then is not None and expected is not None and spent >= expected:
                name, spent = then, spent - expected  # warm-up is over: measuring
                expected = None
            text = f"{name} {clock(spent)}"
            if expected:
                text += f"/{clock(expected)}"
            parts.append(text)
        parts.append(f"elapsed {clock(now - self._t0)}")
        eta = self.eta()
        parts.append(f"ETA {clock(eta)}" if eta is not None else "ETA ?")
        return " | ".join(parts)

    def _show(self) -> None:
        if self._status is None:
            self._status = self.console.status(_StatusLine(self))
            self._status.start()

    def _stop_status(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    # -- Observer hooks ----------------------------------------------------------------------
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

    def estimate(self, remaining_s: float | None, done: int, total: int) -> None:
        self._remaining, self._remaining_at = remaining_s, self._now()

    def trial_started(self, number: int, role: str, config: TrialConfig) -> None:
        self._diffs[number] = self._diff(config, role)
        self._title = f"trial {number} ({number + 1}/{self.total}) {self._diffs[number]}"
        self._phase = None
        self._show()

    def run_phase(self, name: str, expected_s: float | None = None,
                  then: str | None = None) -> None:
        self._phase = (name, self._now(), expected_s, then)
        self._show()

    def _result(self, t: FrozenTrial) -> str:
        if measured(t) is None:
            return f"[red]failed[/]: {escape(str(t.user_attrs.get('failure', '?')))}"
        tps, p95 = t.user_attrs.get("throughput_tps"), t.user_attrs.get("latency_p95_ms")
        text = f"{tps:.1f} tps" if tps is not None else "n/a"
        if p95 is not None:
            text += f", p95 {p95:.2f} ms"
        paired = t.user_attrs.get(PAIRED_ATTR) or {}
        if paired.get("ratio") is not None:  # tuner/pairing.py: ranked by the ratio
            text += (f", {paired['ratio']:.3f}x rules-only's {paired['rules_tps']:.1f} tps "
                     "beside it")
        if t.user_attrs.get("pruned_by_interim"):  # tuner/pruning.py: stopped early, not failed
            secs = t.user_attrs.get("measured_s")
            after = f" after {secs:.0f} s" if secs else ""
            text += f" [cyan](pruned by interim{after}: clearly below the incumbent)[/]"
        return text + ("" if t.user_attrs.get("feasible", True) else " [yellow](over SLO)[/]")

    def trial_finished(self, trial: FrozenTrial, best: FrozenTrial | None) -> None:
        self._stop_status()
        self._phase = None
        best_text = (f"best: trial {best.number} = {measured(best):.1f}"
                     if best is not None else "best: none yet")
        self.console.print(
            f"trial {trial.number:>3} {escape(self._diffs.get(trial.number, ''))}: "
            f"{self._result(trial)}  [dim]{best_text} | elapsed "
            f"{clock(self._now() - self._t0)}[/]", highlight=False, markup=True,
        )

    def remeasured(self, round_no: int, rounds: int, label: str, number: int,
                   value: float | None, failure: str | None, metric: str = "") -> None:
        """A line per re-measurement run: the status line alone shows nothing where stderr
        is not a terminal (CI logs, nohup), and this phase can outlast the search."""
        self._stop_status()
        result = (f"[red]failed[/]: {escape(' '.join(str(failure).split()))}" if value is None
                  else f"{value:.1f} tps" if metric.endswith("_tps")
                  else f"{value:.2f} ms" if metric.endswith("_ms") else f"{value:.1f}")
        self.console.print(
            f"re-measure round {round_no}/{rounds} {escape(label)} (trial {number}): {result}"
            f"  [dim]elapsed {clock(self._now() - self._t0)}[/]", highlight=False, markup=True)

    def phase(self, text: str) -> None:
        """A run-level phase (re-measure, budget notes): the title of the status line."""
        self._title = text
        self._phase = None
        self._show()

    def close(self) -> None:
        self._stop_status()
