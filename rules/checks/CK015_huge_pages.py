"""CK015 Huge pages asked for but not there: a refused start, or a silent fallback.

Anti-pattern: PostgreSQL ``huge_pages = on`` with a huge page pool smaller than the shared
memory segment (the server refuses to start), ``huge_pages = try`` with too small a pool (it
falls back to normal pages without a word: more TLB misses and page-table memory per
backend), and InnoDB ``large_pages = ON`` without the pages (InnoDB falls back with a warning in
the error log). A running PostgreSQL 17+ says which one it got (``huge_pages_status``); 15+
reports the pages it needs (``shared_memory_size_in_huge_pages``).

Recommendation: a pool (``vm.nr_hugepages``) with at least the pages the server needs free
before it starts (PM040/PM041 size it for ``recommend``); ``huge_pages = try`` unless a
refused start is preferable to a slow one.

Sources: PostgreSQL manual §19.4.5 (Linux huge pages), §20.4.1 (huge_pages, huge_page_size),
§20.15 (shared_memory_size_in_huge_pages, huge_pages_status); MySQL 8.4 manual §10.12.3.3
(large page support); MariaDB KB large_pages; Linux Documentation/admin-guide/mm/hugetlbpage.
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding, human_bytes


class HugePages(Check):
    id = "CK015"
    title = "Huge pages asked for but not in the pool"
    source = "PostgreSQL manual §19.4.5, §20.4.1, §20.15; MySQL 8.4 manual §10.12.3.3"
    engines = ("postgres", "mysql")
    replaces = ("PM040", "PM041")

    def run(self, inp: CheckInput) -> list[Finding]:
        if not inp.settings:
            return []
        from pmem_advisor.probes.hugepages import pages_needed, pool_for

        hp = (inp.facts.profile.get("limits") or {}).get("hugepages") or {}
        if inp.facts.pg:
            mode = str(inp.value("huge_pages", default=True) or "").lower()
            if mode not in ("on", "try"):
                return []
            size_kb = inp.value("huge_page_size", default=True)
            size = int(size_kb) * 1024 if isinstance(size_kb, int) and size_kb else None
            pool = pool_for(hp, size)
            if pool is None:
                return []
            if mode == "try" and "huge_pages" not in inp.where and not pool.get("total"):
                return []  # the default on a host without a pool: normal pages, as expected
            need = self._pg_pages(inp, pool["size_bytes"], pages_needed)
            what = "PostgreSQL's shared memory"
        else:
            if str(inp.value("large_pages") or "").lower() not in ("on", "true", "1"):
                return []
            pool = pool_for(hp)
            if pool is None:
                return []
            bp = inp.value("innodb_buffer_pool_size", default=True)
            need = pages_needed(int(bp), pool["size_bytes"]) if isinstance(bp, int) else 0
            mode, what = "try", "the InnoDB buffer pool"
        if not need:
            return []
        page = human_bytes(int(pool["size_bytes"]))
        subject = "huge_pages" if inp.facts.pg else "large_pages"
        if inp.source == "server":
            if str(inp.text("huge_pages_status") or "").lower() == "off":
                return [self.finding(
                    "warn", subject, f"huge_pages = {mode} but the server runs on normal "
                    f"pages (huge_pages_status off): the pool of {page} pages has "
                    f"{pool.get('total', 0)}, {what} needs {need}",
                    f"reserve at least {need} pages (vm.nr_hugepages) and restart the server")]
            used = (pool.get("total") or 0) - (pool.get("free") or 0) + (pool.get("reserved") or 0)
            if used >= need or inp.facts.version_at_least(17) and inp.facts.pg:
                return []
            return [self.finding(
                "warn", subject, f"{what} needs {need} pages of {page}, but only {used} are "
                "in use or reserved: the server probably fell back to normal pages",
                f"reserve at least {need} pages (vm.nr_hugepages) and restart the server")]
        free = pool.get("free") or 0
        if free >= need:
            return []
        if inp.budget is not None and inp.budget.target_host:
            return [self.finding(
                "info", subject, f"{what} needs {need} pages of {page} on the target host "
                "(--memory/--cpus): this machine's pool says nothing of that host's",
                f"reserve {need} pages (sysctl vm.nr_hugepages) on the target host")]
        if mode == "on":
            return [self.finding(
                "fail", "huge_pages", f"huge_pages = on{inp.at('huge_pages')} needs {need} "
                f"free pages of {page} for {what}; the pool has {free} free: PostgreSQL refuses "
                "to start", f"reserve {need} pages (sysctl vm.nr_hugepages) or use "
                "huge_pages = try")]
        return [self.finding(
            "warn", subject, f"{what} needs {need} pages of {page}; the pool has {free} "
            "free: the server falls back to normal pages", f"reserve {need} pages "
            "(sysctl vm.nr_hugepages) before the server starts")]

    def _pg_pages(self, inp: CheckInput, page_bytes: int, pages_needed) -> int:
        reported = inp.value("shared_memory_size_in_huge_pages")
        if inp.source == "server" and isinstance(reported, int) and reported > 0:
            return reported
        from pmem_advisor.probes.hugepages import pg_shared_memory_bytes

        sb = inp.value("shared_buffers", default=True)
        wb = inp.value("wal_buffers", default=True)
        conns = inp.value("max_connections", default=True)
        if not isinstance(sb, int):
            return 0
        segment = pg_shared_memory_bytes(sb * 8192, wb * 8192 if isinstance(wb, int) and wb > 0
                                         else None, conns if isinstance(conns, int) else 100)
        return pages_needed(segment, page_bytes)


CHECK = HugePages()
