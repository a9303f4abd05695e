"""`pmem-advisor doctor`: which optional capabilities are installed, and how to get the rest."""

from __future__ import annotations

import typer

from pmem_advisor.capabilities import (
    EXTRAS,
    Capability,
    extra_capability,
    libpmem,
    native_kernel,
    tool_capability,
)
from pmem_advisor.cli.output import (
    chosen_format,
    format_option,
    print_json,
    print_table,
    styled,
)
from pmem_advisor.engines.api import EngineDataError
from pmem_advisor.engines.registry import broken, get_engine, specs

SCHEMA = "pmem-advisor.doctor/1"


def server_rows() -> dict[str, Capability]:
    """The engines whose servers the instances layer finds (``Engine.server_capability``):
    which server a managed instance would use (and the others found)."""
    rows = {}
    for spec in specs():
        try:
            row = get_engine(spec.name).server_capability()
        except (EngineDataError, ImportError):  # engine_capabilities says it is broken
            continue
        if row is not None:
            rows[spec.name] = Capability(*row)
    return rows


def engine_capabilities() -> list[Capability]:
    """One row per engine (advisor/engines/*/): the managed servers (PostgreSQL, MySQL) as
    "<engine>-server" first, every other engine as "engine NAME" with its binary or package,
    and the package to install."""
    servers = server_rows()
    rows = list(servers.values())
    for spec in specs():
        if spec.name in servers:
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
    fmt: str = format_option(),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """List optional capabilities (pip extras, native kernel, libpmem, servers, load
    generators) and the command that installs each missing one."""
    caps = all_capabilities()
    if chosen_format(fmt, json_out) == "json":
        print_json({"capabilities": [c.to_dict() for c in caps]}, SCHEMA)
        return
    rows = []
    for c in caps:
        status = styled("yes", "green") if c.available else styled("missing", "yellow")
        rows.append((c.name, status, c.detail, c.how_to_get))  # text: never markup
    print_table(("capability", "status", "detail", "how to get it"), rows,
                title="pmem-advisor capabilities", fmt=fmt)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
