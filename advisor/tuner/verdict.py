"""The final verdict of a tuning run: tuned vs rules-only vs server defaults, measured again.

A search ranks configs by one run each, and the best single run is the luckiest as much as
the best (the winner's curse), so the verdict uses only fresh runs:

- the three finalists (the best search trial by its single run, the rules-only trial, the
  defaults trial) are measured in interleaved rounds, A B C A B C ..., so a slow drift of the
  machine (page cache, another tenant, thermal) hits every config alike;
- after the rounds listed in ``Plan.looks`` every pair is compared with ``stats.compare``
  (exact permutation test + bootstrap interval of the ratio of medians, see stats.py);
- the alpha is spent honestly: Bonferroni over the looks and the pairs, so the chance of
  claiming any gain that is not there stays below ALPHA however early we stop. Two looks: the
  first round at which n vs n runs can reach that level at all (``stats.min_p_value``), and
  the last; the run stops at the first look where the question "which config do we emit" is
  answered, else after ``max_rounds`` rounds (the user's --repeats);
- outcome: "tuned is better by X% [CI]" (emit tuned), "no significant difference: keep rules"
  (the interval lies within +/-RESOLUTION_PCT: the runs could have seen a gain that size), or
  "inconclusive: noise Y%, run longer" (keep rules). Rules-only is kept unless it is
  significantly worse than the defaults, and whether it beats the defaults is said too.

With several workers on one study the final phase runs once: each worker creates a RUNNING
trial with role "verdict" straight in the storage (trial numbers are handed out atomically);
the lowest-numbered live claim wins, the others are PRUNED and wait for it. The winner's trial
ends COMPLETE with the repeated median of the emitted config as its value and that config's
params, and the verdict dict is stored as a study attribute that every worker and
`pmem-advisor report` print. A claim whose worker died loses its heartbeat, is failed by
Optuna and claimed again; the rounds measured so far are kept in the study and reused.
"""

from __future__ import annotations

import statistics
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from pmem_advisor.tuner.evaluator import TrialConfig
from pmem_advisor.tuner.stats import compare, min_p_value, spread_pct
from pmem_advisor.tuner.study import (
    CONFIG_ATTR,
    INTERRUPTED_ATTR,
    METRIC_ATTRS,
    REMEASURE_ATTR,
    ROLE_ATTR,
    Heartbeat,
    feasible,
    measured,
    measurement_attrs,
)

if TYPE_CHECKING:
    from pmem_advisor.tuner.tuner import Tuner

ALPHA = 0.05
RESOLUTION_PCT = 10.0  # "no difference" needs the whole interval within +/- this
DEFAULT_MAX_ROUNDS = 8
VERDICT_ROLE = "verdict"
VERDICT_ATTR = "pmem_advisor.verdict"
VERDICT_FOR_ATTR = "verdict_for"  # on a claim trial: the finalists it measures
SURPLUS_ATTR = "surplus"  # TUNE-B's attr for trials discarded by a worker (not failures)
CLAIM_FAILURE_ATTR = "verdict_failure"
POLL_S = 2.0

ROLES = ("tuned", "rules", "default")  # the measuring order within a round
LABELS = {"tuned": "tuned", "rules": "rules-only", "default": "server defaults"}
KEEP = {"rules": "rules", "default": "defaults", "tuned": "tuned"}
PAIRS = (("tuned", "rules"), ("rules", "default"), ("tuned", "default"))


@dataclass(frozen=True)
class Plan:
    """How many interleaved rounds at most, when to look, and the alpha of one test."""

    max_rounds: int
    looks: tuple[int, ...]
    comparisons: int
    alpha: float = ALPHA

    @property
    def alpha_per_test(self) -> float:
        return self.alpha / (len(self.looks) * self.comparisons)

    def to_dict(self) -> dict[str, Any]:
        return {"max_rounds": self.max_rounds, "looks": list(self.looks),
                "comparisons": self.comparisons, "alpha": self.alpha,
                "alpha_per_test": self.alpha_per_test,
                "correction": "Bonferroni over looks x comparisons"}


