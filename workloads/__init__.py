"""Named benchmark workloads (pgbench, sysbench, our own Lua TPC-C-like and YCSB, OLAP,
sql-file): ``get_workload(name).load(conn, scale)`` then ``.run(conn, clients=..., ...)``."""

from pmem_advisor.workloads.base import Workload, WorkloadResult
from pmem_advisor.workloads.registry import WORKLOADS, get_workload, list_workloads

__all__ = ["WORKLOADS", "Workload", "WorkloadResult", "get_workload", "list_workloads"]
