"""Entry point: builds the Typer app from the command modules and maps errors to exit codes."""

from __future__ import annotations

import os
import sys
from typing import Any

import typer

from pmem_advisor import __version__
from pmem_advisor.capabilities import missing_extra_error
from pmem_advisor.cli.commands import command_of, register_commands
from pmem_advisor.cli.output import set_verbosity, stdout_closed, unwrap_pacified_streams
from pmem_advisor.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    AdvisorError,
    ServerError,
    UsageError,
)

app = typer.Typer(
    name="pmem-advisor",
    help="Is this machine set up right for a database on persistent memory, "
    "and which config should the database run with here?",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,  # registers the shells; installing is `completion install` (hidden here)
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pmem-advisor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
    verbose: int = typer.Option(0, "--verbose", "-v", count=True,
                                help="More detail on stderr (repeatable)."),
    quiet: bool = typer.Option(False, "--quiet", "-q",
                               help="No progress or notes on stderr; results and warnings only."),
) -> None:
    """pmem-advisor: probe, recommend, check, tune.

    Results go to stdout, progress and notes to stderr.
    """
    if verbose and quiet:
        raise UsageError("-v and -q exclude each other")
    set_verbosity(0 if quiet else 1 + verbose)


def _fail(message: str, code: int) -> int:
    from pmem_advisor.cli.output import safe_text

    sys.stderr.write(f"pmem-advisor: error: {' '.join(safe_text(message).split())}\n")
    return code


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every failure is one line on stderr and a documented exit code. A reader
    that stops early (``| head -1``) is not a failure: exit 0, nothing more written."""
    try:
        code = _run(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return stdout_closed()


def build_command(only: list[str] | None = None) -> Any:
    """The click command tree of the app (the commands ``only`` names, every one by default),
    with the conventions every command follows."""
    from pmem_advisor.cli.conventions import apply_conventions
    from pmem_advisor.cli.params import checked_numbers, docs_metavars

    register_commands(app, only)

    return checked_numbers(docs_metavars(apply_conventions(typer.main.get_command(app))))


def _run(argv: list[str] | None) -> int:
    try:
        args = sys.argv[1:] if argv is None else argv
        if "--version" in args[:1]:  # nothing to build: the version is all it asks
            typer.echo(f"pmem-advisor {__version__}")
            return 0
        name = command_of(args)
        command = build_command(None if name is None else [name])
        rv = command.main(args=argv, prog_name="pmem-advisor", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except ServerError as e:
        if e.log_tail:
            from pmem_advisor.cli.output import safe_text

            sys.stderr.write("server log (last lines):\n" + safe_text(e.log_tail.rstrip()) + "\n")
        return _fail(str(e), e.exit_code)
    except AdvisorError as e:
        return _fail(str(e), e.exit_code)
    except typer.Exit as e:
        return e.exit_code
    except SystemExit as e:  # --show-completion/--install-completion exit by themselves
        if unwrap_pacified_streams():  # click's own answer to EPIPE on stdout: exit 1
            return stdout_closed()
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except typer.Abort:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except typer.TyperException as e:  # bad usage: unknown option, missing argument, bad type
        if type(e).__name__ == "NoArgsIsHelpError":  # help was printed already
            return EXIT_USAGE
        message = e.format_message() if hasattr(e, "format_message") else str(e)
        return _fail(message, EXIT_USAGE)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        return stdout_closed()
    except ModuleNotFoundError as e:  # a command of an extra the install does not have
        missing = missing_extra_error(e)
        if missing is None:
            return _internal(e)
        return _fail(str(missing), missing.exit_code)
    except Exception as e:  # a bug: one line, traceback only on request
        return _internal(e)


def _internal(e: Exception) -> int:
    if os.environ.get("PMEM_ADVISOR_DEBUG"):
        raise e
    return _fail(
        f"internal error: {type(e).__name__}: {e} (set PMEM_ADVISOR_DEBUG=1 for a traceback)",
        EXIT_INTERNAL,
    )


if __name__ == "__main__":
    raise SystemExit(main())
