"""The run `check` makes once it has the facts and the settings: the papers' rules and the
pre-deployment checks (rules/checks), merged as advisor/cli/check.py merges them."""

from __future__ import annotations

from typing import Any


def findings(facts, settings: dict[str, str] | None = None, **options: Any) -> list:
    """The findings for ``settings`` on the host ``facts`` describes, most severe first;
    ``options`` go to ``rules.checks.build_input`` (source, where, memory_bytes, target ...)."""
    from pmem_advisor.rules import check
    from pmem_advisor.rules.checks import build_input, run_checks

    inp, rule_facts = build_input(facts, settings, **options)
    return run_checks(inp, check(rule_facts, inp.settings or None, catalog=inp.catalog))
