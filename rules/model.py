"""What a rule is and what it can do: set, bound or seed a knob, report a finding, add an OS step.

A rule file in ``rules/catalog/`` defines one subclass of :class:`Rule` and exposes an
instance as ``RULE``. The engine (``engine.py``) evaluates every rule and merges the effects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from pmem_advisor.rules.facts import Facts

SEVERITIES = ("info", "warn", "fail")

# Priorities: the baseline yields to every paper rule, safety rules beat speed rules.
PRIORITY_BASELINE = 10
PRIORITY_SPEED = 50
PRIORITY_PLACEMENT = 60
PRIORITY_SAFETY = 90


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity)


# ---- quantities the engine converts into each knob's base unit through the catalog ----
@dataclass(frozen=True)
class Bytes:
    """A size in bytes; rendered in the knob's own unit (8kB pages, kB, MB, bytes)."""

    n: int


@dataclass(frozen=True)
class Seconds:
    """A duration in seconds; rendered in the knob's own unit (s, ms, min)."""

    n: float


# ---- effects a rule returns ----
@dataclass(frozen=True)
class Set:
    """Set a knob. ``unsafe=True`` marks a durability risk; values the catalog lists as
    risky are risky whatever the rule says (a rule can add risk, never clear it)."""

    name: str
    value: Any
    reason: str
    unsafe: bool | None = None
    gain: str | None = None  # the paper's expected gain, printed next to an unsafe setting


@dataclass(frozen=True)
class Bound:
    """Bound a knob's search range for the tuner: ``lo``/``hi`` or a list of ``values``."""

    name: str
    lo: Any = None
    hi: Any = None
    values: tuple | None = None
    reason: str = ""


@dataclass(frozen=True)
class Prior:
    """A starting value for the tuner (trial 1 uses it)."""

    name: str
    value: Any
    reason: str = ""


@dataclass(frozen=True)
class Note:
    """A finding for ``check`` and the report (severity info|warn|fail)."""

    severity: str
    subject: str
    message: str
    fix: str = ""


@dataclass(frozen=True)
class ConfigLine:
    """A setting an OS step puts in the engine's own config file, as data, so the engine's
    emitter writes the file without reading the step's wording: mssql.conf's ``[memory]
    memorylimitmb = 6553`` is ("mssql.conf", "memory", "memorylimitmb", "6553"), a startup
    trace flag ("mssql.conf", "traceflag", "", "809"), a deployment.xml element
    ("deployment.xml", "", "", "<commandlog .../>")."""

    file: str  # the engine's config format (its YAML's config_format)
    section: str
    key: str
    value: str


@dataclass(frozen=True)
class OsStep:
    """An operating-system step; steps sharing a ``key`` conflict (one NUMA policy)."""

    command: str
    reason: str
    key: str = ""
    # The step destroys data (re-provisioning PMEM, re-creating a namespace or filesystem):
    # the reason must say so in words, and rules never offer it while that data is mounted.
    destructive: bool = False
    binds_node: int | None = None  # numactl --membind: the engine sizes memory/CPUs from it
    config: tuple[ConfigLine, ...] = ()  # what the step writes into the engine's config file


Effect = Set | Bound | Prior | Note | OsStep


@dataclass(frozen=True)
class Finding:
    rule: str
    insights: list[str]
    severity: str
    subject: str
    message: str
    fix: str = ""
    # A durability risk (rules.checks.Check.risk): what --allow-unsafe gates, and so what an
    # inline suppression cannot silence without it (issue 55).
    risk: bool = False

    def to_dict(self) -> dict:
        return {
            "rule": self.rule,
            "insights": list(self.insights),
            "severity": self.severity,
            "subject": self.subject,
            "message": self.message,
            "fix": self.fix,
        }


class Rule:
    """Base of every rule. Subclasses set the class attributes and override ``condition``
    and ``effects``; ``check_config`` compares an existing config with what the rule sets."""

    id: ClassVar[str] = ""
    title: ClassVar[str] = ""
    insights: ClassVar[tuple[str, ...]] = ()
    paper: ClassVar[str] = ""  # e.g. "K23 §5.3.1, Fig. 8"
    priority: ClassVar[int] = PRIORITY_SPEED
    engines: ClassVar[tuple[str, ...]] = ("postgres", "mysql")  # () = host rule, any engine
    # Severity of the finding ``check`` gives when a config disagrees with a Set (None: none).
    check_severity: ClassVar[str | None] = None

    def applies_to(self, facts: Facts) -> bool:
        if not self.engines:
            return True
        return facts.engine in self.engines

    def condition(self, facts: Facts) -> bool:  # pragma: no cover - every rule overrides
        raise NotImplementedError

    def effects(self, facts: Facts) -> list[Effect]:  # pragma: no cover
        raise NotImplementedError

    def evaluate(self, facts: Facts) -> list[Effect]:
        """The rule's effects on these facts, or [] when it does not fire."""
        if not self.applies_to(facts) or not self.condition(facts):
            return []
        return list(self.effects(facts))

    def finalize(self, facts: Facts, settings: dict[str, Any]) -> list[OsStep] | None:
        """OS steps computed from the FINAL settings (name -> engine Setting, after every
        rule merged and the memory fit), replacing this rule's earlier OsSteps; None keeps
        them. E.g. a huge page pool sized from the shared_buffers that really ships."""
        return None

    def check_config(self, facts: Facts, config: dict[str, Any], effects: list[Effect],
                     same_value) -> list[Finding]:
        """Findings for a config (name -> value, lowercase names) that disagrees with the
        rule's safe settings. ``same_value(name, config_value, wanted)`` compares in base units.
        Rules override this for checks that are not "differs from what I would set"."""
        if self.check_severity is None:
            return []
        found = []
        for e in effects:
            if not isinstance(e, Set) or e.unsafe:
                continue
            have = config.get(e.name)
            if have is None or same_value(e.name, have, e.value):
                continue
            found.append(self.finding(
                self.check_severity, e.name,
                f"{e.name} is {have}; {e.reason}", f"set {e.name} = {_show(e.value)}"))
        return found

    def finding(self, severity: str, subject: str, message: str, fix: str = "") -> Finding:
        return Finding(self.id, list(self.insights), severity, subject, message, fix)

    @property
    def source(self) -> str:
        return self.paper


def _show(value: Any) -> str:
    if isinstance(value, Bytes):
        return human_bytes(value.n)
    if isinstance(value, Seconds):
        return f"{value.n:g}s"
    return str(value)


def human_bytes(n: int) -> str:
    for unit, size in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= size:
            return f"{n // size}{unit}"
    return f"{n}B"