def make_plan(max_rounds: int, roles: list[str] | tuple[str, ...], alpha: float = ALPHA) -> Plan:
    """Two looks when the budget allows an earlier decision, else one at the end."""
    m = max(1, sum(a in roles and b in roles for a, b in PAIRS))
    two = alpha / (2 * m)
    first = next((n for n in range(2, max_rounds) if min_p_value(n) <= two), None)
    looks = (first, max_rounds) if first is not None else (max_rounds,)
    return Plan(max_rounds=max(1, max_rounds), looks=looks, comparisons=m, alpha=alpha)


def _label(role: str) -> str:
    return LABELS.get(role, role)


def _ci(c: dict[str, Any]) -> str:
    """'+4.1% [-2.0%, +9.8%]' (signed: a gain of the first config over the second)."""
    if c.get("ci_low_pct") is None:
        return f"{c['gain_pct']:+.1f}%" if c.get("gain_pct") is not None else "n/a"
    return f"{c['gain_pct']:+.1f}% [{c['ci_low_pct']:+.1f}%, {c['ci_high_pct']:+.1f}%]"


def _by(c: dict[str, Any]) -> str:
    """'12.3% [4.1%, 20.5%]': the size of a significant difference (better or worse)."""
    vals = [c["gain_pct"], c["ci_low_pct"], c["ci_high_pct"]]
    g, low, high = (abs(v) for v in vals)
    low, high = min(low, high), max(low, high)
    return f"{g:.1f}% [{low:.1f}%, {high:.1f}%]"


def _within(c: dict[str, Any]) -> bool:
    low, high = c.get("ci_low_pct"), c.get("ci_high_pct")
    return low is not None and high is not None and -RESOLUTION_PCT <= low and high <= \
        RESOLUTION_PCT


def decide(values: dict[str, list[float]], plan: Plan, *, final: bool,
           higher_is_better: bool = True, seed: int = 0) -> dict[str, Any]:
    """The verdict on the runs so far (``final``: no more rounds will come).

    ``values``: role (tuned | rules | default) -> the objective of each successful run.
    Returns kind (better | worse | no-difference | inconclusive | undecided), emit (the role
    whose config is written), text (the sentence every output prints), comparisons, noise_pct.
    """
    roles = [r for r in ROLES if r in values]
    comparisons = {f"{a}_vs_{b}": compare(values[a], values[b], alpha=plan.alpha_per_test,
                                          higher_is_better=higher_is_better, seed=seed)
                   for a, b in PAIRS if a in values and b in values}
    spreads = [s for s in (spread_pct(values[r]) for r in roles) if s is not None]
    noise = max(spreads) if spreads else None
    noise_text = f"{noise:.1f}%" if noise is not None else "unknown"
    conf = f"{100 * (1 - plan.alpha_per_test):.1f}% CI"
    out: dict[str, Any] = {"comparisons": comparisons, "noise_pct": noise,
                           "runs": {r: len(values[r]) for r in roles}, "confidence_note": conf}
    if len(roles) < 2:
        only = roles[0] if roles else None
        out.update(kind="inconclusive", emit=only, decided=True,
                   text="inconclusive: only one config was measured, nothing to compare")
        return out
    candidate = "tuned" if "tuned" in values else "rules"
    ref = "rules" if candidate == "tuned" and "rules" in values else "default"
    main = comparisons[f"{candidate}_vs_{ref}"]
    rd = comparisons.get("rules_vs_default") if ref == "rules" else None
    keep = "default" if rd is not None and rd["decision"] == "worse" else ref
    if main["decision"] == "better":
        out.update(kind="better", emit=candidate, decided=True,
                   text=f"{_label(candidate)} is better by {_by(main)} than {_label(ref)}")
    elif main["decision"] == "worse":
        out.update(kind="worse", emit=keep, decided=rd is None or rd["decision"] != "none",
                   text=f"{_label(candidate)} is worse by {_by(main)} than {_label(ref)}: "
                   f"keep {KEEP[keep]}")
    elif _within(main):
        out.update(kind="no-difference", emit=keep, decided=False,
                   text=f"no significant difference: keep {KEEP[keep]} ({_label(candidate)} vs "
                   f"{_label(ref)} {_ci(main)})")
    else:
        n = min(len(values[candidate]), len(values[ref]))
        need = next(k for k in range(2, 64) if min_p_value(k) <= plan.alpha_per_test)
        why = (f": {n} runs per config can never reach significance at this level, "
               f"{need} can" if n < need else "")
        out.update(kind="inconclusive", emit=keep, decided=False,
                   text=f"inconclusive: noise {noise_text}, run longer{why} ({_label(candidate)}"
                   f" vs {_label(ref)} {_ci(main)}); keeping {KEEP[keep]}")
    notes = []
    if rd is not None:
        if rd["decision"] == "better":
            notes.append(f"rules-only beats server defaults by {_by(rd)}")
        elif rd["decision"] == "worse":
            notes.append(f"rules-only is worse than server defaults by {_by(rd)}: "
                         "the defaults are kept")
        else:
            notes.append(f"rules-only does not beat server defaults significantly ({_ci(rd)})")
    td = comparisons.get("tuned_vs_default")
    if td is not None and ref == "rules":
        notes.append(f"tuned vs server defaults {_ci(td)}"
                     + ("" if td["decision"] == "better" else " (not significant)"))
    out["notes"] = notes
    if out["kind"] in ("no-difference", "inconclusive") and not final:
        out["kind"] = "undecided"
    out["text_full"] = "; ".join([out["text"], *notes]) + f" ({conf}, interleaved runs " + \
        ", ".join(f"{_label(r)} {len(values[r])}" for r in roles) + ")"
    return out


