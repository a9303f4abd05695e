"""The ask/tell loop: baselines first, cost-grouped search, failures recorded, top-k re-measured.

Every trial's exact config and measurement are stored as trial user attributes, and the
re-measurements as a study attribute, so a report can be rebuilt from the study alone.
"""

from __future__ import annotations

import itertools
import os
import socket
import time
import warnings
from collections import Counter
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from pmem_advisor.tuner.cpu_steal import measure
from pmem_advisor.tuner.evaluator import Evaluator, Measurement, TrialConfig
from pmem_advisor.tuner.pairing import PAIRED_ATTR, Pairing, measure_paired, paired_value, pairing
from pmem_advisor.tuner.pruning import FINAL_STEP, PRUNED_BY_INTERIM_ATTR, InterimPruner
from pmem_advisor.tuner.space import SearchSpace
from pmem_advisor.tuner.study import (
    CONFIG_ATTR,
    FAILURE_ATTR,
    INTERRUPTED_ATTR,
    MAX_RESAMPLES,
    MEASURED_STEP,
    OVER_BUDGET_ATTR,
    RETRY_ATTR,
    ROLE_ATTR,
    SLO_CONSTRAINT,
    SURPLUS_ATTR,
    TIMING_ATTR,
    WORKER_ATTR,
    WORKER_STARTED_ATTR,
    Heartbeat,
    best_trial,
    claimed,
    counted,
    measured,
    measurement_attrs,
    objective_value,
    process_alive,
    this_process_started,
)
from pmem_advisor.tuner.types import Observer, TuneOptions
from pmem_advisor.tuner.verdict import finalists, remeasure_runs_planned, run_final


class BudgetExhausted(Exception):
    """Internal: the time budget leaves no room for another trial and the re-measurement."""


