"""Evaluate every rule, merge the effects, resolve conflicts, keep durability risks out.

- Conflicts on one knob (or one OS-step key) go to the highest declared priority; the loser
  is recorded in ``Recommendation.conflicts``. Equal priorities: the later rule id wins (a
  paper rule refines the one before it), and that is recorded too.
- Safety beats speed: a setting is a durability risk when its rule says so, or when the
  catalog lists its value among the knob's ``risky_values`` (or classes the knob
  ``durability-risk`` and the value is not the default). Risky settings only go into the
  config with ``allow_unsafe``, with a loud reason and the paper's expected gain; otherwise
  they are listed in ``withheld`` and the next safe candidate (if any) wins.
- Settings on knobs the target flavour/version lacks are dropped with a note, so the emitted
  config always starts.
"""

from __future__ import annotations

from typing import Any

from pmem_advisor.engines import api
from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.knobs.catalog import catalog_path
from pmem_advisor.rules.facts import Facts, bind_to_node
from pmem_advisor.rules.fit import fit_bounds, fit_memory
from pmem_advisor.rules.model import (
    Bound,
    Bytes,
    Finding,
    Note,
    OsStep,
    Prior,
    Rule,
    Seconds,
    Set,
    human_bytes,
    severity_rank,
)
from pmem_advisor.rules.registry import all_rules
from pmem_advisor.rules.result import (
    Conflict,
    Recommendation,
    RecommendedSetting,
    Step,
    Withheld,
    medium_notes,
)

UNSAFE_BANNER = "UNSAFE, durability risk"


def load_catalog_for(facts: Facts):
    """The knob catalog for the facts' engine, flavour and version, or None when there is no
    engine or the engine has no knob catalog (advice only: values are then rendered as
    given)."""
    if facts.engine is None:
        return None
    engine = api.get_engine(facts.engine)
    if catalog_path(engine.resolve_flavour(facts.flavour, facts.version)) is None:
        return None
    return engine.catalog(facts.flavour, facts.version)


class KnobView:
    """Converts rule values to a knob's base unit and renders them, with or without catalog."""

    def __init__(self, catalog, engine: str | None) -> None:
        self.catalog = catalog
        self.engine = engine

    def knob(self, name: str):
        if self.catalog is None:
            return None
        return self.catalog.get(name)  # UnknownKnobError when the flavour/version lacks it

    def to_base(self, name: str, value: Any) -> Any:
        """The value in the knob's base unit, clamped to its range; UsageError when illegal."""
        knob = self.knob(name)
        if knob is None:
            return value
        from pmem_advisor.knobs.units import BASE_BYTES, BASE_US

        unit = getattr(knob, "unit", None)
        if isinstance(value, Bytes):
            n = value.n
            if n >= 64 << 20:  # whole megabytes read better and change nothing that matters
                n = n // (1 << 20) * (1 << 20)
            value = max(1, round(n / BASE_BYTES.get(unit or "B", 1)))
        elif isinstance(value, Seconds):
            value = max(1, round(value.n * 1_000_000 / BASE_US.get(unit or "s", 1_000_000)))
        if isinstance(value, int | float) and not isinstance(value, bool):
            if knob.min is not None and value < knob.min:
                value = type(value)(knob.min)
            if knob.max is not None and value > knob.max:
                value = type(value)(knob.max)
        return knob.coerce(value)

    def render(self, name: str, base: Any) -> str:
        knob = self.knob(name)
        if knob is not None:
            return str(knob.render(base))
        if isinstance(base, Bytes):
            text = human_bytes(base.n)
            return text.replace("B", "").upper() if self.engine == "mysql" else text
        if isinstance(base, Seconds):
            return f"{base.n:g}s" if self.engine == "postgres" else str(int(base.n))
        if isinstance(base, bool):
            return "on" if base else "off"
        return str(base)

    def default(self, name: str) -> str | None:
        knob = self.knob(name)
        if knob is None or getattr(knob, "default", None) is None:
            return None
        try:
            return str(knob.render(knob.default))
        except Exception:  # a default the renderer cannot show (e.g. -1 "auto")
            return str(knob.default)

    def risky(self, name: str, base: Any) -> tuple[bool, str]:
        """Whether the catalog classes this value as a durability risk, and why."""
        knob = self.knob(name)
        if knob is None:
            return False, ""
        return knob.is_risky(base), knob.safety_reason or "durability risk"

    def same(self, name: str, config_value: Any, wanted: Any) -> bool:
        """Compare a config file's value with a rule's value, in base units when possible."""
        knob = self.knob(name)
        if knob is None:
            return _norm(config_value) == _norm(wanted)
        try:
            return knob.same(knob.coerce(config_value), self.to_base(name, wanted))
        except UsageError:
            return _norm(config_value) == _norm(wanted)


_TRUE = {"on", "true", "yes", "1"}
_FALSE = {"off", "false", "no", "0"}


