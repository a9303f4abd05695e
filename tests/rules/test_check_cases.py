"""The one parametrised runner over every check's YAML cases (rules/checks/CKnnn_*.yaml).

A case: ``machine`` (a preset of tests/rules/machines.py, a dict, or ``golden:NAME`` for a
captured machine of tests/probes/golden), ``args`` (build_facts keywords; ``memory_gb``),
``profile`` {key: value or {subkey: value}} overrides, ``settings`` {knob: text} with
``source`` (config by default when settings are given),
``where`` {knob: file:line} (the config's own lines), ``status`` (live counters), ``today``
(ISO date), and ``expect``: a list of
{severity, subject, message} substrings every one of which must match a finding of this check,
``[]`` for "no finding"; ``absent`` lists findings that must not be there.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
import yaml

from pmem_advisor.rules.checks import all_checks, build_input, get_check
from pmem_advisor.rules.facts import build_facts
from tests.rules.machines import make_profile

CHECKS = Path(__file__).resolve().parents[2] / "rules" / "checks"
GOLDEN = Path(__file__).resolve().parents[1] / "probes" / "golden"


def _cases():
    for path in sorted(CHECKS.glob("CK*.yaml")):
        data = yaml.safe_load(path.read_text())
        for i, case in enumerate(data["cases"]):
            yield pytest.param(data["check"], case, id=f"{path.stem[:5]}-{i}-{case['name']}")


def profile_for(machine) -> dict:
    if isinstance(machine, str) and machine.startswith("golden:"):
        return json.loads((GOLDEN / f"{machine[7:]}.json").read_text())
    return make_profile(machine)


def input_for(case: dict):
    args = dict(case.get("args") or {})
    if "memory_gb" in args:
        args["memory_bytes"] = args.pop("memory_gb") << 30
    args.setdefault("engine", None)
    profile = profile_for(case.get("machine", "pmem"))
    for key, over in (case.get("profile") or {}).items():  # second-level overrides
        base = profile.get(key)
        profile[key] = {**base, **over} if isinstance(over, dict) and base else over
    facts = build_facts(profile, **args)
    settings = case.get("settings") or {}
    today = case.get("today")
    if isinstance(today, str):
        today = datetime.date.fromisoformat(today)
    inp, _ = build_input(facts, settings, source=case.get("source", "config" if settings
                                                          else "none"),
                         status=case.get("status"), today=today, where=case.get("where"),
                         server_names=frozenset(case["server_names"])
                         if "server_names" in case else None,
                         nodes=case.get("nodes"), memory_bytes=args.get("memory_bytes"),
                         target=args.get("target", False))
    return inp


def _has(found: list[dict], want: dict) -> bool:
    return any(all(str(v) in str(f.get(k)) for k, v in want.items()) for f in found)


@pytest.mark.parametrize("check_id,case", list(_cases()))
def test_check_case(check_id: str, case: dict) -> None:
    check = get_check(check_id)
    inp = input_for(case)
    found = [f.to_dict() for f in check.run(inp)] if check.applies_to(inp) else []
    if not case["expect"]:
        assert found == [], found
    for want in case["expect"]:
        assert _has(found, want), (want, found)
    for unwanted in case.get("absent") or []:
        assert not _has(found, unwanted), (unwanted, found)


def test_every_check_has_failing_and_quiet_cases() -> None:
    for check in all_checks():
        files = list(CHECKS.glob(f"{check.id}_*.yaml"))
        assert len(files) == 1, f"{check.id} needs one YAML file beside it"
        cases = yaml.safe_load(files[0].read_text())["cases"]
        assert any(c["expect"] for c in cases), f"{check.id}: needs a case that finds something"
        assert any(c["expect"] == [] for c in cases), f"{check.id}: needs a quiet case"
        assert check.__doc__ and "Anti-pattern" in check.__doc__ or \
            "Anti-pattern" in (__import__(type(check).__module__, fromlist=["x"]).__doc__ or "")