def trial_config(space: SearchSpace, params: dict[str, Any], role: str) -> TrialConfig:
    """The config a trial runs: nothing for the defaults (but the smallest change that makes
    them hold the data, when they cannot); rule base settings + params else."""
    if role == "default":
        return TrialConfig(params=dict(space.default_fixes))
    runtime, init = space.split(params, snap=role == "search")
    # Init values equal to the server default share the defaults' golden copy.
    defaults = {k.name: k.default for k in space.reinit_knobs}
    init = {n: v for n, v in {**space.base_init, **init}.items() if v != defaults.get(n)}
    return TrialConfig(params={**space.base, **runtime}, init_params=init)


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
        self.stop_reason: str | None = None  # done | budget (why the search ended)
        self._durations: list[float] = []  # wall seconds of this worker's measured trials
        self.saved_s = 0.0  # wall seconds pruned trials did not run (to re-measurement)
        self.pruner = (InterimPruner(warmup_s=options.warmup_s)
                       if options.prune and options.objective == "throughput" else None)
        start = options.started if options.started is not None else time.monotonic()
        self.deadline = (start + options.time_budget_s
                         if options.time_budget_s is not None else None)

    # -- the search --------------------------------------------------------------------------
    def used(self) -> int:
        return sum(1 for t in self.study.get_trials(deepcopy=False) if counted(t))

    def claimed(self) -> int:
        return sum(1 for t in self.study.get_trials(deepcopy=False) if claimed(t))

    def fail_dead_workers(self) -> list[int]:
        """Fail (and queue again) the RUNNING trials of workers on this host that are gone
        (SIGKILL, OOM kill, power off): at once, without waiting for the heartbeat's grace
        period, which still covers workers on other hosts. Returns the trial numbers."""
        host, failed = socket.gethostname(), []
        storage = self.study._storage
        for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            h, _, pid = str(t.user_attrs.get(WORKER_ATTR, "")).rpartition(":")
            if h != host or not pid.isdigit() or int(pid) == os.getpid():
                continue
            if process_alive(int(pid), t.user_attrs.get(WORKER_STARTED_ATTR)):
                continue
            try:
                storage.set_trial_user_attr(t._trial_id, INTERRUPTED_ATTR,
                                            f"worker {h}:{pid} died (killed) during the trial")
                if not storage.set_trial_state_values(t._trial_id, TrialState.FAIL):
                    continue
            except (RuntimeError, optuna.exceptions.UpdateFinishedTrialError):
                continue  # another worker failed it first
            role = t.user_attrs.get(ROLE_ATTR) or "search"
            self.study.enqueue_trial(t.params, user_attrs={ROLE_ATTR: role,
                                                           RETRY_ATTR: t.number})
            failed.append(t.number)
        return failed

    def trial_seconds(self) -> float:
        """A trial's expected wall time: the median of this worker's, else the estimate."""
        if not self._durations:
            return self.options.trial_estimate_s
        ordered = sorted(self._durations)
        return ordered[len(ordered) // 2]

    def remeasure_runs(self) -> int:
        """evaluate() calls the final re-measurement will make at most."""
        planned = getattr(self, "remeasure_runs_planned", None)
        if callable(planned):
            return int(planned())
        return (self.options.top_k + 2) * self.options.repeats if self.options.repeats else 0

    def remaining_seconds(self) -> float:
        left = max(0, self.options.trials - self.claimed())
        return (left + self.remeasure_runs()) * self.trial_seconds()

    def _room_for_trial(self) -> bool:
        """The budget covers every phase: one more trial must leave time to re-measure."""
        if self.deadline is None:
            return True
        needed = self.trial_seconds() * (1 + self.remeasure_runs())
        return time.monotonic() + needed <= self.deadline

    def run(self) -> None:
        """Run trials until the study holds ``trials`` counted ones (all workers together) or
        the time budget leaves room only for the re-measurement, then re-measure the
        finalists. Ctrl-C and SIGTERM leave the study resumable."""
        self.stop_reason = "done"
        self.fail_dead_workers()
        began = time.monotonic()
        while self.claimed() < self.options.trials:
            if not self._room_for_trial():
                self.stop_reason = "budget"
                self.observer.phase("time budget: stopping the search to leave time for "
                                    "the re-measurement")
                break
            self.observer.estimate(self.remaining_seconds(), self.used(), self.options.trials)
            self.step()
        searched = time.monotonic()
        self._record_timing(search_s=searched - began)
        if self.options.repeats > 0 and self.used() >= 1:
            self.observer.estimate(self.remeasure_runs() * self.trial_seconds(),
                                   self.used(), self.options.trials)
            self.remeasure()
        self._record_timing(search_s=searched - began, final_s=time.monotonic() - began)

    def _record_timing(self, *, search_s: float, final_s: float | None = None) -> None:
        """Trials per hour of the search, the time pruning saved, the time to the final
        config (search + re-measurement), as a study attribute every report reads."""
        search = [t for t in self.study.get_trials(deepcopy=False)
                  if t.user_attrs.get(ROLE_ATTR) != "verdict" and counted(t)]
        pruned = sum(1 for t in search if t.user_attrs.get(PRUNED_BY_INTERIM_ATTR))
        records = [t.user_attrs.get(PAIRED_ATTR) or {} for t in search
                   if t.user_attrs.get(ROLE_ATTR) == "search"]
        alone = [r["alone"] for r in records if r.get("alone")]
        timing = {"trials": len(search), "pruned_by_interim": pruned,
                  "search_s": round(search_s, 1),
                  "trials_per_hour": round(3600.0 * len(search) / search_s, 1)
                  if search_s > 0 else None,
                  "saved_by_pruning_s": round(self.saved_s, 1),
                  "extra_rounds_from_pruning": self.extra_rounds(),
                  "time_to_final_config_s": None if final_s is None else round(final_s, 1),
                  "side_by_side": sum(1 for r in records if paired_value(r) is not None),
                  "search_trials": len(records), "alone": len(alone),
                  "alone_why": Counter(alone).most_common(1)[0][0] if alone else None}
        self.study.set_user_attr(TIMING_ATTR, timing)

    def extra_rounds(self) -> int:
        """Re-measurement rounds the time pruning saved pays for (one round measures each
        finalist once, a full trial's time each)."""
        per_round = self.trial_seconds() * 3
        return int(self.saved_s // per_round) if per_round > 0 else 0

    def _surplus(self, number: int, role: str) -> str | None:
        """Why a just-asked trial must not run: its baseline is another worker's, or the
        trials before it (by number: the storage's order of asks) fill the shared budget."""
        earlier = [t for t in self.study.get_trials(deepcopy=False) if t.number < number]
        if role in ("default", "rules"):
            first = next((t for t in earlier
                          if t.user_attrs.get(ROLE_ATTR) == role and claimed(t)), None)
            if first is not None:
                return f"the {role} baseline is trial {first.number}"
        if sum(1 for t in earlier if claimed(t)) >= self.options.trials:
            return f"the {self.options.trials} trials asked were taken by other workers"
        return None

    def step(self) -> FrozenTrial | None:
        """One trial: ask (queued baselines first), measure, tell. None when the trial was
        surplus (another worker took the budget or the baseline)."""
        began = time.monotonic()  # the whole step: sampler and storage time count too
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(self.study)  # a dead worker's trial is re-queued
        self._queue_init_combo()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "heartbeat is supposed to be used with optimize"
            trial = self.study.ask(self._dists)
        role = trial.user_attrs.get(ROLE_ATTR) or "search"
        surplus = self._surplus(trial.number, role)
        over = self._over_budget(trial, role)
        if over:
            trial.set_user_attr(OVER_BUDGET_ATTR, over)
            surplus = f"not run: {over}; the sampler was asked again"
        if surplus:
            trial.set_user_attr(SURPLUS_ATTR, surplus)
            trial.set_user_attr(ROLE_ATTR, role)
            self.study.tell(trial, state=TrialState.FAIL)
            return None
        try:  # a signal may land anywhere from here to tell(): never leave the trial RUNNING
            with Heartbeat(self.study, trial._trial_id):  # at once: never stale without one
                trial.set_user_attr(ROLE_ATTR, role)
                trial.set_user_attr(WORKER_ATTR, f"{socket.gethostname()}:{os.getpid()}")
                trial.set_user_attr(WORKER_STARTED_ATTR, this_process_started())
                config = trial_config(self.space, trial.params, role)
                trial.set_user_attr(CONFIG_ATTR, {"params": config.params,
                                                  "init_params": config.init_params})
                self.observer.trial_started(trial.number, role, config)
                unfit = (self.options.memory_gate(config.params)
                         if role == "search" and self.options.memory_gate else None)
                pruned: list[str] = []
                paired: dict[str, Any] = {}
                self._resamples = 0
                m = (Measurement(ok=False, failure=f"not run: {unfit}") if unfit
                     else self._evaluate(trial, role, config, pruned, paired))
                took = time.monotonic() - began
                if m.ok and m.stopped_early and pruned:
                    trial.set_user_attr(PRUNED_BY_INTERIM_ATTR, pruned[0])
                    self.saved_s += max(0.0, self.trial_seconds() - took)
                else:
                    self._durations.append(took)  # a full trial's time, for estimates
                self._tell(trial, m, paired_value(paired))
        except BaseException as e:  # Ctrl-C, SIGTERM, no server at all, a bug: keep it resumable
            self._fail_interrupted(trial, role, e)
            raise
        frozen = next(t for t in self.study.get_trials(deepcopy=False)
                      if t.number == trial.number)
        self.observer.trial_finished(frozen, best_trial(self.study, self.options.latency_slo_ms))
        return frozen

    def _evaluate(self, trial: optuna.Trial, role: str, config: TrialConfig,
                  pruned: list[str], paired: dict[str, Any]) -> Measurement:
        """Measure a trial. A search trial runs side by side with rules-only where it can
        (``paired`` receives the record, also stored as a trial attribute); else it reports
        its interim throughput as Optuna intermediate values and stops when the pruner says it
        is clearly below the incumbent (the reason lands in ``pruned``). Baselines always run
        alone and to the end."""
        if role == "search" and self.options.paired_search:
            how = pairing(self.study, self.evaluator, config, self.options.objective)
            if isinstance(how, Pairing):
                m, record = measure_paired(self.evaluator, how, config)
                paired.update(record)
                trial.set_user_attr(PAIRED_ATTR, record)
                return m
            trial.set_user_attr(PAIRED_ATTR, {"alone": how})
        if not (self.pruner is not None and role == "search"):
            return measure(self.evaluator, config)
        storage = self.study._storage

        def on_interim(samples: list[float]) -> bool:
            trial.report(float(samples[-1]), len(samples))
            d = self.pruner.decide(self.study, storage.get_trial(trial._trial_id))
            if d.prune:
                pruned.append(d.reason or "clearly below the incumbent")
            return d.prune

        self.evaluator.on_interim = on_interim
        try:
            return measure(self.evaluator, config)
        finally:
            self.evaluator.on_interim = None

    def _over_budget(self, trial: optuna.Trial, role: str) -> str | None:
        """Why a sampled search config is not worth a trial (over the memory budget), while
        the sampler may still be asked again; None to run it."""
        if role != "search" or not self.options.memory_gate:
            return None
        if getattr(self, "_resamples", 0) >= MAX_RESAMPLES:
            return None  # the space is mostly over budget: run it, as a counted failure
        unfit = self.options.memory_gate(trial_config(self.space, trial.params, role).params)
        if unfit:
            self._resamples = getattr(self, "_resamples", 0) + 1
        return unfit

    def _fail_interrupted(self, trial: optuna.Trial, role: str, e: BaseException) -> None:
        """Fail a trial the run stopped before telling (the reason kept, so summary "failures"
        and report.md list it) and queue its params again for --resume. A trial already told
        (the signal came after tell) is left as it is."""
        stored = self.study._storage.get_trial(trial._trial_id)
        if stored.state != TrialState.RUNNING:
            return
        trial.set_user_attr(INTERRUPTED_ATTR, f"{type(e).__name__}: {e}"[:300])
        self.study.tell(trial, state=TrialState.FAIL)
        if not stored.user_attrs.get(FAILURE_ATTR):  # a measured failure counts: not re-run
            self.study.enqueue_trial(trial.params, user_attrs={ROLE_ATTR: role})

    def _tell(self, trial: optuna.Trial, m: Measurement, paired: float | None = None
              ) -> None:
        """Store the measurement; the trial's value is its own run, or for a trial measured
        beside rules-only (``paired``) its ratio to rules-only times rules-only's run."""
        for key, value in measurement_attrs(m).items():
            trial.set_user_attr(key, value)
        value = objective_value(m, self.options.objective) if m.ok else None
        if value is not None and paired is not None:
            value = paired
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
        trial.report(float(value), MEASURED_STEP)  # one run: never Optuna's best (see above)
        trial.report(float(value), FINAL_STEP)  # what TPE ranks pruned trials by (pruning.py)
        if m.duration_s:
            trial.set_user_attr("measured_s", float(m.duration_s))
        self.study.tell(trial, state=TrialState.PRUNED)

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
                vals = [sign * measured(t) for t in per_combo.get(tuple(c.values()), [])
                        if measured(t) is not None]
                return max(vals, default=float("-inf"))

            chosen = max(combos, key=score)
        self.study.enqueue_trial(chosen, user_attrs={ROLE_ATTR: "search"})

    # -- the end: the verdict (advisor/tuner/verdict.py) ------------------------------------
    def finalists(self) -> list[FrozenTrial]:
        """The configs the final phase compares: the best search trial, rules-only, defaults."""
        return list(finalists(self.study, self.options.latency_slo_ms).values())

    def remeasure_runs_planned(self) -> int:
        """The most evaluate() calls the final phase will make (for the time budget)."""
        return remeasure_runs_planned(self)

    def remeasure(self) -> dict[str, Any] | None:
        """Interleaved re-measurement of the finalists until the verdict is decided, by one
        worker of the study; returns the stored verdict."""
        return run_final(self)
