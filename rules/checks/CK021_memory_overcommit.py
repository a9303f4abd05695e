"""CK021 Linux memory overcommit: the OOM killer for PostgreSQL, or a commit limit too small.

Anti-pattern:
- PostgreSQL on a host whose kernel overcommits memory (``vm.overcommit_memory`` 0, the
  heuristic default, or 1, "always"): when memory runs out the kernel's OOM killer ends a
  process, and when that is a backend the postmaster ends every session and runs crash
  recovery; when it is the postmaster the server is gone. The manual advises strict accounting
  (``vm.overcommit_memory = 2``) on a dedicated database host, so that an allocation that does
  not fit fails in the one query that asked. Mode 1 is the worse one (the kernel never
  refuses), so it warns; the default mode 0 is information.
- Strict accounting (mode 2, on either engine) with a commit limit (``CommitLimit``: swap plus
  ``vm.overcommit_ratio`` percent of the RAM the huge page pools leave) below what these
  settings allocate: the shared memory or the buffer pool is refused at start, or sessions
  fail with "out of memory" under the realistic peak, while RAM is still free. The stock ratio
  of 50 on a host without swap lets the server use half of the RAM.

Not judged (no false positives): a host whose ``/proc/sys/vm`` cannot be read (a container
masking it, an old snapshot) says nothing; MySQL/MariaDB in modes 0/1 (their manuals give no
advice on the mode). Memory in huge pages is not counted by the kernel's accounting, so a
server asking for them (PostgreSQL huge_pages on/try with a pool, large_pages) is compared
with the limit only for what it allocates outside the shared segment. In a container the
values are the host's (vm.* is not per container): the finding says to set them there.

Sources: PostgreSQL manual §19.4.4 "Linux Memory Overcommit" (server-start / kernel
resources: vm.overcommit_memory = 2 on dedicated hosts, vm.overcommit_ratio, the OOM killer
and the postmaster); Linux Documentation/mm/overcommit-accounting.rst (the three modes,
CommitLimit); postgresqltuner.pl (its overcommit check warns on mode != 2).
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.memory import gib
from pmem_advisor.rules.model import Finding

DOC = "PostgreSQL manual §19.4.4 Linux Memory Overcommit"


def _host_wide(inp: CheckInput) -> str:
    """The note for a server in a container or a limited cgroup: vm.* is the host's."""
    profile = inp.facts.profile
    limits = profile.get("limits") or {}
    overlay_root = any(m.get("mountpoint") == "/" and m.get("fstype") == "overlay"
                       for m in profile.get("mounts") or [])
    if overlay_root or limits.get("memory_max_bytes") or limits.get("cpu_quota_cpus"):
        return " (on the host: vm.overcommit_* is host-wide, not per container)"
    return ""


def _uses_huge_pages(inp: CheckInput) -> bool:
    """Whether the shared segment or buffer pool may sit in huge pages, which the kernel's
    commit accounting leaves out."""
    pools = ((inp.facts.profile.get("limits") or {}).get("hugepages") or {}).get("pools") or []
    if not any((p.get("total") or 0) > 0 for p in pools):
        return False
    name = "huge_pages" if inp.facts.pg else "large_pages"
    value = inp.value(name, default=True)
    return value not in (False, None, "off")


class MemoryOvercommit(Check):
    id = "CK021"
    title = "Memory overcommit: the OOM killer, or a commit limit below the settings"
    source = f"{DOC}; Linux overcommit-accounting.rst; postgresqltuner"
    insights = ()
    engines = ("postgres", "mysql")

    def run(self, inp: CheckInput) -> list[Finding]:
        oc = (inp.facts.profile.get("limits") or {}).get("overcommit") or {}
        mode = oc.get("memory")
        if mode is None:  # not readable here: judge nothing
            return []
        if mode == 2:
            return self._strict(inp, oc)
        if not inp.facts.pg:
            return []
        fix = ("on a host that runs only the database, set vm.overcommit_memory = 2 and a "
               "vm.overcommit_ratio whose CommitLimit holds the server and everything else "
               f"the host runs (a file in /etc/sysctl.d, then sysctl --system){_host_wide(inp)}")
        if mode == 1:
            return [self.finding(
                "warn", "vm.overcommit_memory", "vm.overcommit_memory = 1: the kernel never "
                "refuses an allocation, so running out of memory means the OOM killer; a "
                "killed backend makes the postmaster end every session and run crash recovery "
                f"({DOC})", fix)]
        return [self.finding(
            "info", "vm.overcommit_memory", "vm.overcommit_memory = 0 (the kernel's heuristic "
            "default): under memory pressure the OOM killer may end a backend or the "
            f"postmaster; the manual advises 2 on a dedicated host ({DOC})", fix)]

    def _strict(self, inp: CheckInput, oc: dict) -> list[Finding]:
        limit, est, budget = oc.get("commit_limit_bytes"), inp.memory, inp.budget
        if not limit or est is None or not inp.settings:
            return []
        cpus = budget.cpus if budget is not None else None
        peak = est.realistic_peak(cpus)
        huge = _uses_huge_pages(inp)
        counted = peak - est.static_bytes if huge else peak
        if counted <= limit:
            return []
        what = ("what it allocates outside the huge-page segment" if huge
                else est.describe_peak(cpus))
        ratio = oc.get("ratio")
        return [self.finding(
            "warn", "vm.overcommit_ratio", f"strict overcommit accounting "
            f"(vm.overcommit_memory = 2, vm.overcommit_ratio = {ratio}) limits every "
            f"allocation on the host to CommitLimit {gib(limit)}, below {what} "
            f"({gib(counted)}): the server is refused memory (at start, or queries fail "
            f"with out of memory) while RAM is free ({DOC})",
            "raise vm.overcommit_ratio (or add swap) until CommitLimit holds the server and "
            f"the rest of the host, or lower the memory settings{_host_wide(inp)}")]


CHECK = MemoryOvercommit()
