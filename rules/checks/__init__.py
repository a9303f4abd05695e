"""Pre-deployment checks: what ``check`` reports beyond the papers' rules (``rules/catalog``).

One check per file, ``CKnnn_name.py`` defining ``CHECK``; its docstring gives the
anti-pattern, the recommendation and the manual or paper it rests on, and ``CKnnn_name.yaml``
beside it holds the cases ``tests/rules/test_check_cases.py`` runs.

A check reads a :class:`CheckInput` (the rules' facts, the settings of a config file or of a
running server, the knob catalog, the server's status counters) and returns
:class:`~pmem_advisor.rules.model.Finding` objects, so ``check`` prints both kinds alike.
Severity follows the harm: a setting or a placement that can lose committed data is ``fail``
(``warn`` when the user passed ``--allow-unsafe``: still shown, no longer failing the gate).
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import re
from dataclasses import dataclass, field, replace
from datetime import date
from functools import cache
from typing import Any, ClassVar

from pmem_advisor.rules.facts import Facts
from pmem_advisor.rules.model import Finding, severity_rank

_FILE = re.compile(r"^(CK\d{3})_[a-z0-9_]+$")


@dataclass
class CheckInput:
    facts: Facts
    settings: dict[str, str] = field(default_factory=dict)  # lowercase name -> value text
    source: str = "none"  # config | server | none: where ``settings`` came from
    where: dict[str, str] = field(default_factory=dict)  # name -> file:line (config)
    loose: frozenset[str] = frozenset()  # my.cnf names given with the loose- prefix
    catalog: Any = None  # knobs.catalog.Catalog for the target flavour/version, or None
    status: dict | None = None  # live counters of a running server (check --dsn)
    server_names: frozenset[str] | None = None  # every parameter the running server knows
    today: date = field(default_factory=date.today)
    budget: Any = None  # rules.budget.Budget when known
    memory: Any = None  # rules.memory.MemoryEstimate of these settings when known
    # The settings are ours to size (a tuned file before it is written): the worst case is a
    # limit (CK004 fails above it), not the risk under load it is in a file others wrote.
    worst_case_is_limit: bool = False
    # What recommend sets for this budget and the server's own connections (check --dsn):
    # rules.combine.Recommendation, or None (not a running server, or no rules for it).
    advice: Any = None

    @property
    def allow_unsafe(self) -> bool:
        return self.facts.allow_unsafe

    def knob(self, name: str):
        """The catalog's knob, or None (no catalog, unknown, or absent in this version)."""
        return None if self.catalog is None else self.catalog.find(name)

    def text(self, name: str) -> str | None:
        return self.settings.get(name)

    def value(self, name: str, default: bool = False) -> Any:
        """The setting in the knob's base unit (None when absent or unreadable); with
        ``default`` the catalog's default stands in for an absent setting."""
        knob = self.knob(name)
        text = self.settings.get(name)
        if text is None:
            return knob.default if (default and knob is not None) else None
        if knob is None:
            return text
        from pmem_advisor.errors import UsageError

        try:
            return knob.parse(text, check_range=False)
        except (UsageError, ArithmeticError, ValueError):  # e.g. 1e400 in an integer knob
            return None  # CK002 reports the bad value; other checks skip it

    def shown(self, name: str) -> str:
        """The setting (or the default) as the server's config would write it."""
        knob, value = self.knob(name), self.value(name, default=True)
        if knob is None or value is None:
            return self.text(name) or "?"
        try:
            return str(knob.render(value))
        except Exception:  # noqa: BLE001 - a value the renderer cannot show is shown raw
            return str(value)

    def at(self, name: str) -> str:
        """' (file:line)' for a config setting, '' otherwise."""
        return f" ({self.where[name]})" if name in self.where else ""


class Check:
    """Base of every check: set the class attributes, override ``run``."""

    id: ClassVar[str] = ""
    title: ClassVar[str] = ""
    source: ClassVar[str] = ""  # the manual section or paper it rests on
    insights: ClassVar[tuple[str, ...]] = ()
    engines: ClassVar[tuple[str, ...]] = ()  # () = host check, any engine (or none)
    # Rule ids whose findings on the same subject this check supersedes (one report per
    # problem): e.g. a durability setting PM015 flags on PMEM and CK001 on any storage.
    replaces: ClassVar[tuple[str, ...]] = ()

    def applies_to(self, inp: CheckInput) -> bool:
        return not self.engines or inp.facts.engine in self.engines

    def run(self, inp: CheckInput) -> list[Finding]:  # pragma: no cover - overridden
        raise NotImplementedError

    def finding(self, severity: str, subject: str, message: str, fix: str = "") -> Finding:
        return Finding(self.id, list(self.insights), severity, subject, message, fix)

    def risk(self, inp: CheckInput, subject: str, message: str, fix: str) -> Finding:
        """A durability risk: ``fail``, or ``warn`` when the user accepted it."""
        if inp.allow_unsafe:
            return replace(self.finding("warn", subject, message + " (accepted with "
                                        "--allow-unsafe)", fix), risk=True)
        return replace(self.finding("fail", subject, message, fix), risk=True)

    def covers(self, other: Finding, mine: list[Finding]) -> bool:
        return other.rule in self.replaces and any(m.subject == other.subject for m in mine)


@cache
def all_checks() -> tuple[Check, ...]:
    """Every ``CHECK`` of ``rules/checks/CKnnn_name.py`` in id order (the id must match)."""
    from pmem_advisor.rules import checks as pkg

    found = []
    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        m = _FILE.match(mod.name)
        if not m:
            continue
        check = getattr(importlib.import_module(f"{pkg.__name__}.{mod.name}"), "CHECK", None)
        if not isinstance(check, Check) or check.id != m.group(1):
            raise RuntimeError(f"rules/checks/{mod.name}.py must define CHECK with id "
                               f"{m.group(1)}")
        found.append(check)
    return tuple(found)


