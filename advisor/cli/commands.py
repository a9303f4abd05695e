"""Which command modules a run loads: each module exposes ``register(app)``, and a run imports
only the module of the command it runs (issue 55: `--version` and `check FILE` at a linter's
start-up cost, without the tuner, the instance code or the schema validator of other
commands); help, completion and an unknown command load them all."""

from __future__ import annotations

import importlib
import os
from typing import Any

# One entry per top-level command (its module), in the order help lists them.
COMMANDS = {
    "doctor": "doctor", "probe": "probe", "instances": "instances", "tune": "tune",
    "report": "report", "knobs": "knobs", "config": "config", "recommend": "recommend",
    "check": "check", "workload": "workload", "help": "help", "completion": "completion",
    "place": "place",
}
ROOT_FLAGS = {"--verbose", "-v", "--quiet", "-q"}
_registered: set[str] = set()


def register_commands(app: Any, names: Any = None) -> None:
    """Register the command modules ``names`` (every one when None) on ``app``, once each.
    The import is here, in the dispatch layer, so that a command module is loaded only when
    its command runs."""
    for name in COMMANDS if names is None else names:
        module = COMMANDS[name]
        if module in _registered:
            continue
        importlib.import_module(f"pmem_advisor.cli.{module}").register(app)
        _registered.add(module)


def command_of(argv: list[str]) -> str | None:
    """The top-level command ``argv`` runs, or None when the run needs every command (help,
    completion, no command, an unknown one, ``-vv`` style flags we do not parse here)."""
    if any(k.startswith("_PMEM_ADVISOR_COMPLETE") for k in os.environ):
        return None  # shell completion walks the whole tree
    for arg in argv:
        if arg in ROOT_FLAGS or (arg.startswith("-v") and set(arg[1:]) == {"v"}):
            continue
        # `help CMD` describes other commands: it needs the whole tree
        return arg if arg in COMMANDS and arg != "help" else None
    return None
