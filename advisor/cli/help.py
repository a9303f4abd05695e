"""`pmem-advisor help [COMMAND...]`: the help of any command, as `COMMAND --help` prints it."""

from __future__ import annotations

import typer

from pmem_advisor.errors import UsageError


def help_cmd(
    ctx: typer.Context,
    command: list[str] = typer.Argument(None, metavar="[COMMAND]...",
                                        help="The command, e.g. recommend or config parse."),
) -> None:
    """Show the help of pmem-advisor or of one of its commands."""
    root_ctx = ctx.find_root()
    target, target_ctx = root_ctx.command, root_ctx
    for name in command or []:
        subs = getattr(target, "commands", None) or {}
        if name not in subs:
            known = ", ".join(sorted(subs)) or "none"
            raise UsageError(f"no command {' '.join(command)!r}", hint=f"commands here: {known}")
        target = subs[name]
        target_ctx = target.make_context(name, [], parent=target_ctx, resilient_parsing=True)
    text = target.get_help(target_ctx)
    if text:  # typer's rich help prints itself and returns nothing
        typer.echo(text)


def register(app: typer.Typer) -> None:
    app.command("help")(help_cmd)