def _norm(v: Any) -> Any:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        s = v.strip().strip("'\"").lower()
        if s in _TRUE:
            return "on"
        if s in _FALSE:
            return "off"
        try:
            return float(s)
        except ValueError:
            return s
    return v


# ---------------------------------------------------------------- evaluation
def _rules_for(facts: Facts) -> tuple[Rule, ...]:
    """The rules that can apply to ``facts``: no other engine's baseline is loaded."""
    return all_rules(facts.engine) if facts.engine else all_rules()


def _evaluate(facts: Facts, rules: tuple[Rule, ...] | None = None):
    out = []
    for rule in rules if rules is not None else _rules_for(facts):
        effects = rule.evaluate(facts)
        if effects:
            out.append((rule, effects))
    return out


def recommend(facts: Facts, *, catalog=None, rules: tuple[Rule, ...] | None = None
              ) -> Recommendation:
    """Every rule's effects on ``facts`` merged into one recommendation."""
    view = KnobView(catalog if catalog is not None else load_catalog_for(facts), facts.engine)
    fired = _evaluate(facts, rules)
    node = _binding(fired)
    if node is not None and facts.bound_node != node:
        # a rule binds the server to one node: size every memory and CPU knob from that node
        facts = bind_to_node(facts, node, f"numactl --membind={node}")
        fired = _evaluate(facts, rules)
    rec = Recommendation(facts=facts)
    rec.fired = [r.id for r, _ in fired]
    _merge_settings(rec, fired, view, facts.allow_unsafe)
    _merge_bounds_priors(rec, fired, view)
    _merge_steps(rec, fired)
    rec.findings = _findings(fired)
    rec.notes.extend(facts.notes)
    rec.notes.extend(medium_notes(facts))
    if facts.engine is not None:

        rec.memory = fit_memory(rec, view)
        if rec.memory is not None:
            fit_bounds(rec, view)
        _finalize(rec, fired)
    if facts.emulated:
        rec.notes.append("tmpfs paths stand in for persistent memory (emulated PMEM): "
                         "the PMEM rules fired for them; tmpfs is not durable")
    return rec


def _finalize(rec: Recommendation, fired) -> None:
    """Let each fired rule recompute its OS steps from the final settings (Rule.finalize)."""
    final = {s.name: s for s in rec.settings}
    for rule, _effects in fired:
        steps = rule.finalize(rec.facts, final)
        if steps is None:
            continue
        rec.os_steps = [s for s in rec.os_steps if s.rule != rule.id]
        rec.os_steps += [Step(rule.id, list(rule.insights), e.command, e.reason, e.key,
                              e.destructive, e.config) for e in steps]


def _binding(fired) -> int | None:
    """The NUMA node the winning numa-policy step binds to (None: no binding)."""
    best = None
    for rule, effects in fired:
        for e in effects:
            if isinstance(e, OsStep) and e.key == "numa-policy":
                if best is None or (rule.priority, rule.id) > (best[0].priority, best[0].id):
                    best = (rule, e)
    return best[1].binds_node if best is not None else None


def _merge_settings(rec: Recommendation, fired, view: KnobView, allow_unsafe: bool) -> None:
    candidates: dict[str, list[tuple[Rule, Set]]] = {}
    for rule, effects in fired:
        for e in effects:
            if isinstance(e, Set):
                candidates.setdefault(e.name, []).append((rule, e))
    for name, cands in candidates.items():
        try:
            view.knob(name)
        except UnknownKnobError:
            rules = ", ".join(sorted({r.id for r, _ in cands}))
            rec.notes.append(f"{name} is not a knob of {rec.facts.flavour} "
                             f"{rec.facts.version or ''}".rstrip() + f"; skipped ({rules})")
            continue
        # highest priority first; among equals the later rule id refines the earlier one
        cands.sort(key=lambda rc: (rc[0].priority, rc[0].id), reverse=True)
        winner: RecommendedSetting | None = None
        for rule, e in cands:
            try:
                base = view.to_base(name, e.value)
            except UsageError as err:  # e.g. a value this build/version does not accept
                rec.notes.append(f"{rule.id}: {err}; skipped")
                continue
            text = view.render(name, base)
            # the rule's own verdict can only add risk, never clear the catalog's
            cat_risky, why = view.risky(name, base)
            risky = bool(e.unsafe) or cat_risky
            if risky and not allow_unsafe:
                gain = f" Expected gain: {e.gain}." if e.gain else ""
                rec.withheld.append(Withheld(
                    name, text, rule.id, list(rule.insights),
                    f"{e.reason}.{gain} Withheld: {why or 'durability risk'}; "
                    "pass --allow-unsafe to apply it"))
                continue
            if winner is None:
                reason = e.reason
                if risky:
                    gain = f" Expected gain: {e.gain}." if e.gain else ""
                    reason = (f"{UNSAFE_BANNER} ({why or 'see the rule'}), applied because "
                              f"--allow-unsafe was given: {e.reason}.{gain}")
                winner = RecommendedSetting(name, base, text, view.default(name), rule.id,
                                            list(rule.insights), reason, rule.source,
                                            rule.priority, risky)
                continue
            if text != winner.text:
                rec.conflicts.append(Conflict(
                    name, winner.rule, rule.id, text,
                    f"priority {winner.priority} beats {rule.priority}"
                    if winner.priority != rule.priority else "same priority: later rule id wins"))
        if winner is not None:
            rec.settings.append(winner)
    rec.settings.sort(key=lambda s: s.name)


