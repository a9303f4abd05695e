"""`pmem-advisor completion show|install SHELL`: tab completion for bash, zsh and fish.

The script is Typer's (it calls pmem-advisor back with ``_PMEM_ADVISOR_COMPLETE`` set);
``install`` puts it where each shell loads completions by itself, so no rc file is edited:
as root system-wide, otherwise in the user's own directories.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from pmem_advisor.cli.output import note, out
from pmem_advisor.errors import AdvisorError, EnvironmentProblem, UsageError

PROG = "pmem-advisor"
COMPLETE_VAR = "_PMEM_ADVISOR_COMPLETE"
SHELLS = ("bash", "zsh", "fish")

completion_app = typer.Typer(help="Shell completion for bash, zsh and fish.",
                             no_args_is_help=True)


def script(shell: str) -> str:
    """The completion script for ``shell``."""
    if shell not in SHELLS:
        raise UsageError(f"shell {shell!r}: completion is made for {', '.join(SHELLS)}")
    from typer._completion_shared import get_completion_script

    return get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell) + "\n"


def default_dir(shell: str) -> Path:
    """Where ``shell`` finds completions without any rc-file change: system-wide for root,
    the user's XDG directories otherwise (zsh: ~/.zfunc, which needs to be in $fpath)."""
    root = os.geteuid() == 0
    home = Path.home()
    data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local/share")
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    if shell == "bash":
        return Path("/usr/share/bash-completion/completions") if root else \
            data / "bash-completion/completions"
    if shell == "zsh":
        return Path("/usr/local/share/zsh/site-functions") if root else home / ".zfunc"
    return Path("/usr/share/fish/vendor_completions.d") if root else config / "fish/completions"


def file_name(shell: str) -> str:
    return {"bash": PROG, "zsh": f"_{PROG}", "fish": f"{PROG}.fish"}[shell]


def install_files(directory: Path, files: dict[str, str], by_hand: str) -> list[Path]:
    """Write ``files`` (name -> text) into ``directory`` (created when missing) through the
    one safe write; without write access, say where it would have written and how to do it
    by hand (exit 3)."""
    from pmem_advisor.fileio import write_file_safely

    written = []
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            write_file_safely(directory / name, text, backup=False)
            written.append(directory / name)
    except (OSError, AdvisorError) as e:
        reason = getattr(e, "strerror", None) or getattr(e, "message", None) or str(e)
        raise EnvironmentProblem(f"cannot write to {directory}: {reason}",
                                 hint=f"run it as root, pass --dir DIR, or by hand: {by_hand}"
                                 ) from None
    return written


@completion_app.command("show")
def show_cmd(shell: str = typer.Argument(..., metavar="bash|zsh|fish",
                                         help="The shell to complete in.")) -> None:
    """Print the completion script (to save where your shell loads completions)."""
    out.file.write(script(shell))
    out.file.flush()


@completion_app.command("install")
def install_cmd(
    shell: str = typer.Argument(..., metavar="bash|zsh|fish", help="The shell to complete in."),
    directory: str = typer.Option(None, "--dir", help="Install here instead of the shell's "
                                  "own completion directory."),
) -> None:
    """Install the completion script where the shell loads it by itself (no rc file edited):
    as root for every user, otherwise for you. Open a new shell afterwards."""
    text = script(shell)
    target = Path(directory).expanduser() if directory else default_dir(shell)
    by_hand = f"{PROG} completion show {shell} > {target / file_name(shell)}"
    (path,) = install_files(target, {file_name(shell): text}, by_hand)
    out.print(str(path), markup=False, highlight=False)
    if shell == "zsh" and not directory and os.geteuid() != 0:
        note("zsh: make sure ~/.zfunc is in fpath: add `fpath=(~/.zfunc $fpath); "
             "autoload -Uz compinit && compinit` to ~/.zshrc")
    else:
        note(f"installed {shell} completion; it works in shells started from now on")


def register(app: typer.Typer) -> None:
    app.add_typer(completion_app, name="completion")
