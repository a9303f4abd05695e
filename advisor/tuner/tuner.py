"""The ask/tell loop: baselines first, cost-grouped search, failures recorded, top-k re-measured.

Every trial's exact config and measurement are stored as trial user attributes, and the
re-measurements as a study attribute, so a report can be rebuilt from the study alone.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from pmem_advisor.tuner.evaluator import Evaluator, Measurement, TrialConfig
from pmem_advisor.tuner.space import SearchSpace
from pmem_advisor.tuner.study import ROLE_ATTR

CONFIG_ATTR = "config"
FAILURE_ATTR = "failure"
INTERRUPTED_ATTR = "interrupted"
REMEASURE_ATTR = "pmem_advisor.remeasure"
WORKER_ATTR = "worker"

SLO_CONSTRAINT = "latency_p95_over_slo_ms"
METRIC_ATTRS = {"throughput": "throughput_tps", "p95": "latency_p95_ms", "p99": "latency_p99_ms"}


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


class Observer:
    """Progress hooks (the CLI shows them live); the defaults do nothing."""

    def trial_started(self, number: int, role: str, config: TrialConfig) -> None: ...

    def trial_finished(self, trial: FrozenTrial, best: FrozenTrial | None) -> None: ...

    def phase(self, text: str) -> None: ...


def objective_value(m: Measurement, objective: str) -> float | None:
    if objective == "throughput":
        return m.throughput_tps
    return (m.latency_ms or {}).get(objective)


def measurement_attrs(m: Measurement) -> dict[str, Any]:
    lat = m.latency_ms or {}
    return {
        "throughput_tps": m.throughput_tps,
        "latency_p50_ms": lat.get("p50"),
        "latency_p95_ms": lat.get("p95"),
        "latency_p99_ms": lat.get("p99"),
        "errors": m.errors,
        "duration_s": m.duration_s,
    }


def counted(t: FrozenTrial) -> bool:
    """Trials that use up the budget: measured ones and configs the server refused."""
    if t.state == TrialState.COMPLETE:
        return True
    return t.state == TrialState.FAIL and bool(t.user_attrs.get(FAILURE_ATTR))


def feasible(t: FrozenTrial, slo_ms: float | None) -> bool:
    if t.state != TrialState.COMPLETE:
        return False
    if slo_ms is None:
        return True
    p95 = t.user_attrs.get("latency_p95_ms")
    return p95 is not None and p95 <= slo_ms


def best_trial(study: optuna.Study, slo_ms: float | None = None) -> FrozenTrial | None:
    """The best single measurement among feasible trials (before re-measurement)."""
    done = [t for t in study.get_trials(deepcopy=False) if feasible(t, slo_ms)]
    if not done:
        return None
    sign = 1 if study.direction == optuna.study.StudyDirection.MAXIMIZE else -1
    return max(done, key=lambda t: sign * t.value)


def trial_config(space: SearchSpace, params: dict[str, Any], role: str) -> TrialConfig:
    """The config a trial runs: nothing for the defaults; rule base settings + params else."""
    if role == "default":
        return TrialConfig()
    runtime, init = space.split(params, snap=role == "search")
    # Init values equal to the server default share the defaults' golden copy.
    defaults = {k.name: k.default for k in space.reinit_knobs}
    init = {n: v for n, v in {**space.base_init, **init}.items() if v != defaults.get(n)}
    return TrialConfig(params={**space.base, **runtime}, init_params=init)


class _Heartbeat:
    """Keeps a trial alive in the storage while it is measured (ask/tell has no thread)."""

    def __init__(self, study: optuna.Study, trial_id: int) -> None:
        storage = study._storage  # Optuna wraps the RDB storage; the wrapper delegates
        get = getattr(storage, "get_heartbeat_interval", None)
        self._interval = get() if get else None
        self._storage, self._trial_id = storage, trial_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        while True:
            self._storage.record_heartbeat(self._trial_id)
            if self._stop.wait(self._interval):
                return

    def __enter__(self) -> _Heartbeat:
        if self._interval:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._interval:
            self._stop.set()
            self._thread.join()


def outer_combos(space: SearchSpace, limit: int) -> list[dict[str, Any]]:
    """The golden copies to try: the rules' init values, the defaults, then alternatives."""
    reinit = space.reinit_knobs
    if not reinit:
        return []
    first = [space.rules_params, space.default_params] if space.rules_params else [
        space.default_params]
    combos: list[dict[str, Any]] = []
    for p in first:
        c = {k.name: p[k.name] for k in reinit}
        if c not in combos:
            combos.append(c)
    for values in itertools.product(*(k.choices for k in reinit)):
        c = dict(zip((k.name for k in reinit), values, strict=True))
        if c not in combos:
            combos.append(c)
    return combos[: max(1, limit)]


