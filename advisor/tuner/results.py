"""What a study found, computed from the study alone (so `report DIR` can rebuild it).

The verdict (tuner/verdict.py) decides which config is emitted ("best"): the tuned one only
when the interleaved re-measurement shows it significantly better than rules-only. The gains
and intervals printed are the verdict's, computed from the repeated runs only (the search's
single run of the winner is kept apart as ``search_value``: it is the luckiest run).
"""

from __future__ import annotations

import statistics
import warnings
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from pmem_advisor.tuner.space import SearchSpace
from pmem_advisor.tuner.stats import spread_pct
from pmem_advisor.tuner.study import (
    CONFIG_ATTR,
    FAILURE_ATTR,
    INTERRUPTED_ATTR,
    META_ATTR,
    METRIC_ATTRS,
    OVER_BUDGET_ATTR,
    REMEASURE_ATTR,
    ROLE_ATTR,
    SPACE_ATTR,
    TIMING_ATTR,
    as_complete,
    feasible,
    measured,
)
from pmem_advisor.tuner.verdict import (
    CLAIM_FAILURE_ATTR,
    KEEP,
    LABELS,
    SURPLUS_ATTR,
    VERDICT_ATTR,
    decide,
    finalists,
    finalists_key,
    is_verdict,
    make_plan,
    rounds_of,
    values_of,
)

MIN_TRIALS_FOR_IMPORTANCE = 4
PROFILE_ATTR = "pmem_advisor.profile"  # the probed hardware profile (set by run_tune)
END_ATTR = "pmem_advisor.end"  # why the last run ended (TUNE-B: done|budget|interrupted|...)


def measured_trials(study: optuna.Study) -> list[FrozenTrial]:
    """Measured trials of the search and baselines (not the verdict trial), as COMPLETE
    copies whose value is their one run (they are stored PRUNED: see tuner.MEASURED_STEP)."""
    return [as_complete(t) for t in study.get_trials(deepcopy=False)
            if measured(t) is not None and not is_verdict(t)]


def knob_importance(study: optuna.Study, seed: int = 0) -> dict[str, float]:
    """Knobs ranked by fANOVA importance over the measured trials (empty when too few
    differ). The one computation both report.md and report.html show."""
    done = measured_trials(study)
    if len(done) < MIN_TRIALS_FOR_IMPORTANCE or len({t.value for t in done}) < 2:
        return {}
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "new study created" line
    try:
        copy = optuna.create_study(direction=study.direction)
    finally:
        optuna.logging.set_verbosity(level)
    copy.add_trials(done)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            imp = optuna.importance.get_param_importances(
                copy, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=seed)
            )
    except (RuntimeError, ValueError):  # e.g. every param constant across trials
        return {}
    return {k: float(v) for k, v in imp.items()}


def _remeasured(study: optuna.Study, t: FrozenTrial, metric: str) -> list[float]:
    extra = (study.user_attrs.get(REMEASURE_ATTR) or {}).get(str(t.number), [])
    return [float(r[metric]) for r in extra if r.get("ok") and r.get(metric) is not None]


def _median(vals: list[float]) -> float | None:
    return statistics.median(vals) if vals else None


def _entry(study: optuna.Study, t: FrozenTrial | None, metric: str, role: str
           ) -> dict[str, Any] | None:
    if t is None:
        return None
    runs = _remeasured(study, t, metric)
    single = t.user_attrs.get(metric)
    repeated = bool(runs)
    if not runs and single is not None:  # never re-measured: the one run is all we have
        runs = [float(single)]

    def med(name: str) -> float | None:
        vals = _remeasured(study, t, name)
        if not vals and t.user_attrs.get(name) is not None:
            vals = [float(t.user_attrs[name])]
        return _median(vals)

    cfg = t.user_attrs.get(CONFIG_ATTR) or {}
    return {
        "trial": t.number,
        "role": role,
        # The values that ran (snapped and ordered), not the sampler's raw numbers.
        "params": {k: {**(cfg.get("init_params") or {}), **(cfg.get("params") or {})}.get(k, v)
                   for k, v in t.params.items()},
        "config": cfg,
        "throughput_tps": med("throughput_tps"),
        "latency_p95_ms": med("latency_p95_ms"),
        "latency_p99_ms": med("latency_p99_ms"),
        "objective_median": _median(runs),
        "runs": len(runs),
        "repeated": repeated,
        "spread_pct": spread_pct(runs),
        "values": runs,
        "search_value": single,
    }


