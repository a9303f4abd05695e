"""CK001 reports any value the knob catalog classes as a durability risk, also for knobs it
does not word itself (the catalog is the one source of truth for risky values)."""

from __future__ import annotations

from dataclasses import replace

from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.rules.checks import CheckInput, get_check
from pmem_advisor.rules.facts import build_facts
from tests.rules.machines import make_profile


class _Catalog:
    """The real PostgreSQL 16 catalog plus one made-up risky knob."""

    def __init__(self) -> None:
        self.real = load_catalog("postgres", None, "16")
        self.title, self.version = self.real.title, self.real.version
        self.extra = replace(self.real.get("fsync"), name="new_risky_knob",
                             safety_reason="made-up: loses data")

    def get(self, name: str):
        return self.extra if name == "new_risky_knob" else self.real.get(name)

    def find(self, name: str):
        return self.extra if name == "new_risky_knob" else self.real.find(name)


def test_a_risky_value_of_an_unworded_knob_fails_with_the_catalog_reason():
    facts = build_facts(make_profile("ssd"), engine="postgres", version="16")
    inp = CheckInput(facts=facts, settings={"new_risky_knob": "off"}, source="config",
                     catalog=_Catalog())
    found = get_check("CK001").run(inp)
    assert [(f.severity, f.subject) for f in found] == [("fail", "new_risky_knob")]
    assert "made-up: loses data" in found[0].message and found[0].fix.endswith("= on")
    inp.settings["new_risky_knob"] = "on"
    assert get_check("CK001").run(inp) == []
