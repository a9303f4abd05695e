"""Huge page pools and transparent huge pages, and how many pages a shared segment needs.

Read from ``/proc/meminfo`` (``HugePages_Total/Free/Rsvd/Surp``, ``Hugepagesize``: the default
pool) and ``/sys/kernel/mm/hugepages/hugepages-<N>kB/{nr,free,resv,surplus}_hugepages`` (every
pool, e.g. 2 MiB and 1 GiB); the THP mode is the bracketed word of
``/sys/kernel/mm/transparent_hugepage/enabled`` (``always [madvise] never``).

PostgreSQL maps its whole shared memory segment in huge pages (``huge_pages=on|try``) and
reports the count it needs as ``shared_memory_size_in_huge_pages`` (PostgreSQL 15+, also
with ``postgres -C`` on a stopped server): prefer that number when a server is reachable,
``pages_needed`` is the offline fallback. MariaDB/MySQL ``large_pages`` put the buffer pool
(and MariaDB's other large buffers) in huge pages and need ``memlock`` to lock them.
"""

from __future__ import annotations

import re

from pmem_advisor.probes.reading import ProbeContext

HUGEPAGES_DIR = "/sys/kernel/mm/hugepages"
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"
_MEMINFO_KEYS = {"HugePages_Total": "total", "HugePages_Free": "free",
                 "HugePages_Rsvd": "reserved", "HugePages_Surp": "surplus"}
_SYSFS_KEYS = {"nr_hugepages": "total", "free_hugepages": "free",
               "resv_hugepages": "reserved", "surplus_hugepages": "surplus"}

# PostgreSQL's segment beyond shared_buffers: wal_buffers plus the lock table, the proc array,
# SLRU buffers and hash tables, which grow with max_connections. PostgreSQL 15 here reports
# shared_memory_size = 143 MB for shared_buffers 128 MiB, wal_buffers 4 MiB and 100
# connections (11 MiB beyond the two buffers). We take 16 MiB + 64 KiB per connection (77 pages
# of 2 MiB where the server asks for 72): a few pages too many cost megabytes, one too few
# makes huge_pages=on refuse to start (and =try silently fall back to normal pages).
PG_FIXED_OVERHEAD = 16 << 20
PG_PER_CONNECTION = 64 << 10


def read_hugepages(ctx: ProbeContext) -> tuple[dict, str | None]:
    """({default_size_bytes, pools: [...]}, THP mode); absent files give empty values."""
    default_size = None
    meminfo = ctx.text("/proc/meminfo") or ""
    m = re.search(r"^Hugepagesize:\s+(\d+)\s*kB", meminfo, re.MULTILINE)
    if m:
        default_size = int(m.group(1)) * 1024
    pools = []
    for name in ctx.access.listdir(HUGEPAGES_DIR):
        m = re.fullmatch(r"hugepages-(\d+)kB", name)
        if not m:
            continue
        pool = {"size_bytes": int(m.group(1)) * 1024}
        for file, key in _SYSFS_KEYS.items():
            pool[key] = ctx.integer(f"{HUGEPAGES_DIR}/{name}/{file}")
        pools.append(pool)
    if not pools and default_size is not None:  # no sysfs (old kernel, container): meminfo only
        pool = {"size_bytes": default_size}
        for key, field in _MEMINFO_KEYS.items():
            m = re.search(rf"^{key}:\s+(\d+)", meminfo, re.MULTILINE)
            pool[field] = int(m.group(1)) if m else None
        pools.append(pool)
    pools.sort(key=lambda p: p["size_bytes"])
    return {"default_size_bytes": default_size, "pools": pools}, _thp_mode(ctx)


def _thp_mode(ctx: ProbeContext) -> str | None:
    text = ctx.text(THP_ENABLED)
    if text is None:
        return None
    m = re.search(r"\[(always|madvise|never)\]", text)
    if not m:
        ctx.warn(f"{THP_ENABLED}: malformed (no [mode] in {text[:40]!r})")
        return None
    return m.group(1)


def pages_needed(segment_bytes: int, page_bytes: int) -> int:
    """Huge pages that hold a segment of ``segment_bytes`` (rounded up: a partial page is a
    whole page)."""
    if page_bytes <= 0:
        raise ValueError("page size must be positive")
    return max(0, -(-int(segment_bytes) // int(page_bytes)))


def pg_shared_memory_bytes(shared_buffers: int, wal_buffers: int | None = None,
                           max_connections: int = 100) -> int:
    """PostgreSQL's main shared segment, estimated (see the constants above) when no server
    can report ``shared_memory_size``. ``wal_buffers`` default (-1): 1/32 of shared_buffers,
    64 KiB..16 MiB (the manual's rule)."""
    if wal_buffers is None or wal_buffers < 0:
        wal_buffers = min(max(shared_buffers // 32, 64 << 10), 16 << 20)
    return (int(shared_buffers) + int(wal_buffers) + PG_FIXED_OVERHEAD
            + PG_PER_CONNECTION * max(0, int(max_connections)))


def pool_for(hugepages: dict | None, size_bytes: int | None = None) -> dict | None:
    """The pool of ``size_bytes`` pages (default: the default size) in a ``limits.hugepages``."""
    if not hugepages:
        return None
    size = size_bytes or hugepages.get("default_size_bytes")
    return next((p for p in hugepages.get("pools") or [] if p.get("size_bytes") == size), None)
