"""What every command accepts the same way, applied once to the whole command tree:

- ``-h`` beside ``--help``;
- ``-q/--quiet`` and ``-v/--verbose`` after the subcommand as well as before it;
- ``--version`` names the target server's version everywhere (``--server-version``, the
  spelling some commands had, still works but is not shown);
- an Examples block at the end of every command's help (from ``cli/examples.py``);
- help piped (``pmem-advisor help check | less``) is plain text, without rich's boxes.
"""

from __future__ import annotations

import copy
from typing import Any

from pmem_advisor.cli.examples import EXAMPLES, examples_for
from pmem_advisor.cli.output import set_verbosity, stdout_is_terminal

HELP_NAMES = ["-h", "--help"]
GLOBAL_OPTIONS = ("quiet", "verbose")  # the root's parameters every subcommand repeats
HIDDEN_ALIASES = {"--version": "--server-version"}  # shown spelling -> accepted old one


def apply_conventions(root: Any) -> Any:
    """Apply the conventions above to ``root`` (the click command of the Typer app) and every
    command below it; returns ``root``."""
    for p in root.params:  # Typer's own, which edits rc files: `completion install` replaces it
        if p.name in ("install_completion", "show_completion"):
            p.hidden = True
    globals_ = [p for p in root.params if p.name in GLOBAL_OPTIONS]
    _walk(root, (), globals_, is_root=True, plain=not stdout_is_terminal())
    return root


def _walk(command: Any, path: tuple[str, ...], globals_: list, *, is_root: bool = False,
          plain: bool = False) -> None:
    command.context_settings = {**(command.context_settings or {}),
                                "help_option_names": HELP_NAMES}
    if plain:  # click's own formatter: no panels, no colour
        command.rich_markup_mode = None
    if not is_root:
        names = {n for p in command.params for n in p.opts}
        command.params.extend(_repeat(g) for g in globals_ if not set(g.opts) & names)
        _hidden_aliases(command)
    lines = examples_for(" ".join(path))
    if lines and not (command.epilog or "").startswith("Examples"):
        if plain:  # \b: click keeps the lines as they are instead of refilling them
            command.epilog = "Examples:\n\n\b\n" + "\n".join("  " + ln for ln in lines)
        else:  # rich markup: a literal "[" in an example must not be taken for a style
            command.epilog = "Examples:\n" + "\n".join("  " + ln.replace("[", r"\[")
                                                        for ln in lines)
    for name, sub in (getattr(command, "commands", None) or {}).items():
        _walk(sub, (*path, name), globals_, plain=plain)


def _repeat(option: Any) -> Any:
    """The root's -q or -v again on a subcommand: it combines with what was given before."""
    again = copy.copy(option)
    again.expose_value = False
    again.callback = _set_global
    return again


def _set_global(ctx: Any, param: Any, value: Any) -> Any:
    if not value:
        return value
    from pmem_advisor.errors import UsageError

    given = ctx.find_root().meta.setdefault("pmem_advisor.globals", {})
    given[param.name] = value
    root = ctx.find_root().params
    quiet = bool(root.get("quiet") or given.get("quiet"))
    verbose = int(root.get("verbose") or 0) + int(given.get("verbose") or 0)
    if quiet and verbose:
        raise UsageError("-v and -q exclude each other")
    set_verbosity(0 if quiet else 1 + verbose)
    return value


def _hidden_aliases(command: Any) -> None:
    """``--server-version V`` is read as ``--version V``; help and man pages show only the
    latter. The alias is its own hidden option whose value the real one falls back to."""
    for option in list(command.params):
        for shown, alias in HIDDEN_ALIASES.items():
            if shown not in getattr(option, "opts", ()) or alias not in option.opts:
                continue
            option.opts = [o for o in option.opts if o != alias]
            key = f"pmem_advisor.alias.{option.name}"
            hidden = copy.copy(option)
            hidden.opts, hidden.secondary_opts = [alias], []
            hidden.name = f"{option.name}__alias"  # its own slot in the parser's results
            hidden.hidden, hidden.expose_value = True, False
            hidden.callback = _remember(key, option.name, shown, alias)
            original = option.callback
            option.callback = _fall_back(key, original, shown, alias)
            command.params.append(hidden)


def _remember(key: str, name: str, shown: str, alias: str):
    def callback(ctx: Any, param: Any, value: Any) -> Any:
        if value is not None:
            ctx.meta[key] = value
            given = ctx.params.get(name)  # the real option, when it came first
            if given is not None and given != value:
                from pmem_advisor.errors import UsageError

                raise UsageError(f"{shown} {given} and {alias} {value} contradict each other: "
                                 f"give {shown} once")
        return value

    return callback


def _fall_back(key: str, original, shown: str, alias: str):
    def callback(ctx: Any, param: Any, value: Any) -> Any:
        if key in ctx.meta:
            if value is not None and value != ctx.meta[key]:
                from pmem_advisor.errors import UsageError

                raise UsageError(f"{shown} {value} and {alias} {ctx.meta[key]} contradict "
                                 f"each other: give {shown} once")
            value = ctx.meta[key]
        return original(ctx, param, value) if original else value

    return callback


__all__ = ["EXAMPLES", "HELP_NAMES", "apply_conventions"]