# -- which configs ----------------------------------------------------------------------------
def is_verdict(t: FrozenTrial) -> bool:
    return t.user_attrs.get(ROLE_ATTR) == VERDICT_ROLE


def finalists(study: optuna.Study, slo_ms: float | None) -> dict[str, FrozenTrial]:
    """role -> trial: the best search trial by its single run, and the first measured
    rules-only and defaults trials; only configs within the latency SLO (one over it is never
    emitted)."""

    trials = [t for t in study.get_trials(deepcopy=False) if not is_verdict(t)]
    sign = 1 if study.direction == optuna.study.StudyDirection.MAXIMIZE else -1
    out: dict[str, FrozenTrial] = {}
    search = [t for t in trials if t.user_attrs.get(ROLE_ATTR) == "search" and feasible(t, slo_ms)]
    if search:
        out["tuned"] = max(search, key=lambda t: sign * measured(t))
    for role in ("rules", "default"):
        base = next((t for t in trials if t.user_attrs.get(ROLE_ATTR) == role
                     and measured(t) is not None), None)
        if base is not None and feasible(base, slo_ms):
            out[role] = base
    return out


def finalists_key(fin: dict[str, FrozenTrial]) -> str:
    return ",".join(f"{r}={fin[r].number}" for r in ROLES if r in fin)


def values_of(runs: dict[str, list[dict]], fin: dict[str, FrozenTrial], metric: str
              ) -> dict[str, list[float]]:
    return {r: [float(x[metric]) for x in runs.get(str(t.number), [])
                if x.get("ok") and x.get(metric) is not None] for r, t in fin.items()}


# -- one worker measures -----------------------------------------------------------------------
def _new_claim(study: optuna.Study, key: str) -> int:
    """A RUNNING verdict trial created in the storage (never WAITING: ask() must not pop it)."""
    template = optuna.trial.create_trial(
        state=TrialState.RUNNING, user_attrs={ROLE_ATTR: VERDICT_ROLE, VERDICT_FOR_ATTR: key})
    return study._storage.create_new_trial(study._study_id, template_trial=template)


