"""The resources a server will really get: the tightest of host, cgroup, cpuset, NUMA binding
and the user's ``--memory``/``--cpus``, each with the place it came from.

Memory (bytes), tightest of:
- the host's ``MemTotal``;
- the cgroup's ``memory.max`` (v1 ``memory.limit_in_bytes``): above it the kernel OOM-kills;
- the cgroup's ``memory.high`` (v2): above it the kernel throttles and reclaims hard, so a
  buffer pool sized past it thrashes; we treat it as a limit too;
- the memory of the NUMA nodes the server may allocate from (``cpuset.mems``, or the node it
  is bound to with ``--numa-node``): a buffer larger than its node spills to remote memory
  or, with a strict binding, is OOM-killed;
- ``--memory``.
CPUs (may be fractional: ``cpu.max`` "150000 100000" is 1.5 CPUs of time), tightest of: the
host's online CPUs, the CPU quota, the cpuset's CPUs, the bound node's CPUs, ``--cpus``.
A limit the probe could not read (a warning in ``limits.warnings``) is skipped: the host value
stands and the notes say so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from pmem_advisor.probes.reading import format_cpulist
from pmem_advisor.probes.summary import human_bytes

HOST_MEMORY = "host MemTotal"
HOST_CPUS = "host online CPUs"


@dataclass
class Budget:
    memory_bytes: int
    memory_source: str
    cpus: float
    cpus_source: str
    nodes: list[int] | None
    host_memory_bytes: int
    host_cpus: int
    notes: list[str] = field(default_factory=list)
    nodes_source: str | None = None
    cpu_list: list[int] | None = None  # the CPUs the server may run on, when restricted
    memory_file: str | None = None  # the file the memory limit was read from
    cpus_file: str | None = None
    # --memory/--cpus describe another host than the probed one (target sizing): what the
    # probe saw of this machine (its huge page pool, say) says nothing of that host
    target_host: bool = False

    @property
    def whole_cpus(self) -> int:
        """CPUs for counts (worker threads, parallel workers): a fractional quota rounds down,
        never below 1."""
        return max(1, int(self.cpus))

    def describe(self) -> list[str]:
        """One line per resource, e.g. "memory: 4.0 GiB from cgroup memory.max (host 24.0 GiB)"."""
        def where(host: str, file: str | None) -> str:
            return f" ({'; '.join(x for x in (host, file) if x)})" if host or file else ""

        lines = [f"memory: {human_bytes(self.memory_bytes)} from {self.memory_source}" + where(
                     f"host {human_bytes(self.host_memory_bytes)}"
                     if self.memory_source != HOST_MEMORY else "", self.memory_file),
                 f"cpus: {self.cpus:g} from {self.cpus_source}" + where(
                     f"host {self.host_cpus}" if self.cpus_source != HOST_CPUS else "",
                     self.cpus_file)]
        if self.nodes is not None:
            lines.append(f"NUMA nodes: {format_cpulist(self.nodes)} from {self.nodes_source}")
        return lines + list(self.notes)

    def to_dict(self) -> dict:
        return asdict(self) | {"describe": self.describe()}


def _node(profile: dict, node: int) -> dict | None:
    return next((n for n in profile.get("numa") or [] if n.get("node") == node), None)


def effective_budget(profile: dict, *, memory_bytes: int | None = None,
                     cpus: float | None = None, numa_node: int | None = None,
                     target: bool = False) -> Budget:
    """The budget for a server on the machine of ``profile`` (a probe profile).

    ``target``: ``--memory``/``--cpus`` describe the host the config is for (recommend and
    check size for any host, as pgtune does), so a flag is the budget whatever the probed
    machine has; without it (a server started here: tune) a flag only tightens."""
    limits = profile.get("limits") or {}
    sources = limits.get("sources") or {}
    notes: list[str] = []
    host_mem = int((profile.get("memory") or {}).get("total_bytes") or 0)
    cpu = profile.get("cpu") or {}
    host_cpus = int(cpu.get("threads") or 1)

    mem_candidates: list[tuple[int, str, str | None]] = []
    if host_mem:
        mem_candidates.append((host_mem, HOST_MEMORY, None))
    for key in ("memory_max_bytes", "memory_high_bytes"):
        value = limits.get(key)
        if isinstance(value, int) and value > 0:
            file = sources.get(key)
            name = file.rsplit("/", 1)[-1] if file else key.replace("_bytes", "")
            mem_candidates.append((value, f"cgroup {name}", file))

    cpu_candidates: list[tuple[float, str, str | None]] = [(float(host_cpus), HOST_CPUS, None)]
    quota = limits.get("cpu_quota_cpus")
    if isinstance(quota, (int, float)) and quota > 0:
        file = sources.get("cpu_quota_cpus")
        name = file.rsplit("/", 1)[-1] if file else "CPU quota"
        cpu_candidates.append((float(quota), f"cgroup {name}", file))
    cpu_list = limits.get("cpuset_cpus")
    if cpu_list:
        cpu_candidates.append((float(len(cpu_list)), f"cpuset CPUs {format_cpulist(cpu_list)}",
                               sources.get("cpuset_cpus")))

    nodes, nodes_source = None, None
    all_nodes = [n.get("node") for n in profile.get("numa") or []]
    mems = limits.get("cpuset_mems")
    if mems and sorted(mems) != sorted(all_nodes):
        nodes, nodes_source = sorted(mems), f"cpuset memory nodes ({sources.get('cpuset_mems')})"
    if numa_node is not None:
        node = _node(profile, numa_node)
        if node is None:
            notes.append(f"--numa-node {numa_node}: no such node in the profile; ignored")
        else:
            if nodes is not None and numa_node not in nodes:
                notes.append(f"--numa-node {numa_node} is outside the cpuset's memory nodes "
                             f"{format_cpulist(nodes)}: the kernel will not allocate there")
            nodes, nodes_source = [numa_node], f"--numa-node {numa_node}"
            if node.get("cpus"):
                allowed = sorted(set(node["cpus"]) & set(cpu_list)) if cpu_list else node["cpus"]
                cpu_list = allowed
                cpu_candidates.append((float(max(1, len(allowed))),
                                       f"NUMA node {numa_node}'s CPUs", None))
    if nodes is not None:
        node_mem = [(_node(profile, n) or {}).get("memory_bytes") for n in nodes]
        if node_mem and all(isinstance(m, int) for m in node_mem):
            mem_candidates.append((sum(node_mem), f"NUMA node(s) {format_cpulist(nodes)} memory",
                                   None))

    if memory_bytes:
        mem_candidates.append((int(memory_bytes), "--memory", None))
    if cpus:
        cpu_candidates.append((float(cpus), "--cpus", None))

    if not mem_candidates:
        mem_candidates.append((0, "nothing (no MemTotal in the profile)", None))
        notes.append("the profile has no memory size: pass --memory")
    # min() keeps the first of equal values: the host, then the cgroup, then the user's flag.
    mem, mem_src, mem_file = min(mem_candidates, key=lambda c: c[0])
    ncpus, cpu_src, cpu_file = min(cpu_candidates, key=lambda c: c[0])
    target_host = False
    if target and memory_bytes and int(memory_bytes) > mem:
        target_host = True
        notes.append(f"--memory {human_bytes(int(memory_bytes))} sizes for a target host: "
                     f"the probed machine has {human_bytes(mem)} ({mem_src})")
        mem, mem_src, mem_file = int(memory_bytes), "--memory", None
    elif memory_bytes and int(memory_bytes) > mem:
        notes.append(f"--memory {human_bytes(int(memory_bytes))} is more than the "
                     f"{mem_src} allows: using {human_bytes(mem)}")
    if target and cpus and float(cpus) > ncpus:
        target_host = True
        notes.append(f"--cpus {cpus:g} sizes for a target host: the probed machine has "
                     f"{ncpus:g} ({cpu_src})")
        ncpus, cpu_src, cpu_file = float(cpus), "--cpus", None
        cpu_list = None  # this machine's cpuset says nothing of the target's CPUs
    elif cpus and float(cpus) > ncpus:
        notes.append(f"--cpus {cpus:g} is more than the {cpu_src} allows: using {ncpus:g}")
    notes += list(limits.get("notes") or [])
    for w in limits.get("warnings") or []:
        notes.append(f"limit not read: {w}")
    huge = _hugepage_note(limits)
    if huge:
        notes.append(huge)
    return Budget(memory_bytes=int(mem), memory_source=mem_src, cpus=ncpus, cpus_source=cpu_src,
                  nodes=nodes, host_memory_bytes=host_mem, host_cpus=host_cpus, notes=notes,
                  nodes_source=nodes_source,
                  cpu_list=cpu_list if cpu_list and len(cpu_list) < host_cpus else None,
                  memory_file=mem_file, cpus_file=cpu_file, target_host=target_host)


def _hugepage_note(limits: dict) -> str | None:
    """A reserved huge page pool is memory only huge-page users (a server with huge_pages /
    large_pages) can have: say so, the sizing rules decide what to do with it."""
    pools = (limits.get("hugepages") or {}).get("pools") or []
    reserved = sum((p.get("total") or 0) * (p.get("size_bytes") or 0) for p in pools)
    if reserved:
        return (f"{human_bytes(reserved)} of it is reserved as huge pages: only a server using "
                "huge pages (huge_pages / large_pages) can use that part")
    return None


def target_line(*, memory: int | None, cpus: float | None, medium: str | None,
                version: str | None, flavour: str | None, probed: str,
                verb: str = "sizes") -> str | None:
    """"sizes for a target host: 64.0 GiB RAM (--memory), 16 CPUs (--cpus), ...; the rest
    from this machine": which value came from which flag, when any did (None otherwise).
    ``verb``: what the command does for that host (recommend sizes, check checks)."""
    given = []
    if memory:
        given.append(f"{human_bytes(int(memory))} RAM (--memory)")
    if cpus:
        given.append(f"{cpus:g} CPUs (--cpus)")
    if medium:
        given.append(f"data on {medium} (--medium)")
    if version:
        given.append(f"{flavour or 'server'} {version} (--version)")
    if not given:
        return None
    return f"{verb} for a target host: {', '.join(given)}; the rest from {probed}"
