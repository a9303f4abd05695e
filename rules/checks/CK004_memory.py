"""CK004 Memory of the settings against the RAM budget (host, cgroup, NUMA node).

Anti-pattern, by how sure the harm is:
- fail: the memory the server allocates at start and holds (shared_buffers, the InnoDB buffer
  pool and its control structures, the log buffer; ``MemoryEstimate.static_bytes``) is above
  the budget: the server cannot even carry its idle load without swapping or being OOM-killed.
- warn: the worst case (global buffers + per-connection memory x max_connections + background
  workers, ``rules.memory.worst_case``) is above the budget, or leaves it less than 10%: only
  every connection running its largest query at once reaches it, so it is a risk under load,
  stated beside the realistic peak (the sessions that can run at once, 2 per CPU, each at its
  full per-query memory). Neither server caps its own total, so such a config runs until the
  load peaks and then the OOM killer may end it. pgtune's own output for a 16 GB web server
  is such a config: a DBA runs it, and the gate must not call it one that cannot start.
  A file pmem-advisor writes itself (``CheckInput.worst_case_is_limit``) fits the worst case:
  there it fails.

Recommendation: static memory well within the budget; for the worst case smaller
per-connection memory (work_mem, sort/join buffers), fewer connections (a pooler); bound to a
node, size from that node's DRAM.

Sources: PostgreSQL manual §20.4.1 (work_mem: "several running sessions could be doing such
operations concurrently"), §19.4.4 (Linux memory overcommit); MySQL 8.4 manual §10.12.3.1
(how MySQL uses memory); PostgreSQL wiki "Number Of Database Connections" (about 2 active
sessions per core); rules/memory.py for the terms and their reasons.
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
    title = "Static and worst-case memory within the RAM budget, or the bound NUMA node"
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
        static = est.static_bytes
        peak = est.describe_peak(budget.cpus)
        if static > limit:
            held = ", ".join(p.label() for p in est.parts if p.is_static and p.bytes)
            out.append(self.finding(
                "fail", "memory", f"the memory allocated at start, {gib(static)} ({held}), "
                f"exceeds the {where}: the server cannot hold it even idle; under load the "
                "OOM killer ends it", self._fix(inp, static=True)))
        elif total > limit and inp.worst_case_is_limit:
            out.append(self.finding(
                "fail", "memory", f"{est.describe()} exceeds the {where}: a config "
                "pmem-advisor sizes fits its worst case", self._fix(inp)))
        elif total > limit:
            fits = est.realistic_peak(budget.cpus) <= limit
            out.append(self.finding(
                "warn", "memory", f"{est.describe()} exceeds the {where} if every connection "
                f"runs its largest query at once; {peak} "
                f"{'fits' if fits else 'exceeds it too'}: a risk under peak load, not at "
                "start", self._fix(inp)))
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

    def _fix(self, inp: CheckInput, static: bool = False) -> str:
        if static and inp.facts.engine in ("postgres", "mysql"):
            pool = "shared_buffers" if inp.facts.pg else "innodb_buffer_pool_size"
            return f"lower {pool} to a quarter to half of the budget"
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