def _claims(study: optuna.Study, key: str) -> list[FrozenTrial]:
    return sorted((t for t in study.get_trials(deepcopy=False) if is_verdict(t)
                   and t.user_attrs.get(VERDICT_FOR_ATTR) == key
                   and t.state in (TrialState.RUNNING, TrialState.COMPLETE)),
                  key=lambda t: t.number)


def _stored(study: optuna.Study, key: str) -> dict[str, Any] | None:
    v = study.user_attrs.get(VERDICT_ATTR)
    return v if v and v.get("finalists") == key else None


def _fail_stale(study: optuna.Study) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


def claim(study: optuna.Study, key: str, *, poll_s: float = POLL_S) -> int | None:
    """This worker's claim trial id when it won the final phase; None when the verdict is
    (now) stored by another worker."""
    storage = study._storage
    beats = getattr(storage, "get_heartbeat_interval", lambda: None)() is not None
    while _stored(study, key) is None:
        mine = _new_claim(study, key)
        winner = _claims(study, key)[0]
        if winner._trial_id == mine:
            return mine
        storage.set_trial_user_attr(mine, SURPLUS_ATTR, f"verdict claimed by trial "
                                                        f"{winner.number}")
        storage.set_trial_state_values(mine, TrialState.PRUNED)
        if not beats:
            return None  # without heartbeats a dead owner cannot be told from a slow one
        while True:  # wait for the winner (its heartbeat stops if its worker dies)
            _fail_stale(study)
            state = storage.get_trial(winner._trial_id).state
            if state != TrialState.RUNNING:
                break
            time.sleep(poll_s)
    return None


def remeasure_runs_planned(tuner: Tuner) -> int:
    fin = finalists(tuner.study, tuner.options.latency_slo_ms)
    return len(fin) * max(0, tuner.options.repeats) if len(fin) >= 2 else 0


def run_final(tuner: Tuner) -> dict[str, Any] | None:
    """Measure the finalists in interleaved rounds until decided; store and return the
    verdict (the stored one when another worker made it)."""

    study, opts = tuner.study, tuner.options
    fin = finalists(study, opts.latency_slo_ms)
    if len(fin) < 2 or opts.repeats < 1:
        return None
    key = finalists_key(fin)
    done = _stored(study, key)
    if done is not None:
        return done
    mine = claim(study, key)
    if mine is None:
        return _stored(study, key)
    metric = METRIC_ATTRS[opts.objective]
    higher = opts.objective == "throughput"
    plan = make_plan(opts.repeats, list(fin))
    store: dict[str, list[dict]] = dict(study.user_attrs.get(REMEASURE_ATTR) or {})
    storage = study._storage
    with Heartbeat(study, mine):
        try:
            verdict = _rounds(tuner, fin, plan, store, metric, higher, CONFIG_ATTR,
                              REMEASURE_ATTR, measurement_attrs)
        except BaseException as e:  # Ctrl-C, no server at all: the next claimer resumes
            storage.set_trial_user_attr(mine, INTERRUPTED_ATTR, f"{type(e).__name__}: {e}"[:300])
            storage.set_trial_state_values(mine, TrialState.FAIL)
            raise
    verdict.update(finalists=key, plan=plan.to_dict(), claim_trial=storage.get_trial(mine).number,
                   trials={r: t.number for r, t in fin.items()}, objective=opts.objective,
                   failures=_run_failures(store, fin))
    emitted = fin.get(verdict.get("emit") or "")
    values = values_of(store, fin, metric)
    median = statistics.median(values[verdict["emit"]]) if emitted is not None and values.get(
        verdict["emit"]) else None
    verdict["value"] = median
    study.set_user_attr(VERDICT_ATTR, verdict)
    _finish_claim(study, mine, emitted, median, verdict)
    return verdict


