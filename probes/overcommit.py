"""Linux memory overcommit: ``vm.overcommit_memory``, ``vm.overcommit_ratio`` and the limit.

Read from ``/proc/sys/vm/overcommit_memory`` (0 heuristic, 1 always, 2 strict accounting),
``/proc/sys/vm/overcommit_ratio`` and ``/proc/sys/vm/overcommit_kbytes`` (in mode 2 the commit
limit is ``kbytes`` when non-zero, else ``ratio`` percent of RAM less the huge page pools), and
the kernel's own figures ``CommitLimit`` / ``Committed_AS`` / ``SwapTotal`` of ``/proc/meminfo``
(Documentation/mm/overcommit-accounting.rst). Everything goes through the probe's file access
object, so a snapshot root or a test tree stands in for the live machine.

A file that cannot be read (a container whose /proc/sys is masked, an old snapshot) gives
``None``: the check that reads this says nothing rather than guess a mode. In a container the
values, where readable, are the host's (vm.* is not namespaced), which the check says.
"""

from __future__ import annotations

import re

from pmem_advisor.probes.reading import ProbeContext

SYSCTL_DIR = "/proc/sys/vm"
MODES = {0: "heuristic", 1: "always", 2: "never"}  # the kernel document's names


def _meminfo_kb(meminfo: str, key: str) -> int | None:
    m = re.search(rf"^{key}:\s+(\d+)\s*kB", meminfo, re.MULTILINE)
    return int(m.group(1)) if m else None


def read_overcommit(ctx: ProbeContext) -> dict:
    """{memory, ratio, kbytes, commit_limit_bytes, committed_bytes, swap_bytes}; a value the
    machine does not show is None (``memory`` None: not readable here, judge nothing)."""
    mode = ctx.integer(f"{SYSCTL_DIR}/overcommit_memory")
    if mode not in MODES:
        if mode is not None:
            ctx.warn(f"{SYSCTL_DIR}/overcommit_memory: {mode} is not a mode the kernel has")
        mode = None
    meminfo = ctx.text("/proc/meminfo") or ""

    def kb(key: str) -> int | None:
        value = _meminfo_kb(meminfo, key)
        return None if value is None else value * 1024

    ratio = ctx.integer(f"{SYSCTL_DIR}/overcommit_ratio")
    kbytes = ctx.integer(f"{SYSCTL_DIR}/overcommit_kbytes")
    limit = kb("CommitLimit")
    if limit is None and ratio is not None:  # a tree without the line: the kernel's formula
        limit = commit_limit(kb("MemTotal"), _hugetlb_bytes(meminfo), kb("SwapTotal") or 0,
                             ratio, kbytes or 0)
    return {
        "memory": mode,
        "ratio": ratio,
        "kbytes": kbytes,
        # the kernel's own limit (enforced only in mode 2, shown in every mode)
        "commit_limit_bytes": limit,
        "committed_bytes": kb("Committed_AS"),
        "swap_bytes": kb("SwapTotal"),
    }


def _hugetlb_bytes(meminfo: str) -> int:
    """Every huge page pool's size (``Hugetlb:``), else the default pool's pages x size."""
    total = _meminfo_kb(meminfo, "Hugetlb")
    if total is not None:
        return total * 1024
    pages = re.search(r"^HugePages_Total:\s+(\d+)", meminfo, re.MULTILINE)
    size = _meminfo_kb(meminfo, "Hugepagesize")
    return int(pages.group(1)) * size * 1024 if pages and size else 0


def commit_limit(total: int | None, hugetlb: int, swap: int, ratio: int,
                 kbytes: int) -> int | None:
    """mm/util.c vm_commit_limit(): overcommit_kbytes when set, else ratio percent of the RAM
    the huge page pools leave, plus swap."""
    if kbytes:
        return kbytes * 1024 + swap
    if total is None:
        return None
    return (total - hugetlb) * ratio // 100 + swap
