"""`pmem-advisor report DIR`: rebuild a tuning run's outputs from its study."""

from __future__ import annotations

from pathlib import Path

import typer

from pmem_advisor.cli.output import chosen_format, console, format_option, print_json
from pmem_advisor.cli.output import out as stdout
from pmem_advisor.errors import UsageError


def report(
    directory: str = typer.Argument(..., help="A tune output directory (holds study.db)."),
    storage: str = typer.Option(None, "--storage", help="SQLAlchemy URL instead of study.db."),
    study: str = typer.Option(None, "--study", help="Study name (when the storage has several)."),
    fmt: str = format_option(("text", "json"),
                             help="text: the verdict and the files; json: the summary "
                             "(schema pmem-advisor.tune-summary/1)."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
    offline: bool = typer.Option(False, "--offline", help="Embed plotly.js in report.html "
                                 "(one self-contained file) instead of plotly.min.js beside it."),
) -> None:
    """Rebuild summary.json, the best config, report.md and report.html from the study."""
    import optuna

    from pmem_advisor.report.build import write_reports
    from pmem_advisor.tuner.storage import STUDY_FILE, default_url, open_storage
    from pmem_advisor.tuner.study import load_existing

    out = Path(directory)
    if storage is None and not (out / STUDY_FILE).is_file():
        raise UsageError(f"{out} holds no {STUDY_FILE}; pass the tune --out directory "
                         "or --storage URL")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    st = load_existing(open_storage(storage or default_url(out)), study)
    summary = write_reports(st, out, offline=offline)
    if chosen_format(fmt, json_out) == "json":
        print_json(summary)
        return
    from pmem_advisor.report.describe import outcome_lines

    console.print(f"rebuilt the report of study {st.study_name!r} in {out}")
    for line in outcome_lines(summary):  # the result: stdout; notes (caveats): stderr
        stream = console if line.startswith("note:") else stdout
        stream.print(line, markup=False, highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
