"""The Python API: what `probe`, `recommend` and `check` compute, without the command line.

Each function returns the object the CLI renders and raises the typed errors the CLI maps to
exit codes (``pmem_advisor.errors``: UsageError/InputError 2, EnvironmentProblem 3). Importing
this module imports no CLI (no typer, no rich consoles). See docs/api.md.
"""

from __future__ import annotations

from typing import Any


def probe(*, root: str | None = None, paths: list[str] = (), medium: list[str] = (),
          cgroup: str | None = None, measure: bool = True, save: str | None = None) -> dict:
    """The probe profile (a dict, schema pmem-advisor.probe/1, as `probe --json` prints it) of
    this machine, or of ``root`` (a tree shaped like / or a snapshot .tar.gz). ``paths``: the
    data/WAL directories to place; ``medium``: PATH=hdd|ssd|nvme overrides."""
    from pmem_advisor.library.probe import probe as run

    return run(root=root, paths=list(paths), medium=list(medium), cgroup=cgroup,
               measure=measure, save=save)


def recommend(engine: str, **options: Any):
    """The rules' recommendation for ``engine`` ("postgres", "mariadb", "pg", ...): a
    ``rules.Recommendation`` with ``settings``, ``withheld``, ``os_steps``, ``findings``,
    ``notes`` and ``to_json()`` (what `recommend --json` prints). Options as the flags:
    profile, root, version, workload, memory ("64G"), cpus, data_dir, wal_dir, clients,
    allow_unsafe, medium, interleave_cpuless. ``config_text(rec)`` gives the file."""
    from pmem_advisor.library.recommend import build_recommendation

    return build_recommendation(engine, **options)


def config_text(rec, fmt: str = "conf") -> str:
    """The config file (``conf``) or the statements that apply it (``sql``) for a
    recommendation, every line with its rule and reason: what `recommend --out` writes."""
    from pmem_advisor.library.recommend import emit

    return emit(rec, fmt)


def check(paths: list[str] = (), **options: Any):
    """The gate `pmem-advisor check` runs, as the library: the ``CheckReport`` the CLI renders
    (``findings``: ``GateFinding`` with rule, severity, key, reason, fix, file and line, most
    severe first; ``exit_code``; ``to_json()``, what `check --format json` prints;
    ``text_lines()``). ``paths``: config files, directories or globs (a first one naming an
    engine is the engine, as on the command line); ``options`` are the flags: config, dsn,
    db, version, profile, root, data_dir, wal_dir, memory ("64G"), cpus, clients, medium,
    no_measure, diff, workload, allow_unsafe, fail_on, project (a path, False for none, None
    to find .pmem-advisor.toml upward), baseline. One config's or server's bad input raises
    its typed error; among many files each bad one is a ``FileError`` in ``errors``."""
    from pmem_advisor.gate import check as gate_check

    return gate_check(list(paths), **options)