def _rounds(tuner: Tuner, fin: dict[str, FrozenTrial], plan: Plan, store: dict[str, list[dict]],
            metric: str, higher: bool, config_attr: str, remeasure_attr: str,
            measurement_attrs: Any) -> dict[str, Any]:
    study = tuner.study
    order = [r for r in ROLES if r in fin]
    verdict: dict[str, Any] = {}
    deadline = getattr(tuner, "deadline", None)  # the end of the whole run's --time-budget
    for rnd in range(1, plan.max_rounds + 1):
        for role in order:
            t = fin[role]
            runs = store.setdefault(str(t.number), [])
            if len(runs) >= rnd:
                continue  # measured before an interruption
            if deadline is not None and time.monotonic() > deadline:
                return _out_of_time(store, fin, plan, metric, higher)
            tuner.observer.phase(f"re-measure round {rnd}/{plan.max_rounds}: {_label(role)} "
                                 f"(trial {t.number})")
            cfg = t.user_attrs.get(config_attr) or {}
            m = tuner.evaluator.evaluate(TrialConfig(params=cfg.get("params", {}),
                                                     init_params=cfg.get("init_params", {})))
            runs.append({"ok": m.ok, **measurement_attrs(m), "failure": m.failure,
                         "round": rnd, "role": role})
            study.set_user_attr(remeasure_attr, store)
            tuner.observer.remeasured(rnd, plan.max_rounds, _label(role), t.number,
                                      runs[-1].get(metric) if m.ok else None, m.failure,
                                      metric)
        if rnd in plan.looks:
            verdict = decide(values_of(store, fin, metric), plan,
                             final=rnd == plan.max_rounds, higher_is_better=higher)
            verdict["rounds"] = rnd
            verdict["stopped_early"] = rnd < plan.max_rounds
            if verdict["decided"] and verdict["kind"] != "undecided":
                break
    return verdict


def _out_of_time(store: dict[str, list[dict]], fin: dict[str, FrozenTrial], plan: Plan,
                 metric: str, higher: bool) -> dict[str, Any]:
    """The time budget ended the rounds: decide on the complete rounds, at the planned alpha
    (fewer runs only make the test stricter, never looser)."""
    done = min(len(store.get(str(t.number), [])) for t in fin.values())
    verdict = decide(values_of(store, fin, metric), plan, final=True, higher_is_better=higher)
    note = f" (the time budget ended the re-measurement after {done} rounds)"
    verdict["text"] += note
    verdict["text_full"] = verdict.get("text_full", verdict["text"]) + note
    verdict.update(rounds=done, stopped_early=True, stopped_by="time budget")
    return verdict


def _run_failures(store: dict[str, list[dict]], fin: dict[str, FrozenTrial]) -> list[dict]:
    out = []
    for role, t in fin.items():
        for r in store.get(str(t.number), []):
            if not r.get("ok"):
                out.append({"trial": t.number, "role": role, "round": r.get("round"),
                            "phase": "re-measure",
                            "reason": " ".join(str(r.get("failure") or "no result").split())})
    return out


def _finish_claim(study: optuna.Study, trial_id: int, emitted: FrozenTrial | None,
                  median: float | None, verdict: dict[str, Any]) -> None:
    """The claim trial becomes the verdict trial: the emitted config's params, the repeated
    median as its value, the verdict sentence and every config's runs as user attrs."""
    storage = study._storage
    storage.set_trial_user_attr(trial_id, "verdict", verdict["text"])
    storage.set_trial_user_attr(trial_id, "emitted_role", verdict.get("emit"))
    if emitted is None or median is None:
        if verdict.get("stopped_by"):  # no run at all: not a failure, the budget said stop
            storage.set_trial_state_values(trial_id, TrialState.PRUNED)
            return
        storage.set_trial_user_attr(trial_id, CLAIM_FAILURE_ATTR,
                                    "no successful re-measurement of the emitted config")
        storage.set_trial_state_values(trial_id, TrialState.FAIL)
        return
    storage.set_trial_user_attr(trial_id, "emitted_trial", emitted.number)
    for name, value in emitted.params.items():
        dist = emitted.distributions[name]
        storage.set_trial_param(trial_id, name, dist.to_internal_repr(value), dist)
    storage.set_trial_state_values(trial_id, TrialState.COMPLETE, [float(median)])
