"""What ``recommend`` returns: the settings, the withheld ones, the OS steps, the conflicts
between rules, and the whole recommendation (fit to the budget by rules/fit.py, combined by
rules/combine.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pmem_advisor.rules.facts import Facts
from pmem_advisor.rules.memory import MemoryEstimate, gib
from pmem_advisor.rules.model import Finding


@dataclass
class RecommendedSetting:
    name: str
    value: Any  # in the knob's base unit when the catalog is known
    text: str  # as written in the config file
    default: str | None
    rule: str
    insights: list[str]
    reason: str
    source: str
    priority: int
    unsafe: bool = False

    def to_dict(self) -> dict:
        return {"name": self.name, "value": self.text, "default": self.default,
                "rule": self.rule, "insights": self.insights, "reason": self.reason,
                "source": self.source}


@dataclass
class Withheld:
    name: str
    text: str
    rule: str
    insights: list[str]
    reason: str

    def to_dict(self) -> dict:
        return {"name": self.name, "value": self.text, "rule": self.rule,
                "insights": self.insights, "reason": self.reason}


@dataclass
class Step:
    rule: str
    insights: list[str]
    command: str
    reason: str
    key: str = ""
    destructive: bool = False
    config: tuple = ()  # rules.model.ConfigLine: the engine's emitter writes them

    def to_dict(self) -> dict:
        return {"rule": self.rule, "insights": self.insights, "command": self.command,
                "reason": self.reason, "destructive": self.destructive}


@dataclass
class Conflict:
    subject: str  # a knob name or an OS-step key
    winner: str
    loser: str
    loser_value: str
    why: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Recommendation:
    facts: Facts
    settings: list[RecommendedSetting] = field(default_factory=list)
    withheld: list[Withheld] = field(default_factory=list)
    os_steps: list[Step] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    bounds: dict[str, tuple | list] = field(default_factory=dict)
    priors: dict[str, Any] = field(default_factory=dict)
    important: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fired: list[str] = field(default_factory=list)
    memory: MemoryEstimate | None = None  # worst case of the settings (rules/memory.py)

    @property
    def emulated(self) -> bool:
        return self.facts.emulated

    def target(self) -> dict:
        f = self.facts
        return {"engine": f.engine, "flavour": f.flavour, "version": f.version,
                "version_note": None if f.version else
                "no --version and no installed server: each knob as in its newest release",
                "workload": f.workload, "memory_bytes": f.memory_bytes,
                "memory_source": f.memory_source, "cpus": f.cpus,
                "bound_node": f.bound_node,
                "data_medium": f.data.medium if f.data is not None else None,
                "data_medium_source": f.data.medium_source if f.data is not None else None,
                "wal_medium": f.wal.medium if f.wal is not None else None}

    def memory_line(self) -> str | None:
        """ "worst-case memory: ... of a 24.0 GiB budget" for the table and config header."""
        if self.memory is None:
            return None
        where = (f"NUMA node {self.facts.bound_node}'s" if self.facts.bound_node is not None
                 else "the")
        from pmem_advisor.rules.memory import BUDGET_SHARE

        return (f"{self.memory.describe()}, fitted to {BUDGET_SHARE:.0%} of {where} "
                f"{gib(self.facts.memory_bytes)} budget ({self.facts.memory_source}): the rest "
                "is for the OS, WAL/binlog page cache and monitoring")

    def header_notes(self) -> list[str]:
        """Lines every emitted config carries in its header (besides OS steps/withheld)."""
        line = self.memory_line()
        return ([line] if line else []) + medium_notes(self.facts)

    def setting(self, name: str) -> RecommendedSetting | None:
        return next((s for s in self.settings if s.name == name), None)

    def to_json(self) -> dict:
        return {
            "settings": [s.to_dict() for s in self.settings],
            "withheld": [w.to_dict() for w in self.withheld],
            "os_steps": [s.to_dict() for s in self.os_steps],
            "findings": [f.to_dict() for f in self.findings],
            "conflicts": [c.to_dict() for c in self.conflicts],
            "notes": list(self.notes),
            "emulated_pmem": self.emulated,
            "target": self.target(),
            "memory": (self.memory.to_dict() | {"budget_bytes": self.facts.memory_bytes,
                                                "summary": self.memory_line()}
                       if self.memory is not None else None),
        }


# ---------------------------------------------------------------- catalog access


def medium_notes(facts: Facts) -> list[str]:
    """The probe's sentence on how each path's medium was found (measured, kernel, unverified):
    every output carries it, since the I/O knobs follow that class."""
    out = []
    for p in facts.placed:
        if p.medium_note and (p.role == "data" or p.medium_note != facts.data.medium_note):
            out.append(f"{p.role} {p.path}: {p.medium_note}")
        if p.medium_source == "unverified":
            out.append(f"{p.role} {p.path}: the medium class {p.medium} is not verified (the "
                       "kernel's flag on a virtual disk): measure it (probe) or pass --medium")
    return out
