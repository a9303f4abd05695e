"""What the tools that re-measure a finished demo share: their common options, opening the
demo's study, and the ``--summarise ROWS [--json FILE]`` step that turns their rows into a
summary."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import dataset


def load(study_db: Path) -> Any:
    """A finished demo's Optuna study; a missing file or one that is no study is a one-line
    UsageError (and nothing is created where nothing was)."""
    import optuna

    from pmem_advisor.errors import UsageError

    if not study_db.is_file():  # sqlite would create an empty one
        raise UsageError(f"{study_db} is not a file: give a finished demo's study.db")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = f"sqlite:///{study_db}"
    try:
        names = optuna.get_all_study_names(url)
        return optuna.load_study(study_name=names[0], storage=url) if names else None
    except Exception as exc:  # not an SQLite file, or not Optuna's: its error, one line
        raise UsageError(f"{study_db} is not a study: {type(exc).__name__}") from None


def summarise_file(rows_path: Path, json_path: Path | None,
                   summarise: Callable[[list[dict[str, Any]]], dict[str, Any]], tool: str
                   ) -> int:
    """Read a tool's rows (JSON lines), print their summary and write it to ``json_path``;
    a file that cannot be read, or holds another tool's rows, is a one-line UsageError."""
    from pmem_advisor.errors import UsageError

    try:
        rows = [json.loads(x) for x in rows_path.read_text().splitlines() if x.strip()]
        summary = summarise(rows)
    except OSError as exc:
        raise UsageError(f"cannot read {rows_path}: {exc}") from None
    except (KeyError, TypeError, IndexError, ValueError):
        raise UsageError(f"{rows_path} holds no rows of {tool}") from None
    if json_path:
        dataset.write_json(json_path, summary)
    print(json.dumps(summary, indent=1))
    return 0


def parser(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """The options every such tool has (--study, --out, --summarise, --json); the tool adds
    its own."""
    p = argparse.ArgumentParser(prog=prog, description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--study", type=Path, help="a finished demo's study.db")
    p.add_argument("--out", type=Path, help="rows (JSON lines), appended")
    p.add_argument("--summarise", type=Path, help="summarise these rows instead")
    p.add_argument("--json", type=Path, help="with --summarise: write the summary here")
    return p


def summarised(args: argparse.Namespace,
               summarise: Callable[[list[dict[str, Any]]], dict[str, Any]], tool: str) -> bool:
    """True once ``--summarise`` was done; otherwise checks that measuring has its --study
    and --out (a one-line UsageError) and returns False."""
    from pmem_advisor.errors import UsageError

    if args.summarise:
        summarise_file(args.summarise, args.json, summarise, tool)
        return True
    if args.study is None or args.out is None:
        raise UsageError("--study and --out are needed to measure (or --summarise ROWS)")
    return False