def get_check(check_id: str) -> Check:
    for c in all_checks():
        if c.id == check_id:
            return c
    raise KeyError(check_id)


def run_checks(inp: CheckInput, rule_findings: list[Finding] = (),
               checks: tuple[Check, ...] | None = None) -> list[Finding]:
    """The checks' findings merged with the rules' (``engine.check``): a rule finding a
    check supersedes on the same subject is dropped; most severe first."""
    mine: dict[str, list[Finding]] = {}
    for c in checks if checks is not None else all_checks():
        if c.applies_to(inp):
            mine[c.id] = c.run(inp)
    by_id = {c.id: c for c in (checks if checks is not None else all_checks())}
    kept = [f for f in rule_findings
            if not any(by_id[cid].covers(f, found) for cid, found in mine.items())]
    merged = kept + [f for found in mine.values() for f in found]
    return sorted(merged, key=lambda f: (-severity_rank(f.severity), f.rule, f.subject))


def build_input(facts: Facts, settings: dict | None = None, *, source: str = "none",
                where: dict | None = None, loose: frozenset = frozenset(),
                status: dict | None = None, server_names: frozenset | None = None,
                memory_bytes: int | None = None, cpus: float | None = None,
                target: bool = False, nodes: list[int] | None = None,
                today: date | None = None, notes: list[str] | None = None,
                worst_case_is_limit: bool = False) -> tuple[CheckInput, Facts]:
    """The input of the checks, and the facts the papers' rules should see.

    Loads the knob catalog of the target (a version the catalogs do not cover is checked
    against the newest they know, and said in ``notes``), the RAM budget (cgroup, the NUMA
    node a server is bound to, ``memory_bytes``/``cpus``; ``target``: they describe the host
    the config is for) and the worst-case memory of the settings.
    """
    from dataclasses import replace

    from pmem_advisor.errors import UsageError
    from pmem_advisor.rules.budget import effective_budget
    from pmem_advisor.rules.combine import load_catalog_for

    notes = notes if notes is not None else []
    settings = {str(k).lower(): str(v) for k, v in (settings or {}).items()}
    catalog, rule_facts = None, facts
    if facts.engine is not None:
        try:
            catalog = load_catalog_for(facts)
        except UsageError as e:
            if not _before_supported(facts):  # a typo or a future release: exit 2, listed
                raise
            # an old series (CK006 says it is past its end of life): the newest catalog
            notes.append(f"{e.message}: values checked against the newest catalog")
            rule_facts = replace(facts, version=None)
            catalog = load_catalog_for(rule_facts)
    node = nodes[0] if nodes and len(nodes) == 1 and len(facts.numa) > 1 else None
    budget = effective_budget(facts.profile, memory_bytes=memory_bytes, cpus=cpus,
                              numa_node=node, target=target)
    estimate = None
    if facts.engine is not None and settings:
        from pmem_advisor.rules.memory import worst_case

        try:
            estimate = worst_case(facts.engine, settings, flavour=facts.flavour,
                                  version=catalog.version if catalog else facts.version,
                                  catalog=catalog, files_in_memory=facts.data_in_memory,
                                  host_cpus=max(1, math.ceil(budget.cpus)) if budget.cpus
                                  else None)
        except UsageError as e:  # a value CK002 reports; the size is unknown then
            notes.append(f"worst-case memory not computed: {e.message}")
        except (ArithmeticError, ValueError) as e:  # a value the parsers cannot even hold
            notes.append(f"worst-case memory not computed: {e}")
    advice = None
    if source == "server" and facts.engine is not None:
        advice = _advice(_server_clients(rule_facts, settings), catalog, notes)
    inp = CheckInput(facts=facts, settings=settings, source=source, where=where or {},
                     loose=loose, catalog=catalog, status=status, server_names=server_names,
                     today=today or date.today(), budget=budget, memory=estimate,
                     worst_case_is_limit=worst_case_is_limit, advice=advice)
    return inp, rule_facts


# The baselines size max_connections as clients + 10 (superuser_reserved_connections, tools).
BASELINE_RESERVED = 10


def _server_clients(facts: Facts, settings: dict[str, str]) -> Facts:
    """The facts with the running server's own connections as the clients (unless --clients
    gave them): advice for the server as it is used, not for the baselines' default 300."""
    from dataclasses import replace

    if facts.clients is not None:
        return facts
    try:
        conns = int(settings.get("max_connections", ""))
    except ValueError:
        return facts
    return replace(facts, clients=max(1, conns - BASELINE_RESERVED))


def _advice(facts: Facts, catalog, notes: list[str]):
    """recommend's settings for a running server's budget and connections (None, said in the
    notes, when the rules cannot size it)."""
    from pmem_advisor.errors import AdvisorError
    from pmem_advisor.rules.combine import recommend

    try:
        return recommend(facts, catalog=catalog)
    except AdvisorError as e:
        notes.append(f"no advice to compare the running settings with: {e}")
        return None


def _before_supported(facts) -> bool:
    """Whether the target version is a real one older than every supported series."""
    from pmem_advisor.errors import UsageError
    from pmem_advisor.knobs.catalog import supported_versions
    from pmem_advisor.knobs.version import parse_version

    try:
        oldest = supported_versions(facts.engine, facts.flavour)[0]
        return facts.version is not None and \
            parse_version(str(facts.version)) < parse_version(oldest)
    except UsageError:
        return False