class Tuner:
    def __init__(self, study: optuna.Study, space: SearchSpace, evaluator: Evaluator,
                 options: TuneOptions, observer: Observer | None = None) -> None:
        self.study, self.space, self.evaluator = study, space, evaluator
        self.options, self.observer = options, observer or Observer()
        self._dists = space.distributions()

    # -- the search --------------------------------------------------------------------------
    def used(self) -> int:
        return sum(1 for t in self.study.get_trials(deepcopy=False) if counted(t))

    def run(self) -> None:
        """Run trials until the study holds ``trials`` counted ones or the time budget ends,
        then re-measure the finalists. Ctrl-C leaves the study resumable."""
        start = time.monotonic()
        while self.used() < self.options.trials:
            budget = self.options.time_budget_s
            if budget is not None and time.monotonic() - start >= budget:
                self.observer.phase("time budget used up")
                break
            self.step()
        if self.options.repeats > 0 and self.used() >= 1:
            self.remeasure()

    def step(self) -> FrozenTrial:
        """One trial: ask (queued baselines first), measure, tell."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(self.study)  # a dead worker's trial is re-queued
        self._queue_init_combo()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "heartbeat is supposed to be used with optimize"
            trial = self.study.ask(self._dists)
        with _Heartbeat(self.study, trial._trial_id):  # at once: a trial without is never stale
            role = trial.user_attrs.get(ROLE_ATTR) or "search"
            trial.set_user_attr(ROLE_ATTR, role)
            trial.set_user_attr(WORKER_ATTR, f"{socket.gethostname()}:{os.getpid()}")
            config = trial_config(self.space, trial.params, role)
            trial.set_user_attr(CONFIG_ATTR, {"params": config.params,
                                              "init_params": config.init_params})
            self.observer.trial_started(trial.number, role, config)
            try:
                m = self.evaluator.evaluate(config)
            except BaseException as e:  # Ctrl-C, no server at all, a bug: keep it resumable
                trial.set_user_attr(INTERRUPTED_ATTR, f"{type(e).__name__}: {e}"[:300])
                self.study.tell(trial, state=TrialState.FAIL)
                self.study.enqueue_trial(trial.params, user_attrs={ROLE_ATTR: role})
                raise
        self._tell(trial, m)
        frozen = next(t for t in self.study.get_trials(deepcopy=False)
                      if t.number == trial.number)
        self.observer.trial_finished(frozen, best_trial(self.study, self.options.latency_slo_ms))
        return frozen

    def _tell(self, trial: optuna.Trial, m: Measurement) -> None:
        for key, value in measurement_attrs(m).items():
            trial.set_user_attr(key, value)
        value = objective_value(m, self.options.objective) if m.ok else None
        if not m.ok or value is None:
            reason = m.failure or f"the workload reported no {self.options.objective}"
            trial.set_user_attr(FAILURE_ATTR, " ".join(str(reason).split())[:500])
            self.study.tell(trial, state=TrialState.FAIL)
            return
        slo = self.options.latency_slo_ms
        p95 = (m.latency_ms or {}).get("p95")
        trial.set_user_attr("feasible", slo is None or (p95 is not None and p95 <= slo))
        if slo is not None:  # feasible when <= 0
            trial.set_constraint(SLO_CONSTRAINT, float("inf") if p95 is None else p95 - slo)
        self.study.tell(trial, float(value))

    def _queue_init_combo(self) -> None:
        """Cost grouping: pin the reinit knobs of the next search trial to one golden copy."""
        combos = outer_combos(self.space, self.options.max_init_combos)
        trials = self.study.get_trials(deepcopy=False)
        if not combos or any(t.state == TrialState.WAITING for t in trials):
            return
        names = list(combos[0])
        per_combo: dict[tuple, list[FrozenTrial]] = {}
        for t in trials:
            if t.user_attrs.get(ROLE_ATTR) == "search" and (counted(t) or
                                                           t.state == TrialState.RUNNING):
                per_combo.setdefault(tuple(t.params.get(n) for n in names), []).append(t)
        chosen = None
        for c in combos:  # explore each golden copy a little, in order
            if len(per_combo.get(tuple(c.values()), [])) < self.options.min_per_combo:
                chosen = c
                break
        if chosen is None:  # then stay on the one with the best result
            sign = 1 if self.study.direction == optuna.study.StudyDirection.MAXIMIZE else -1

            def score(c: dict[str, Any]) -> float:
                vals = [sign * t.value for t in per_combo.get(tuple(c.values()), [])
                        if t.state == TrialState.COMPLETE]
                return max(vals, default=float("-inf"))

            chosen = max(combos, key=score)
        self.study.enqueue_trial(chosen, user_attrs={ROLE_ATTR: "search"})

    # -- the end: noise ----------------------------------------------------------------------
    def finalists(self) -> list[FrozenTrial]:
        """The top-k feasible trials and the two baselines (the first measured of each)."""
        trials = self.study.get_trials(deepcopy=False)
        slo = self.options.latency_slo_ms
        sign = 1 if self.study.direction == optuna.study.StudyDirection.MAXIMIZE else -1
        ranked = sorted((t for t in trials if feasible(t, slo)), key=lambda t: -sign * t.value)
        chosen = ranked[: self.options.top_k]
        for role in ("default", "rules"):
            base = next((t for t in trials if t.user_attrs.get(ROLE_ATTR) == role
                         and t.state == TrialState.COMPLETE), None)
            if base is not None and base not in chosen:
                chosen.append(base)
        return chosen

    def remeasure(self) -> None:
        """Measure each finalist ``repeats`` more times; stored after each config."""
        store: dict[str, list[dict]] = dict(self.study.user_attrs.get(REMEASURE_ATTR) or {})
        todo = [t for t in self.finalists()
                if len(store.get(str(t.number), [])) < self.options.repeats]
        for i, t in enumerate(todo, 1):
            cfg = t.user_attrs.get(CONFIG_ATTR) or {}
            config = TrialConfig(params=cfg.get("params", {}),
                                 init_params=cfg.get("init_params", {}))
            runs = list(store.get(str(t.number), []))
            while len(runs) < self.options.repeats:
                self.observer.phase(
                    f"re-measuring trial {t.number} ({i}/{len(todo)}), "
                    f"run {len(runs) + 1}/{self.options.repeats}"
                )
                m = self.evaluator.evaluate(config)
                runs.append({"ok": m.ok, **measurement_attrs(m), "failure": m.failure})
            store[str(t.number)] = runs
            self.study.set_user_attr(REMEASURE_ATTR, store)
