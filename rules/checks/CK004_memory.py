"""CK004 Worst-case memory of the settings against the RAM budget (host, cgroup, NUMA node).

Anti-pattern: a config whose worst case (global buffers + per-connection memory x
max_connections + background workers, ``rules.memory.worst_case``) exceeds the memory the
server can have: the host's RAM, a cgroup's memory.max, or the DRAM of the NUMA node it is
bound to (``numactl --membind``, PM004). Neither server caps its own total, so such a config
runs until the load peaks and then the OOM killer ends it (a crash for MySQL/MariaDB; for
PostgreSQL every session is reset). pgtune and MySQLTuner reason with the same bound.

Recommendation: a worst case within the budget: smaller per-connection memory (work_mem,
sort/join buffers), fewer connections (a pooler), or smaller global buffers; bound to a node,
size from that node's DRAM.

Sources: PostgreSQL manual §20.4.1 (work_mem: "several running sessions could be doing such
operations concurrently"), §19.4.4 (Linux memory overcommit); MySQL 8.4 manual §10.12.3.1
(how MySQL uses memory); rules/memory.py for the terms and their reasons.
"""

from __future__ import annotations

from pmem_advisor.engines import api
from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.memory import BUDGET_SHARE, gib
from pmem_advisor.rules.model import Finding

# The share of the budget the worst case may take; the rest is for the OS, the page cache of
# WAL/binlogs and monitoring. The constant recommend fits to, so what it writes passes quietly.
HEADROOM = BUDGET_SHARE


class MemoryBudget(Check):
    id = "CK004"
    title = "Worst-case memory within the RAM budget, or the bound NUMA node"
    source = "PostgreSQL manual §20.4.1, §19.4.4; MySQL 8.4 manual §10.12.3.1"
    insights = ("K23-4",)
    engines = ()  # every engine with a memory model (Engine.memory); inp.memory None: skip

    def run(self, inp: CheckInput) -> list[Finding]:
        est, budget = inp.memory, inp.budget
        if est is None or budget is None or not budget.memory_bytes or not inp.settings:
            return []
        out = []
        total, limit = est.total_bytes, budget.memory_bytes
        where = budget.describe()[0]
        if total > limit:
            out.append(self.finding(
                "fail", "memory", f"{est.describe()} exceeds the {where}: under peak load the "
                "OOM killer ends the server", self._fix(inp)))
        elif total > HEADROOM * limit:
            out.append(self.finding(
                "warn", "memory", f"{est.describe()} leaves less than {1 - HEADROOM:.0%} of the "
                f"{where} for the OS and its caches", self._fix(inp)))
        node = self._bind_node(inp)
        if node is not None and not out:
            node_mem = next((n.get("memory_bytes") for n in inp.facts.numa
                             if n.get("node") == node), None)
            if isinstance(node_mem, int) and total > node_mem:
                out.append(self.finding(
                    "warn", "memory", f"{est.describe()} exceeds NUMA node {node}'s "
                    f"{gib(node_mem)} of DRAM: bound to that node (PM004's numactl --membind) "
                    "the server would be OOM-killed", "size the server from node "
                    f"{node}'s DRAM, or do not bind memory to one node"))
        return out

    def _bind_node(self, inp: CheckInput) -> int | None:
        """The node PM004 would bind the server to (PMEM's node on a multi-socket host),
        when the budget does not already come from a node binding."""
        f = inp.facts
        if inp.budget.nodes is not None or len(f.cpu_nodes) < 2 or not f.any_pmem_path:
            return None
        return f.pmem_node

    def _fix(self, inp: CheckInput) -> str:
        if inp.facts.pg:
            return ("lower work_mem (rules.memory sizes it to fit), max_connections (use a "
                    "pooler) or shared_buffers")
        if inp.facts.engine == "mysql":
            return ("lower the per-connection buffers (sort/join/read buffers, tmp_table_size), "
                    "max_connections or innodb_buffer_pool_size")
        big = sorted(inp.memory.parts, key=lambda p: -p.bytes)[:2]
        names = [p.name for p in big] or [api.get_engine(inp.facts.engine).main_buffer or "memory"]
        return f"lower {' or '.join(names)} (the largest terms of the worst case)"


CHECK = MemoryBudget()
