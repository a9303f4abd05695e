"""Create or resume a study: metadata checks, the stored search space, the enqueued baselines."""

from __future__ import annotations

import copy
import os
import threading
from typing import Any

import optuna
import psutil
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, TrialState

from pmem_advisor.errors import UsageError
from pmem_advisor.tuner.evaluator import Measurement
from pmem_advisor.tuner.space import SearchSpace

META_ATTR = "pmem_advisor.meta"
SPACE_ATTR = "pmem_advisor.space"
# A resumed run or a second worker must measure the same thing.
IDENTITY_KEYS = ("engine", "flavour", "workload", "objective")
ROLE_ATTR = "role"  # default | rules | search


def direction(objective: str) -> str:
    return "maximize" if objective == "throughput" else "minimize"


def study_exists(storage: BaseStorage, name: str) -> bool:
    return any(s.study_name == name for s in optuna.get_all_study_summaries(storage))


def open_study(
    storage: BaseStorage,
    name: str,
    meta: dict[str, Any],
    space: SearchSpace | None,
    *,
    resume: bool,
    sampler: optuna.samplers.BaseSampler | None = None,
) -> tuple[optuna.Study, SearchSpace]:
    """The study and its search space (the stored one when resuming).

    A new study gets the metadata, the space and the two baselines enqueued (trial 0 = server
    defaults, trial 1 = rules-only). An existing one is refused unless ``resume``, and when it
    was made for another engine, flavour, workload or objective.
    """
    exists = study_exists(storage, name)
    if exists and not resume:
        raise UsageError(f"study {name!r} already exists; pass --resume to continue it, "
                         "or --study NAME for a new one")
    if not exists and resume and space is None:
        raise UsageError(f"no study {name!r} to resume in this storage")
    study = optuna.create_study(
        storage=storage, study_name=name, direction=direction(meta["objective"]),
        sampler=sampler, load_if_exists=True,
    )
    stored_meta = study.user_attrs.get(META_ATTR)
    if stored_meta:
        for key in IDENTITY_KEYS:
            if key in meta and stored_meta.get(key) != meta.get(key):
                raise UsageError(
                    f"study {name!r} was created for {key} {stored_meta.get(key)!r}, "
                    f"not {meta.get(key)!r}; use another --study or --out"
                )
    else:
        study.set_user_attr(META_ATTR, meta)
    stored_space = study.user_attrs.get(SPACE_ATTR)
    if stored_space:
        return study, SearchSpace.from_dict(stored_space)
    if space is None:
        raise UsageError(f"study {name!r} has no search space stored; it was not made by tune")
    study.set_user_attr(SPACE_ATTR, space.to_dict())
    enqueue_baselines(study, space)
    return study, space


def enqueue_baselines(study: optuna.Study, space: SearchSpace) -> None:
    """Trial 0: the server's defaults; trial 1: the rules-only recommendation."""
    if study.get_trials(deepcopy=False):
        return  # another worker created the study and queued them already
    study.enqueue_trial(space.default_params, user_attrs={ROLE_ATTR: "default"})
    if space.rules_params is not None:
        study.enqueue_trial(space.rules_params, user_attrs={ROLE_ATTR: "rules"})


def load_existing(storage: BaseStorage, name: str | None) -> optuna.Study:
    """An existing study for reports (the only one in the storage when ``name`` is None)."""
    names = [s.study_name for s in optuna.get_all_study_summaries(storage)]
    if name is None:
        if len(names) != 1:
            raise UsageError(
                "no study in this storage" if not names
                else f"several studies in this storage ({', '.join(names)}); pass --study"
            )
        name = names[0]
    elif name not in names:
        raise UsageError(f"no study {name!r} in this storage")
    return optuna.load_study(study_name=name, storage=storage)


# -- the trials' attributes and what they say (the tuner writes them, the verdict and the
# reports read them) --------------------------------------------------------------------------
CONFIG_ATTR = "config"
FAILURE_ATTR = "failure"
INTERRUPTED_ATTR = "interrupted"
# A trial asked but not run: the shared trial budget was used by other workers, or its
# baseline was claimed by another worker (state FAIL, no ``failure``: neither counted nor shown).
SURPLUS_ATTR = "surplus"
REMEASURE_ATTR = "pmem_advisor.remeasure"
TIMING_ATTR = "pmem_advisor.timing"  # trials per hour, pruning savings, time to the config
WORKER_ATTR = "worker"
RETRY_ATTR = "retry_of"  # a dead worker's trial, queued again with the same params
WORKER_STARTED_ATTR = "worker_started"  # the worker process's start time (pid reuse check)
# A sampled search config whose worst-case memory exceeds the production budget: not run and
# not counted (a SURPLUS trial with this reason); the sampler is asked again, at most
# MAX_RESAMPLES times in a row, after which the point runs as a counted "not run" failure.
OVER_BUDGET_ATTR = "over_budget"
MAX_RESAMPLES = 50

