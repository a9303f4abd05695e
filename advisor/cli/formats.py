"""The one ``--format`` option every command that prints a table shares, and its spellings."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any


class OutputFormat(enum.StrEnum):
    """What ``--format`` accepts where a table is printed: a table (rich on a terminal, plain
    when piped), tsv, json."""

    table = "table"
    tsv = "tsv"
    json = "json"


TABLE_FORMATS = ("table", "tsv", "json")
# Spellings kept from earlier releases: a script that said --format text still works.
FORMAT_ALIASES = {"text": "table"}


def format_option(formats: Sequence[str] = TABLE_FORMATS, *, help: str | None = None) -> Any:
    """The one ``--format`` option: the first of ``formats`` is the default; a format the
    command does not print is bad usage (exit 2) naming the ones it does."""
    import typer

    def check(value: str) -> str:
        chosen = FORMAT_ALIASES.get(value, value) if FORMAT_ALIASES.get(value) in formats \
            else value
        if chosen not in formats:
            raise typer.BadParameter(f"{value!r} is not a format of this command; it prints "
                                     f"{', '.join(formats)}")
        return chosen

    default_help = {"table": "table: a table (one row per line, never wrapped, when piped)",
                    "tsv": "tsv: tab-separated with a header line", "json": "json: JSON",
                    "text": "text: lines a person reads", "junit": "junit: JUnit XML for CI",
                    "conf": "conf: the config file", "sql": "sql: statements that apply it"}
    return typer.Option(formats[0], "--format", metavar="|".join(formats), callback=check,
                        help=help or "; ".join(default_help.get(f, f) for f in formats) + ".")


def chosen_format(fmt: str, json_out: bool = False) -> str:
    """``--json`` is short for ``--format json``."""
    return "json" if json_out else fmt
