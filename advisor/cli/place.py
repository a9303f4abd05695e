"""`pmem-advisor place`: which tables, indexes, WAL and temp files go on the fast tier
(rules/placement.py decides; this parses, calls it and renders)."""

from __future__ import annotations

import typer

from pmem_advisor.cli.output import format_option, note, print_json, print_table, warn
from pmem_advisor.errors import UsageError

SCHEMA = "pmem-advisor.place/1"


def place_cmd(
    db: str = typer.Argument(..., help="postgres, mariadb or mysql (8.0+)."),
    fast: str = typer.Option(..., "--fast", help="The fast tier: PATH[:SIZE] (an empty "
                             "directory owned by the server's user; SIZE defaults to its "
                             "free space)."),
    slow: str | None = typer.Option(None, "--slow", help="The slow tier (default: the data "
                                    "directory)."),
    dsn: str | None = typer.Option(None, "--dsn", help="The running server."),
    dsn_file: str | None = typer.Option(None, "--dsn-file", help="A file (mode 600) whose "
                                        "first line is the DSN."),
    interval: float | None = typer.Option(None, "--interval", min=0.1, help="Plan on the "
                                          "counters of this many seconds (two snapshots); "
                                          "else on the lifetime counters."),
    tablespace: str = typer.Option("pmem_fast", "--tablespace", help="The fast tablespace "
                                   "(PostgreSQL, MySQL's general tablespace; MariaDB places "
                                   "by DATA DIRECTORY)."),
    allow_unsafe: bool = typer.Option(False, "--allow-unsafe", help="Accept a non-durable "
                                      "fast tier (tmpfs) for data: test hosts only."),
    apply: bool = typer.Option(False, "--apply", help="Run the SQL on the server (each "
                               "statement waits at most 10 s for its lock)."),
    fmt: str = format_option(("table", "json", "sql")),
) -> None:
    """Place objects on the fast tier by the I/O time they would save per byte."""
    from pmem_advisor.connection import resolve_dsn
    from pmem_advisor.rules import (
        placement,
        placement_mariadb,
        placement_mysql,
        placement_postgres,
    )

    engine = {"postgres": placement_postgres, "postgresql": placement_postgres,
              "mariadb": placement_mariadb, "mysql": placement_mysql}.get(db.lower())
    if engine is None:
        raise UsageError(f"place reads postgres, mariadb or mysql, not {db!r}")
    dsn = resolve_dsn(dsn, dsn_file)
    if not dsn:
        raise UsageError("place reads a running server: give --dsn or --dsn-file")
    p = placement.plan(engine, dsn, fast, slow_path=slow, interval=interval,
                       allow_unsafe=allow_unsafe,
                       tablespace=tablespace)
    for n in p.notes:
        (warn if n.startswith("UNSAFE") else note)(n)
    if fmt == "json":
        print_json(p.as_dict(), SCHEMA)
    elif fmt == "sql":
        typer.echo(engine.render_sql(p), nl=False)
    else:
        total = sum(o.io for o in p.objects) or 1
        rows = [(o.name, o.kind, o.size, o.tablespace, f"{o.io / total:.1%}",
                 f"{o.saving_s:.4g}", "fast" if o.on_fast else "slow")
                for o in sorted(p.objects, key=lambda o: -o.saving_s)]
        print_table(("object", "kind", "bytes", "now on", "share of I/O", "saving s", "plan"),
                    rows, title=f"placement ({p.window})")
        typer.echo(f"expected share of I/O on the fast tier: {p.fast_share:.1%} "
                   f"({p.fast.path}, {p.fast.capacity} bytes, read "
                   f"{p.fast.read_lat_s * 1e3:.3g} ms vs {p.slow.read_lat_s * 1e3:.3g} ms)"
                   + ("; UNSAFE: non-durable fast tier" if p.unsafe else ""))
    if apply:
        for stmt in engine.apply(dsn, p):
            note(f"applied: {stmt}")


def register(app: typer.Typer) -> None:
    app.command("place")(place_cmd)