def _merge_bounds_priors(rec: Recommendation, fired, view: KnobView) -> None:
    best: dict[str, tuple[int, str, Bound]] = {}
    order: list[tuple[int, str]] = []
    for rule, effects in fired:
        for e in effects:
            if isinstance(e, Bound):
                prev = best.get(e.name)
                if prev is None or (rule.priority, rule.id) > (prev[0], prev[1]):
                    if prev is not None:
                        rec.conflicts.append(Conflict(e.name, rule.id, prev[1], "bounds",
                                                      "higher priority bound wins"))
                    best[e.name] = (rule.priority, rule.id, e)
            elif isinstance(e, Prior):
                try:
                    view.knob(e.name)
                except UnknownKnobError:
                    continue
                rec.priors[e.name] = view.to_base(e.name, e.value)
    for name, (prio, _rid, b) in best.items():
        try:
            view.knob(name)
        except UnknownKnobError:
            continue
        if b.values is not None:
            vals = []
            for v in b.values:
                try:
                    vals.append(view.to_base(name, v))
                except UsageError:
                    continue  # a value this flavour/version lacks
            rec.bounds[name] = list(dict.fromkeys(vals))
            if len(rec.bounds[name]) < 2:  # one value pins the knob: nothing to search first
                continue
        else:
            rec.bounds[name] = (view.to_base(name, b.lo) if b.lo is not None else None,
                                view.to_base(name, b.hi) if b.hi is not None else None)
        order.append((prio, name))
    for s in rec.settings:  # the rules-only trial starts from the settings inside the bounds
        if s.name in rec.bounds and s.name not in rec.priors and _inside(rec.bounds[s.name],
                                                                         s.value):
            rec.priors[s.name] = s.value
    rec.important = [n for _, n in sorted(order, key=lambda pn: (-pn[0], pn[1]))]


def _inside(bound, value) -> bool:
    if isinstance(bound, list):
        return _norm(value) in [_norm(v) for v in bound]
    lo, hi = bound
    try:
        return (lo is None or value >= lo) and (hi is None or value <= hi)
    except TypeError:
        return False


def _merge_steps(rec: Recommendation, fired) -> None:
    keyed: dict[str, tuple[Rule, OsStep]] = {}
    for rule, effects in fired:
        for e in effects:
            if not isinstance(e, OsStep):
                continue
            if not e.key:
                rec.os_steps.append(Step(rule.id, list(rule.insights), e.command, e.reason,
                                         destructive=e.destructive, config=e.config))
                continue
            prev = keyed.get(e.key)
            if prev is None or (rule.priority, rule.id) > (prev[0].priority, prev[0].id):
                if prev is not None:
                    rec.conflicts.append(Conflict(e.key, rule.id, prev[0].id, prev[1].command,
                                                  "higher priority OS step wins"))
                keyed[e.key] = (rule, e)
            else:
                rec.conflicts.append(Conflict(e.key, prev[0].id, rule.id, e.command,
                                              "higher priority OS step wins"))
    for key, (rule, e) in keyed.items():
        rec.os_steps.append(Step(rule.id, list(rule.insights), e.command, e.reason, key,
                                 e.destructive, e.config))


def _findings(fired) -> list[Finding]:
    found = [rule.finding(e.severity, e.subject, e.message, e.fix)
             for rule, effects in fired for e in effects if isinstance(e, Note)]
    return sort_findings(found)


def sort_findings(found: list[Finding]) -> list[Finding]:
    return sorted(found, key=lambda f: (-severity_rank(f.severity), f.rule, f.subject))


def check(facts: Facts, config: dict | None = None, *, catalog=None,
          rules: tuple[Rule, ...] | None = None) -> list[Finding]:
    """Findings for the host (and the engine, when the facts name one), and for an existing
    config (name -> value text or base value) when given."""
    view = KnobView(catalog if catalog is not None else load_catalog_for(facts), facts.engine)
    fired = _evaluate(facts, rules)
    found = _findings(fired)
    if config is not None:
        cfg = {str(k).lower(): v for k, v in config.items()}
        effects_of = {r.id: effects for r, effects in fired}
        # every applicable rule sees the config; one that did not fire gets no effects and
        # may still check (e.g. "full_page_writes=off on DAX" needs no recommendation)
        for rule in rules if rules is not None else _rules_for(facts):
            if rule.applies_to(facts):
                found.extend(rule.check_config(facts, cfg, effects_of.get(rule.id, []),
                                               view.same))
    return sort_findings(_dedupe(found))


def _dedupe(found: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in found:
        key = (f.rule, f.severity, f.subject, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