SLO_CONSTRAINT = "latency_p95_over_slo_ms"
METRIC_ATTRS = {"throughput": "throughput_tps", "p95": "latency_p95_ms", "p99": "latency_p99_ms"}


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
        "cpu_steal_pct": (m.raw or {}).get("cpu_steal_pct"),
    }


# Trials the final phase stores (the verdict, for optuna-dashboard) are not search trials.
OUTSIDE_BUDGET_ROLES = frozenset({"verdict"})

# A search (or baseline) trial ends PRUNED with its one run reported at this step; only the
# verdict trial ends COMPLETE, with the emitted config's repeated median. So Optuna's best
# trial, the one optuna-dashboard shows, is always the verdict's: a lucky single run cannot
# outrank the repeated median (issue 12). The samplers still learn from every run: TPE and
# CMA-ES rank pruned trials by that value, GP sees them through samplers.MeasuredView. Studies
# made before this stored runs as COMPLETE values: ``measured`` reads both.
MEASURED_STEP = 0


def measured(t: FrozenTrial) -> float | None:
    """A trial's measured objective: its one run (PRUNED at MEASURED_STEP), or the value of a
    COMPLETE trial (the verdict's median; a search run of an older study). None otherwise."""
    if t.state == TrialState.COMPLETE:
        return t.value
    if t.state == TrialState.PRUNED:
        return t.intermediate_values.get(MEASURED_STEP)
    return None


def as_complete(t: FrozenTrial) -> FrozenTrial:
    """A copy of a measured trial as COMPLETE with its run as the value: what Optuna's own
    tools (importance, GP) read. The stored trial is not changed."""
    if t.state == TrialState.COMPLETE or measured(t) is None:
        return t
    c = copy.copy(t)
    c.state, c.value = TrialState.COMPLETE, measured(t)
    return c


def counted(t: FrozenTrial) -> bool:
    """Trials that use up the budget: measured ones and configs the server refused."""
    if t.user_attrs.get(ROLE_ATTR) in OUTSIDE_BUDGET_ROLES:
        return False
    if measured(t) is not None:
        return True
    return t.state == TrialState.FAIL and bool(t.user_attrs.get(FAILURE_ATTR))


def live(t: FrozenTrial) -> bool:
    """A trial some worker is measuring now (stale ones are failed before each ask)."""
    return (t.state == TrialState.RUNNING and not t.user_attrs.get(SURPLUS_ATTR)
            and t.user_attrs.get(ROLE_ATTR) not in OUTSIDE_BUDGET_ROLES)


def claimed(t: FrozenTrial) -> bool:
    """Trials that hold a share of the budget: counted ones and those being measured."""
    return counted(t) or live(t)


def feasible(t: FrozenTrial, slo_ms: float | None) -> bool:
    if measured(t) is None:
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
    return max(done, key=lambda t: sign * measured(t))


class Heartbeat:
    """Keeps a trial alive in the storage while it is measured (ask/tell has no thread)."""

    def __init__(self, study: optuna.Study, trial_id: int) -> None:
        storage = study._storage  # Optuna wraps the RDB storage; the wrapper delegates
        get = getattr(storage, "get_heartbeat_interval", None)
        self._interval = get() if get else None
        self._storage, self._trial_id = storage, trial_id
        self._stop = threading.Event()
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        while True:
            try:
                self._storage.record_heartbeat(self._trial_id)
            except Exception as e:  # noqa: BLE001 - the measuring thread meets it in one line
                # A storage that went away (a removed or read-only study file, a dropped
                # database) fails the worker's next write, which reports it; a thread's
                # traceback on stderr would only bury that line.
                self.error = e
                return
            if self._stop.wait(self._interval):
                return

    def __enter__(self) -> Heartbeat:
        if self._interval:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._interval:
            self._stop.set()
            self._thread.join()


def process_alive(pid: int, started: float | None) -> bool:
    try:
        created = psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False
    return started is None or abs(created - float(started)) < 1.0


def this_process_started() -> float | None:
    try:
        return psutil.Process(os.getpid()).create_time()
    except psutil.Error:
        return None
