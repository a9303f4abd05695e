"""The named workloads: ``list_workloads`` and ``get_workload``."""

from __future__ import annotations

import difflib
from typing import Any

from pmem_advisor.errors import UsageError
from pmem_advisor.workloads.base import Workload
from pmem_advisor.workloads.olap import OlapTpchLite
from pmem_advisor.workloads.pgbench import PgbenchCustom, PgbenchTpcb
from pmem_advisor.workloads.sqlfile import SqlFile
from pmem_advisor.workloads.sysbench import OLTP_WORKLOADS
from pmem_advisor.workloads.tpcc import Tpcc
from pmem_advisor.workloads.ycsb import YCSB_WORKLOADS

WORKLOADS: dict[str, type[Workload]] = {
    "pgbench-tpcb": PgbenchTpcb,
    "pgbench-custom": PgbenchCustom,
    **OLTP_WORKLOADS,
    "tpcc": Tpcc,
    **YCSB_WORKLOADS,
    "olap-tpch-lite": OlapTpchLite,
    "sql-file": SqlFile,
}


def list_workloads() -> list[str]:
    return list(WORKLOADS)


def workload_class(name: str) -> type[Workload]:
    try:
        return WORKLOADS[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(WORKLOADS), n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else "see `pmem-advisor workload list`"
        raise UsageError(f"unknown workload {name!r}", hint=hint) from None


def get_workload(name: str, **options: Any) -> Workload:
    """A workload by name; ``options`` are its own (``script``, ``tables``, ``density``...)."""
    return workload_class(name)(**options)
