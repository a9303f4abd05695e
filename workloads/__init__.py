"""Named benchmark workloads (sysbench, our own Lua TPC-C-like and YCSB, OLAP, sql-file;
engine-specific ones live in their engine's package): ``registry.get_workload(name)
.load(conn, scale)`` then ``.run(conn, clients=..., ...)``.

The package imports only the base types: the registry names engine workloads, and an engine's
workload module imports ``workloads.base``, which must not pull the registry in with it."""

from pmem_advisor.workloads.base import Workload, WorkloadResult

__all__ = ["Workload", "WorkloadResult"]
