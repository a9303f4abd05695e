"""Loads the rules: the baseline for the engine, then one rule per file of ``rules/catalog/``."""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache

from pmem_advisor.engines import api
from pmem_advisor.rules import catalog as _catalog_pkg
from pmem_advisor.rules.model import Rule

_FILE = re.compile(r"^(PM\d{3})_[a-z0-9_]+$")


@cache
def catalog_rules() -> tuple[Rule, ...]:
    """Every ``RULE`` of ``rules/catalog/PMxxx_name.py``, in id order; the id must match the
    file name (a mismatch is a bug in the catalog, so it fails loudly)."""
    rules = []
    for mod in sorted(pkgutil.iter_modules(_catalog_pkg.__path__), key=lambda m: m.name):
        m = _FILE.match(mod.name)
        if not m:
            continue
        module = importlib.import_module(f"{_catalog_pkg.__name__}.{mod.name}")
        rule = getattr(module, "RULE", None)
        if not isinstance(rule, Rule) or rule.id != m.group(1):
            raise RuntimeError(f"rules/catalog/{mod.name}.py must define RULE with id {m.group(1)}")
        rules.append(rule)
    return tuple(rules)


def baseline_rules(engine: str | None = None) -> tuple[Rule, ...]:
    """Every engine's baseline (``Engine.baseline_rules``), PostgreSQL and MySQL first; each
    rule's ``engines`` decides where it applies. An engine whose module is broken is left
    out here (asking for that engine by name reports it).

    ``engine``: only that engine's baseline. A baseline rule applies to its own engine only
    (``Rule.engines``), so the others' would never fire, and importing every engine package
    (their runners, workloads and instance code) is most of what ``check FILE`` would cost
    (issue 55)."""
    if engine is None:
        return tuple(r for e in api.loadable_engines() for r in e.baseline_rules())
    return api.get_engine(engine).baseline_rules()


def all_rules(engine: str | None = None) -> tuple[Rule, ...]:
    """The baselines and the catalog; ``engine``: only the rules that can apply to facts of
    that engine (its baseline, and catalog rules of any engine: they filter themselves)."""
    return baseline_rules(engine) + catalog_rules()


def get_rule(rule_id: str) -> Rule:
    for r in all_rules():
        if r.id == rule_id:
            return r
    raise KeyError(rule_id)
