"""Entry point: builds the Typer app from the command modules and maps errors to exit codes."""

from __future__ import annotations

import os
import sys

import typer

from pmem_advisor import __version__
from pmem_advisor.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    AdvisorError,
    ServerError,
)

app = typer.Typer(
    name="pmem-advisor",
    help="Is this machine set up right for a database on persistent memory, "
    "and which config should the database run with here?",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
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
) -> None:
    """pmem-advisor: probe, recommend, check, tune."""


# Each command module exposes register(app). One line per module; keep them in this block.
from pmem_advisor.cli import doctor as _doctor  # noqa: E402

_doctor.register(app)
from pmem_advisor.cli import probe as _probe  # noqa: E402

_probe.register(app)
from pmem_advisor.cli import instances as _instances  # noqa: E402

_instances.register(app)
from pmem_advisor.cli import tune as _tune  # noqa: E402

_tune.register(app)
from pmem_advisor.cli import report as _report  # noqa: E402

_report.register(app)
from pmem_advisor.cli import knobs as _knobs  # noqa: E402

_knobs.register(app)
from pmem_advisor.cli import config as _config  # noqa: E402

_config.register(app)
from pmem_advisor.cli import recommend as _recommend  # noqa: E402

_recommend.register(app)
from pmem_advisor.cli import check as _check  # noqa: E402

_check.register(app)
from pmem_advisor.cli import workload as _workload  # noqa: E402

_workload.register(app)
# -- command registrations end --


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"pmem-advisor: error: {message}\n")
    return code


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every failure is one line on stderr and a documented exit code."""
    command = typer.main.get_command(app)
    try:
        rv = command.main(args=argv, prog_name="pmem-advisor", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except ServerError as e:
        if e.log_tail:
            sys.stderr.write("server log (last lines):\n" + e.log_tail.rstrip() + "\n")
        return _fail(str(e), e.exit_code)
    except AdvisorError as e:
        return _fail(str(e), e.exit_code)
    except typer.Exit as e:
        return e.exit_code
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
        return 0
    except Exception as e:  # a bug: one line, traceback only on request
        if os.environ.get("PMEM_ADVISOR_DEBUG"):
            raise
        return _fail(
            f"internal error: {type(e).__name__}: {e} (set PMEM_ADVISOR_DEBUG=1 for a traceback)",
            EXIT_INTERNAL,
        )


if __name__ == "__main__":
    raise SystemExit(main())
