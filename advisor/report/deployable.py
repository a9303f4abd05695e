"""The gate every emitted config passes before it is written: our own `check`.

A tuned file is pasted into production, so it must pass what `pmem-advisor check` would say
about it on the machine it was tuned for: each value legal for the server (catalog type,
range, enum), no durability risk without --allow-unsafe, and no ``fail`` finding of the rules
(rules.check with the study's probed profile). A setting that fails is repaired by leaving it
out (the server default applies), and the file says which and why: we never write a config
our own check would refuse. A ``fail`` that check also reports with no setting at all (data on
tmpfs, say) is the host's, not the file's: it is said, not repaired.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pmem_advisor.errors import AdvisorError


@dataclass
class Gate:
    settings: dict[str, Any]  # what may be written
    removed: dict[str, str] = field(default_factory=dict)  # knob -> why it was left out
    findings: list[dict[str, Any]] = field(default_factory=list)  # check's findings (all)
    checked_with_rules: bool = False  # False: no profile stored, only the catalog checks ran
    unresolved: list[str] = field(default_factory=list)  # fails not caused by a set knob

    def notes(self) -> list[str]:
        out = [f"left out {name}: {why}" for name, why in sorted(self.removed.items())]
        out += [f"check also reports (not caused by this file): {u}" for u in self.unresolved]
        if not self.checked_with_rules:
            out.append("checked against the knob catalog only (no probed profile in the "
                       "study): run `pmem-advisor check --config FILE` on the target host")
        return out


def _catalog_check(settings: dict[str, Any], catalog: Any, allow_unsafe: bool
                   ) -> tuple[dict[str, Any], dict[str, str]]:
    kept, removed = {}, {}
    for name, value in settings.items():
        if catalog is None or name not in catalog:
            kept[name] = value
            continue
        knob = catalog.get(name)
        try:
            value = knob.coerce(value)
        except AdvisorError as e:
            removed[name] = f"not a legal value for this server ({e})"
            continue
        if not allow_unsafe and knob.safety == "durability-risk" and knob.is_risky(value):
            removed[name] = (f"{knob.render(value)} risks durability "
                             f"({knob.safety_reason or 'data loss on a crash'}); "
                             "tune with --allow-unsafe to accept it")
            continue
        kept[name] = value
    return kept, removed


def _rules_check(settings: dict[str, Any], catalog: Any, profile: dict, meta: dict
                 ) -> list[Any]:
    """What `pmem-advisor check --config FILE` reports on this file: the papers' rules and
    the config checks (rules/checks), on the facts of the probed machine."""
    from pmem_advisor.rules import build_facts, check
    from pmem_advisor.rules.checks import build_input, run_checks

    target = meta.get("target") or {}  # the production target `tune` sized for
    memory = meta.get("memory_bytes") or target.get("memory_bytes")
    facts = build_facts(profile, engine=meta.get("engine"), flavour=meta.get("flavour"),
                        version=meta.get("version"), data_dir=meta.get("data_dir"),
                        wal_dir=meta.get("wal_dir"), memory_bytes=memory,
                        clients=target.get("connections") or meta.get("clients"),
                        allow_unsafe=bool(meta.get("allow_unsafe")))
    text = {n: (catalog.get(n).render(v) if catalog is not None and n in catalog else str(v))
            for n, v in settings.items()}
    inp, rule_facts = build_input(facts, text, source="config", memory_bytes=memory,
                                  worst_case_is_limit=True)
    return run_checks(inp, check(rule_facts, text, catalog=inp.catalog or catalog))


def gate(settings: dict[str, Any], *, catalog: Any, profile: dict | None, meta: dict
         ) -> Gate:
    """The settings that pass our check (values in base units), and why others were left out.
    Each ``fail`` finding this file causes removes one knob, then check runs again."""
    allow_unsafe = bool(meta.get("allow_unsafe"))
    kept, removed = _catalog_check(settings, catalog, allow_unsafe)
    result = Gate(settings=kept, removed=removed)
    if not profile:
        return result

    def fails(values: dict[str, Any]) -> dict[tuple[str, str], Any]:
        return {(f.rule, f.subject): f for f in _rules_check(values, catalog, profile, meta)
                if f.severity == "fail"}

    try:
        host = fails({})  # what check says with no setting at all: not this file's doing
        result.unresolved = [f"{f.rule} {f.subject}: {f.message}" for f in host.values()]
        while True:
            caused = {k: f for k, f in fails(result.settings).items() if k not in host}
            if not caused:
                break
            (rule, subject), f = next(iter(caused.items()))
            # the knob the finding names, else the first whose removal clears it (a memory
            # total is a sum of knobs); removing every setting always clears it (see host)
            culprit = subject if subject in result.settings else next(
                (n for n in result.settings if (rule, subject) not in
                 fails({k: v for k, v in result.settings.items() if k != n})),
                next(iter(result.settings)))
            result.removed[culprit] = f"check {rule}: {f.message}"
            del result.settings[culprit]
        result.findings = [f.to_dict() for f in _rules_check(result.settings, catalog,
                                                             profile, meta)]
        result.checked_with_rules = True
    except AdvisorError as e:  # a profile the rules cannot read: say so, keep the catalog gate
        result.removed.setdefault("(rules check)", f"could not run: {e}")
    return result
