"""The one parametrised runner over every rule's YAML cases (rules/catalog/PMxxx_*.yaml).

A case: ``machine`` (a preset of tests/rules/machines.py or a dict), ``args`` (build_facts
keywords; ``memory_gb``), optional ``config`` for ``check``, and ``expect``:
``fires``, ``settings``/``unsafe`` {knob: value}, ``bounds`` {knob: [lo, hi] | {values: [..]}},
``notes`` [{severity, subject}], ``os_steps`` [substring], ``check`` [{severity, subject}]
(``[]`` = the config passes).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pmem_advisor.rules import combine
from pmem_advisor.rules.facts import build_facts
from pmem_advisor.rules.model import Bound, Note, OsStep, Set, _show
from pmem_advisor.rules.registry import catalog_rules, get_rule
from tests.rules.machines import make_profile

CATALOG = Path(__file__).resolve().parents[2] / "rules" / "catalog"


def _cases():
    for path in sorted(CATALOG.glob("PM*.yaml")):
        data = yaml.safe_load(path.read_text())
        for i, case in enumerate(data["cases"]):
            yield pytest.param(data["rule"], case, id=f"{path.stem[:5]}-{i}-{case['name']}")


def facts_for(case: dict):
    args = dict(case.get("args") or {})
    if "memory_gb" in args:
        args["memory_bytes"] = args.pop("memory_gb") << 30
    args.setdefault("engine", None)
    return build_facts(make_profile(case.get("machine", "pmem")), **args)


def _has(found: list[dict], want: dict) -> bool:
    return any(all(str(v) in str(f.get(k)) for k, v in want.items()) for f in found)


@pytest.mark.parametrize("rule_id,case", list(_cases()))
def test_rule_case(rule_id: str, case: dict) -> None:
    rule = get_rule(rule_id)
    facts = facts_for(case)
    effects = rule.evaluate(facts)
    expect = case["expect"]
    if "fires" in expect:
        assert bool(effects) == expect["fires"], effects
    sets = {e.name: _show(e.value) for e in effects if isinstance(e, Set) and not e.unsafe}
    unsafe = {e.name: _show(e.value) for e in effects if isinstance(e, Set) and e.unsafe}
    for name, value in (expect.get("settings") or {}).items():
        assert str(sets.get(name)).lower() == str(value).lower(), (name, sets)
    for name, value in (expect.get("unsafe") or {}).items():
        assert str(unsafe.get(name)).lower() == str(value).lower(), (name, unsafe)
    # reasons: {knob: text} - the text appears in the reason of one of the knob's Set effects,
    # so a reason that says something untrue of its case (PM018's "lowest-risk") is caught.
    for name, text in (expect.get("reasons") or {}).items():
        whys = [e.reason for e in effects if isinstance(e, Set) and e.name == name]
        assert any(text in w for w in whys), (name, text, whys)
    bounds = {e.name: e for e in effects if isinstance(e, Bound)}
    for name, want in (expect.get("bounds") or {}).items():
        b = bounds[name]
        if isinstance(want, dict):
            assert [_show(v) for v in b.values] == [str(v) for v in want["values"]]
        else:
            assert [_show(b.lo), _show(b.hi)] == [str(v) for v in want]
    notes = [e.__dict__ for e in effects if isinstance(e, Note)]
    for want in expect.get("notes") or []:
        assert _has(notes, want), (want, notes)
    steps = [e.command for e in effects if isinstance(e, OsStep)]
    for want in expect.get("os_steps") or []:
        assert any(want in s for s in steps), (want, steps)
    if "check" in expect:
        found = combine.check(facts, case.get("config") or {}, rules=(rule,))
        got = [f.to_dict() for f in found if f.rule == rule_id]
        if not expect["check"]:
            assert got == [], got
        for want in expect["check"]:
            assert _has(got, want), (want, got)


def test_every_rule_has_pass_and_fail_cases() -> None:
    for rule in catalog_rules():
        files = list(CATALOG.glob(f"{rule.id}_*.yaml"))
        assert len(files) == 1, f"{rule.id} needs one YAML file beside it"
        cases = yaml.safe_load(files[0].read_text())["cases"]
        fires = [c["expect"].get("fires") for c in cases]
        assert True in fires and False in fires, f"{rule.id}: needs a firing and a quiet case"
