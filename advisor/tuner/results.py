"""What a study found, computed from the study alone (so `report DIR` can rebuild it)."""

from __future__ import annotations

import statistics
import warnings
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from pmem_advisor.tuner.space import SearchSpace
from pmem_advisor.tuner.stats import gain_ci, spread_pct
from pmem_advisor.tuner.study import META_ATTR, ROLE_ATTR, SPACE_ATTR
from pmem_advisor.tuner.tuner import (
    CONFIG_ATTR,
    FAILURE_ATTR,
    METRIC_ATTRS,
    REMEASURE_ATTR,
    feasible,
)

MIN_TRIALS_FOR_IMPORTANCE = 4


def knob_importance(study: optuna.Study, seed: int = 0) -> dict[str, float]:
    """Knobs ranked by fANOVA importance (empty when too few trials differ)."""
    done = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    if len(done) < MIN_TRIALS_FOR_IMPORTANCE or len({t.value for t in done}) < 2:
        return {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            imp = optuna.importance.get_param_importances(
                study, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=seed)
            )
    except (RuntimeError, ValueError):  # e.g. every param constant across trials
        return {}
    return {k: float(v) for k, v in imp.items()}


def _runs(study: optuna.Study, t: FrozenTrial, metric: str) -> list[float]:
    """The trial's own measurement plus its re-measurements (successful ones)."""
    vals = [t.user_attrs.get(metric)]
    extra = (study.user_attrs.get(REMEASURE_ATTR) or {}).get(str(t.number), [])
    vals += [r.get(metric) for r in extra if r.get("ok")]
    return [float(v) for v in vals if v is not None]


def _entry(study: optuna.Study, t: FrozenTrial | None, metric: str) -> dict[str, Any] | None:
    if t is None:
        return None
    runs = _runs(study, t, metric)
    tps = _runs(study, t, "throughput_tps")
    p95 = _runs(study, t, "latency_p95_ms")
    p99 = _runs(study, t, "latency_p99_ms")
    cfg = t.user_attrs.get(CONFIG_ATTR) or {}
    return {
        "trial": t.number,
        "role": t.user_attrs.get(ROLE_ATTR),
        # The values that ran (snapped and ordered), not the sampler's raw numbers.
        "params": {k: {**(cfg.get("init_params") or {}), **(cfg.get("params") or {})}.get(k, v)
                   for k, v in t.params.items()},
        "config": cfg,
        "throughput_tps": statistics.median(tps) if tps else None,
        "latency_p95_ms": statistics.median(p95) if p95 else None,
        "latency_p99_ms": statistics.median(p99) if p99 else None,
        "objective_median": statistics.median(runs) if runs else None,
        "runs": len(runs),
        "spread_pct": spread_pct(runs),
        "values": runs,
    }


def summarize(study: optuna.Study) -> dict[str, Any]:
    """Counts, baselines, the best config by repeated median, spread, gains, importance."""
    meta = dict(study.user_attrs.get(META_ATTR) or {})
    space = SearchSpace.from_dict(study.user_attrs[SPACE_ATTR])
    objective = meta.get("objective", "throughput")
    metric = METRIC_ATTRS[objective]
    slo = meta.get("latency_slo_ms")
    higher = objective == "throughput"
    trials = study.get_trials(deepcopy=False)

    def first(role: str) -> FrozenTrial | None:
        return next((t for t in trials if t.user_attrs.get(ROLE_ATTR) == role
                     and t.state == TrialState.COMPLETE), None)

    remeasured = study.user_attrs.get(REMEASURE_ATTR) or {}
    candidates = [t for t in trials if feasible(t, slo)]
    finalists = [t for t in candidates if str(t.number) in remeasured]
    pool = finalists or candidates

    def score(t: FrozenTrial) -> float:
        runs = _runs(study, t, metric)
        med = statistics.median(runs) if runs else t.value
        return med if higher else -med

    best = max(pool, key=score) if pool else None
    default, rules = _entry(study, first("default"), metric), _entry(study, first("rules"), metric)
    best_e = _entry(study, best, metric)
    failed = [t for t in trials if t.state == TrialState.FAIL and t.user_attrs.get(FAILURE_ATTR)]
    spreads = [e["spread_pct"] for e in (best_e, default, rules) if e and e["spread_pct"]]
    summary: dict[str, Any] = {
        "engine": meta.get("engine", space.engine),
        "flavour": meta.get("flavour", space.flavour),
        "version": meta.get("version", space.version),
        "workload": meta.get("workload"),
        "objective": objective,
        "latency_slo_ms": slo,
        "study": study.study_name,
        "trials_completed": sum(t.state == TrialState.COMPLETE for t in trials),
        "trials_failed": len(failed),
        "trials_infeasible": sum(t.state == TrialState.COMPLETE and not feasible(t, slo)
                                 for t in trials),
        "best": best_e,
        "baselines": {"default": default, "rules": rules},
        "spread_pct": max(spreads) if spreads else None,
        "gain_vs_default": None,
        "gain_vs_rules": None,
        "importance": knob_importance(study),
        "failures": [{"trial": t.number, "params": dict(t.params),
                      "reason": t.user_attrs.get(FAILURE_ATTR)} for t in failed],
        "space": [k.name for k in space.knobs],
        "meta": meta,
    }
    for key, top, base in (("gain_vs_default", best_e, default), ("gain_vs_rules", best_e, rules),
                           ("rules_gain_vs_default", rules, default)):
        summary.setdefault(key, None)
        if top and base:
            summary[key] = gain_ci(top["values"], base["values"], higher_is_better=higher)
    return summary