def _fallback_verdict(study: optuna.Study, fin: dict[str, FrozenTrial], metric: str,
                      higher: bool) -> dict[str, Any] | None:
    """No stored verdict (no re-measurement ran, or it was interrupted): decide on whatever
    runs exist. One run each can never be significant, so rules-only is kept."""
    if not fin:
        return None
    store = study.user_attrs.get(REMEASURE_ATTR) or {}
    vals = values_of(store, fin, metric)
    remeasured = any(store.get(str(t.number)) for t in fin.values())
    if not remeasured:  # never mix a search run with re-measured ones: the search run is lucky
        vals = {role: [float(t.user_attrs[metric])] if t.user_attrs.get(metric) is not None
                else [] for role, t in fin.items()}
    if not remeasured:
        return _not_remeasured(study, fin, vals)
    rounds = max((len(v) for v in vals.values()), default=1)
    plan = make_plan(max(1, rounds), list(fin), paired=True)
    v = decide(vals, plan, final=True, higher_is_better=higher,
               by_round=rounds_of(store, fin, metric))
    v.update(finalists=finalists_key(fin), plan=plan.to_dict() if remeasured else {},
             rounds=rounds if remeasured else None, complete=False,
             trials={r: t.number for r, t in fin.items()})
    why = (" (the final re-measurement did not complete)" if remeasured else
           " (no re-measurement: single search runs only)")
    v["text"] += why
    v["text_full"] = v["text"] + "".join("; " + n for n in v.get("notes", []))
    return v


def _not_remeasured(study: optuna.Study, fin: dict[str, FrozenTrial],
                    single: dict[str, list[float]]) -> dict[str, Any]:
    """No finalist was measured again: one run each decides nothing (the best single run is
    the luckiest as much as the best), so the rules' config is emitted (the defaults' without
    rules) and the verdict says it was not re-measured, and why."""
    meta = study.user_attrs.get(META_ATTR) or {}
    emit = next((r for r in ("rules", "default", "tuned") if r in fin), None)
    why = ("--repeats 0" if meta.get("repeats") == 0 else
           "the run ended before the re-measurement")
    runs = ", ".join(f"{LABELS[r]} {single[r][0]:,.1f}" for r in ("tuned", "rules", "default")
                     if single.get(r))
    text = (f"not re-measured ({why}): keeping {KEEP.get(emit or '', emit)}"
            + (f"; single search runs, not compared: {runs}" if runs else ""))
    return {"kind": "not-re-measured", "emit": emit, "decided": False, "text": text,
            "text_full": text, "comparisons": {}, "noise_pct": None, "notes": [],
            "runs": {r: len(v) for r, v in single.items()}, "finalists": finalists_key(fin),
            "plan": {}, "rounds": None, "complete": False,
            "trials": {r: t.number for r, t in fin.items()}}


