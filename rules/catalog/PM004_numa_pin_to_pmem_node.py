"""PM004 Pin the database to the socket that owns its PMEM.

Anti-pattern: a server free to run on every socket while its files sit on one socket's PMEM.
Far PMEM reads are ~5x slower on first touch and far writes reach ~7 instead of 12.5 GB/s
(D21 §3.3-3.4, §4.4, insights #3, #4, #8, #9, #10); K23 pinned every database to socket 0
(K23 §3.1).

Recommendation: ``numactl --cpunodebind=N --membind=N`` (or a systemd drop-in with
NUMAPolicy=bind), N = the node of the PMEM holding the data. PM005 overrides this when the
server needs more CPUs than one socket has.
"""

from shlex import quote

from pmem_advisor.probes.reading import format_cpulist
from pmem_advisor.rules.model import PRIORITY_SPEED, Note, OsStep, Rule


def server_command(f) -> str:
    if f.pg:
        return f"postgres -D {quote(f.data.path) if f.data else '<datadir>'}"
    if f.mysql:
        return "mariadbd" if f.mariadb else "mysqld"
    return "<server command>"


class NumaPinToPmemNode(Rule):
    id = "PM004"
    title = "Pin the server to the NUMA node that owns its PMEM"
    insights = ("K23-4", "D21-3")
    paper = "K23 §3.1; D21 §3.3-3.4, §4.4, insights #3, #4, #8, #9, #10"
    priority = PRIORITY_SPEED
    engines = ("postgres", "mysql")

    def condition(self, f):
        # a server that needs more CPUs than the node has spans sockets: never pin (and so
        # never shrink) it; PM005 interleaves instead
        return (len(f.cpu_nodes) > 1 and f.pmem_node is not None and f.any_pmem_path
                and not f.needs_more_than_node(f.pmem_node))

    def effects(self, f):
        n = f.pmem_node
        out = [
            OsStep(f"numactl --cpunodebind={n} --membind={n} {server_command(f)}",
                   f"the data's PMEM is on node {n}: near access only (far reads ~5x slower "
                   "first touch, far writes ~7 vs 12.5 GB/s); --membind keeps all memory in "
                   f"that node's DRAM, so every memory and CPU knob here is sized from node {n}",
                   key="numa-policy", binds_node=n),
            OsStep(f"systemd drop-in: [Service] NUMAPolicy=bind NUMAMask={n} "
                   f"CPUAffinity={_cpulist(f.node_cpus(n))}",
                   "the same binding for a systemd-managed server", key="numa-policy-systemd"),
        ]
        if f.server_cpus is not None:
            near = set(f.node_cpus(n))
            if near and not set(f.server_cpus) <= near:
                out.append(Note("warn", "numa",
                                f"the server may run on CPUs outside node {n}, which owns its PMEM",
                                f"numactl --cpunodebind={n} --membind={n}"))
        return out


def _cpulist(cpus) -> str:
    return format_cpulist(cpus) or "<cpus of the node>"


RULE = NumaPinToPmemNode()
