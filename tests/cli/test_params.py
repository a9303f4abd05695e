"""cli/params.py's conventions hold on every command, whichever typer is installed (its
internals differ across 0.28 and 0.29: a check keyed on one version's attributes silently
did nothing on the other)."""

from __future__ import annotations

import math

import pytest

from pmem_advisor.cli.main import build_command
from pmem_advisor.cli.params import NUMBER_FLAG_MAX


def _options():
    root = build_command()
    stack = [((), root)]
    while stack:
        path, cmd = stack.pop()
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            stack.append(((*path, name), sub))
        for p in getattr(cmd, "params", []):
            if p.param_type_name == "option":
                yield path, p


def _numeric(p) -> bool:
    return getattr(p.type, "name", "") in ("int", "integer", "float", "int range",
                                           "integer range", "float range") \
        and not getattr(p, "count", False) and not getattr(p, "is_flag", False)


def test_every_number_option_has_a_number_metavar_and_the_range_check():
    seen = 0
    for path, p in _options():
        if not _numeric(p):
            continue
        seen += 1
        where = f"{' '.join(path)} {max(p.opts, key=len)}"
        assert p.metavar in ("N", "NUMBER"), where
        assert p.callback is not None and p.callback.__name__ == "check", where
        for bad in (math.inf, math.nan, -5.0, NUMBER_FLAG_MAX * 10):
            with pytest.raises(Exception, match="is not a number from 0"):
                p.callback(None, p, bad)
    assert seen >= 20  # --cpus, --clients, --trials, --duration, --interval, ...


def test_choice_options_show_their_choices():
    formats = [p for path, p in _options() if path == ("check",) and "--format" in p.opts]
    assert formats and formats[0].metavar.split("|")[:2] == ["text", "json"]
