"""PM091 SQL Server and VoltDB: run on the socket that owns the data's PMEM.

Anti-pattern: a SQL Server or VoltDB whose data sits on one socket's PMEM while its threads
run on both. K23 pinned every database process to socket 0 to avoid remote NUMA access (K23
§3.1; SQL Server used all cores of socket 0, §5.1), and its SQL Server log, forced onto the
other socket's sector namespace, made both-on-PMEM slower than data-on-PMEM/log-on-SSD at
32-128 users (§5.2). D21: far PMEM access is ~5x slower on first touch and writes reach ~7
instead of 12.5 GB/s (D21 §3.3-3.4, §4.4). This is K23-4 for the engines PM004 (PostgreSQL,
MySQL) does not configure.

Recommendation: SQL Server: ``ALTER SERVER CONFIGURATION SET PROCESS AFFINITY NUMANODE = N``
(Microsoft, ALTER SERVER CONFIGURATION); VoltDB: start it under ``numactl --cpunodebind=N
--membind=N``. Not when the load needs more CPUs than the socket has (then PM083's cap and
measuring come first).
"""

from shlex import quote

from pmem_advisor.rules.catalog.PM080_advice_conditions_differ import has_pmem
from pmem_advisor.rules.model import PRIORITY_PLACEMENT, Note, OsStep, Rule

SAID = ("K23 §3.1 pinned SQL Server and VoltDB to the socket of their PMEM; far PMEM is ~5x "
        "slower on first touch and writes ~7 instead of 12.5 GB/s (D21 §3.3-3.4, §4.4)")


class SqlServerVoltdbPinPmemSocket(Rule):
    id = "PM091"
    title = "SQL Server and VoltDB: run on the socket that owns the data's PMEM"
    insights = ("K23-4", "D21-3")
    paper = "K23 §3.1, §5.1, §5.2; D21 §3.3-3.4, §4.4"
    priority = PRIORITY_PLACEMENT
    engines = ("sqlserver", "voltdb")

    def _node(self, f):
        d = f.data
        if d is None or not d.real_pmem or d.numa_node is None:
            return None
        return d.numa_node

    def condition(self, f):
        node = self._node(f)
        return (has_pmem(f) and node is not None and len(f.cpu_nodes) >= 2
                and bool(f.node_cpus(node)) and not f.needs_more_than_node(node))

    def effects(self, f):
        node = self._node(f)
        cpus = len(f.node_cpus(node))
        device = f.data.device or "the data's PMEM"
        if f.engine == "sqlserver":
            step = OsStep(f"ALTER SERVER CONFIGURATION SET PROCESS AFFINITY NUMANODE = {node};",
                          f"SQL Server's schedulers on node {node}, which owns {device} "
                          "(Microsoft, ALTER SERVER CONFIGURATION; K23 §3.1)", key="numa-policy")
        else:
            step = OsStep(f"numactl --cpunodebind={node} --membind={node} voltdb start "
                          f"--dir={quote(f.data.path)}",
                          f"VoltDB on node {node}, which owns the PMEM under {f.data.path} "
                          "(--dir: the directory `voltdb init` used) (K23 §3.1)",
                          key="numa-policy")
        return [Note("info", "numa",
                     f"the data's PMEM is on node {node} ({cpus} CPUs): {SAID}",
                     f"run on node {node}; the OS step says how"), step]


RULE = SqlServerVoltdbPinPmemSocket()
