"""The named workloads: ``list_workloads`` and ``get_workload``.

The shared workloads are listed here; a server engine's own (PostgreSQL's pgbench-*) come from
its package (``Engine.own_workloads``), listed first as they always were."""

from __future__ import annotations

import difflib
from typing import Any

from pmem_advisor.engines import api
from pmem_advisor.errors import UsageError
from pmem_advisor.workloads.base import Workload
from pmem_advisor.workloads.olap import OlapTpchLite
from pmem_advisor.workloads.sqlfile import SqlFile
from pmem_advisor.workloads.sysbench import OLTP_WORKLOADS
from pmem_advisor.workloads.tpcc import Tpcc
from pmem_advisor.workloads.ycsb import YCSB_WORKLOADS

SHARED: dict[str, type[Workload]] = {
    **OLTP_WORKLOADS,
    "tpcc": Tpcc,
    **YCSB_WORKLOADS,
    "olap-tpch-lite": OlapTpchLite,
    "sql-file": SqlFile,
}


def all_workloads() -> dict[str, type[Workload]]:
    """Every named workload the shared registry runs: each engine's own, then the shared."""
    out: dict[str, type[Workload]] = {}
    for engine in api.loadable_engines():
        out.update(engine.own_workloads())
    out.update(SHARED)
    return out


def list_workloads() -> list[str]:
    return list(all_workloads())


def workload_class(name: str) -> type[Workload]:
    table = all_workloads()
    try:
        return table[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(table), n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else "see `pmem-advisor workload list`"
        raise UsageError(f"unknown workload {name!r}", hint=hint) from None


def get_workload(name: str, *, engine: str | None = None, **options: Any) -> Any:
    """A workload by name; ``options`` are its own (``script``, ``tables``, ``density``...).
    With ``engine``: that engine's workload of the name (``Engine.workload``: an engine's own
    workloads, e.g. RocksDB's db_bench ycsb-a, come first, then the shared ones)."""
    if engine is not None:
        return api.get_engine(engine).workload(name, **options)
    if name not in all_workloads():
        owners = engine_workloads().get(name)
        if owners:
            raise UsageError(f"workload {name!r} belongs to {', '.join(owners)}",
                             hint=f"run it through its engine, e.g. `pmem-advisor tune "
                                  f"{owners[0]} --workload {name}`")
    return workload_class(name)(**options)


def engine_workloads() -> dict[str, list[str]]:
    """Workload name -> the engines whose YAML lists it as their own (engine-specific)."""
    out: dict[str, list[str]] = {}
    for spec in api.specs():
        for name in spec.workloads:
            out.setdefault(name, []).append(spec.name)
    return out