def failures(study: optuna.Study, verdict: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every run that failed or crashed, search or re-measurement, with the server's reason."""
    out: list[dict[str, Any]] = []
    for t in study.get_trials(deepcopy=False):
        if t.user_attrs.get(SURPLUS_ATTR) or t.state != TrialState.FAIL:
            continue
        reason = (t.user_attrs.get(FAILURE_ATTR) or t.user_attrs.get(CLAIM_FAILURE_ATTR)
                  or t.user_attrs.get(INTERRUPTED_ATTR))
        if is_verdict(t):
            phase = "re-measure"
            reason = reason or "the worker re-measuring stopped (heartbeat lost)"
        elif t.user_attrs.get(FAILURE_ATTR):
            phase = "search"
        else:
            phase = "interrupted"
            reason = reason or "the worker measuring it stopped (heartbeat lost)"
        out.append({"trial": t.number, "role": t.user_attrs.get(ROLE_ATTR), "phase": phase,
                    "round": None, "params": dict(t.params),
                    "reason": " ".join(str(reason).split())[:500]})
    store = study.user_attrs.get(REMEASURE_ATTR) or {}
    roles = {str(n): r for r, n in ((verdict or {}).get("trials") or {}).items()}
    for number, runs in store.items():
        for r in runs:
            if not r.get("ok"):
                out.append({"trial": int(number), "role": r.get("role") or roles.get(number),
                            "phase": "re-measure", "round": r.get("round"), "params": {},
                            "reason": " ".join(str(r.get("failure") or "no result").split())})
    return out


def optuna_best(study: optuna.Study, verdict: dict[str, Any] | None) -> dict[str, Any] | None:
    """What Optuna (and optuna-dashboard) call the best trial, and whether it is the verdict's.

    Search runs are stored PRUNED (tuner.MEASURED_STEP) and the verdict trial COMPLETE with the
    emitted config's repeated median, so the verdict trial is Optuna's best by construction.
    A study begun before that (search runs as COMPLETE values) can still disagree: then it is
    said, never hidden. None before any verdict (nothing is COMPLETE yet).
    """
    try:
        bt = study.best_trial
    except ValueError:  # no verdict yet
        return None
    agrees = is_verdict(bt) and bool(verdict) and verdict.get("claim_trial") == bt.number
    out = {"trial": bt.number, "value": bt.value, "role": bt.user_attrs.get(ROLE_ATTR),
           "agrees": agrees}
    if not agrees:
        out["note"] = (f"optuna-dashboard's best trial is trial {bt.number} "
                       f"({bt.user_attrs.get(ROLE_ATTR)}): one run of {bt.value:.1f}; the "
                       "verdict, from repeated interleaved runs, is what this report and the "
                       "config follow" + (f" (verdict trial {verdict['claim_trial']})"
                                          if verdict and verdict.get("claim_trial") is not None
                                          else ""))
    return out


def summarize(study: optuna.Study) -> dict[str, Any]:
    """Counts, the verdict, the emitted config, baselines, spread, importance, failures."""
    meta = dict(study.user_attrs.get(META_ATTR) or {})
    space = SearchSpace.from_dict(study.user_attrs[SPACE_ATTR])
    objective = meta.get("objective", "throughput")
    metric = METRIC_ATTRS[objective]
    slo = meta.get("latency_slo_ms")
    higher = objective == "throughput"
    trials = [t for t in study.get_trials(deepcopy=False)
              if not is_verdict(t) and not t.user_attrs.get(SURPLUS_ATTR)]
    fin = finalists(study, slo)
    key = finalists_key(fin)
    verdict = study.user_attrs.get(VERDICT_ATTR)
    if verdict and verdict.get("finalists") == key:
        verdict = {**verdict, "complete": True}
    else:
        verdict = _fallback_verdict(study, fin, metric, higher)
    entries = {role: _entry(study, t, metric, role) for role, t in fin.items()}
    emit = (verdict or {}).get("emit")
    comps = (verdict or {}).get("comparisons") or {}
    fails = failures(study, verdict)
    summary: dict[str, Any] = {
        "engine": meta.get("engine", space.engine),
        "flavour": meta.get("flavour", space.flavour),
        "version": meta.get("version", space.version),
        "workload": meta.get("workload"),
        "objective": objective,
        "latency_slo_ms": slo,
        "study": study.study_name,
        "trials_completed": sum(measured(t) is not None for t in trials),
        "trials_failed": sum(f["phase"] == "search" for f in fails),
        "runs_failed": len(fails),
        "trials_infeasible": sum(measured(t) is not None and not feasible(t, slo)
                                 for t in trials),
        "points_over_budget": sum(bool(t.user_attrs.get(OVER_BUDGET_ATTR))
                                  for t in study.get_trials(deepcopy=False)),
        "verdict": verdict,
        "best": entries.get(emit) if emit else None,
        "tuned": entries.get("tuned"),
        "baselines": {"default": entries.get("default"), "rules": entries.get("rules")},
        "spread_pct": (verdict or {}).get("noise_pct"),
        "gain_vs_default": comps.get("tuned_vs_default"),
        "gain_vs_rules": comps.get("tuned_vs_rules"),
        "rules_gain_vs_default": comps.get("rules_vs_default"),
        "importance": knob_importance(study),
        "failures": fails,
        "run_end": study.user_attrs.get(END_ATTR),
        "timing": study.user_attrs.get(TIMING_ATTR),
        "optuna_best": optuna_best(study, verdict),
        "profile": study.user_attrs.get(PROFILE_ATTR),
        "emulated_pmem": bool(meta.get("emulated_pmem")),
        "space": [k.name for k in space.knobs],
        "meta": meta,
    }
    return summary
