"""The parameters every command shares the look and limits of: metavars as the docs write
them, and numbers that are finite and in range (bad input, exit 2, naming the option)."""

from __future__ import annotations

import math
from typing import Any

import typer

# Metavars as the docs write them (Typer prints <str>, <bool>, <list[str]> otherwise).
_NUMBER_METAVAR = {int: "N", float: "NUMBER"}
_CLICK_NUMBER = {"int": int, "integer": int, "int range": int, "integer range": int, "float": float,
                 "float range": float}  # typer < 0.29: its click types by name
_WORD_METAVAR = {"dir": "DIR", "file": "FILE", "out": "PATH", "path": "PATH", "set": "NAME=VALUE",
                 "dsn": "DSN", "storage": "URL", "root": "DIR", "json": "FILE"}


def docs_metavars(command: Any) -> Any:
    """Give every parameter without a metavar one a DBA reads like the manual: flags none,
    ``--data-dir DIR``, ``--trials N``, ``--set NAME=VALUE``, arguments their name."""
    for param in getattr(command, "params", []):
        if param.param_type_name == "argument":
            param.display_type_rich = lambda ctx: None  # the name says it: no "<str>" beside
        if param.metavar is not None:
            continue
        desc = getattr(param, "type_descriptor", None)
        if param.param_type_name == "argument":
            param.metavar = (param.name or "value").upper()
        elif getattr(param, "is_flag", False) or getattr(param, "count", False):
            param.metavar = ""
        elif desc is not None and desc.is_choice and desc.choices:
            param.metavar = "|".join(str(getattr(c, "value", c)) for c in desc.choices)
        elif desc is None and getattr(param.type, "choices", None):  # typer < 0.29: click's
            param.metavar = "|".join(str(getattr(c, "value", c)) for c in param.type.choices)
        else:
            last = max(param.opts, key=len).lstrip("-").split("-")[-1]
            kind = (getattr(desc, "annotation", None) if desc is not None else
                    _CLICK_NUMBER.get(getattr(param.type, "name", None)))
            number = _NUMBER_METAVAR.get(kind)
            param.metavar = number or _WORD_METAVAR.get(last) or last.upper()
    try:  # --help is made on demand: make it now so that it shows no "<bool>" either
        from typer._click import Context

        help_option = command.get_help_option(Context(command,
                                                      **(command.context_settings or {})))
        if help_option is not None:
            help_option.metavar = ""
    except Exception:  # a Typer without these internals: cosmetic only
        pass
    for sub in (getattr(command, "commands", None) or {}).values():
        docs_metavars(sub)
    return command


NUMBER_FLAG_MAX = 1e12  # seconds, clients, trials, scale: nothing meant is near this


def checked_numbers(command: Any) -> Any:
    """Every int/float option of every command is finite and in 0..NUMBER_FLAG_MAX: ``--duration
    inf``, ``nan`` or ``-5`` is bad input (exit 2) naming the option, not a hang or a crash."""
    for param in getattr(command, "params", []):
        desc = getattr(param, "type_descriptor", None)  # typer >= 0.29
        numeric = (getattr(desc, "annotation", None) in (int, float) if desc is not None
                   else getattr(getattr(param, "type", None), "name", None) in _CLICK_NUMBER)
        if not numeric or getattr(param, "count", False):
            continue
        param.callback = _range_check(param.callback)
    for sub in (getattr(command, "commands", None) or {}).values():
        checked_numbers(sub)
    return command


def _range_check(inner: Any) -> Any:
    def check(ctx: Any, param: Any, value: Any) -> Any:
        if value is not None and not isinstance(value, bool) and not (
                math.isfinite(value) and 0 <= value <= NUMBER_FLAG_MAX):
            raise typer.BadParameter(f"{value!r} is not a number from 0 to {NUMBER_FLAG_MAX:.0e}")
        return inner(ctx, param, value) if inner is not None else value
    return check
