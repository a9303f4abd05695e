"""PM040 PostgreSQL's shared memory in huge pages, with the pool it needs.

Anti-pattern: a large shared_buffers mapped with 4 KiB pages. Every backend that touches the
buffer cache maps it with its own page table: 8 bytes of page table per 4 KiB page per
process, so 8 GiB of shared_buffers costs 16 MiB of page tables in each of 300 backends
(4.7 GiB), and TLB misses on every buffer access. The PostgreSQL manual (runtime-config-
resource, "huge_pages"; kernel-resources, "Linux Huge Pages") recommends huge pages for large
shared memory; the pool must be reserved by the OS first (vm.nr_hugepages), else huge_pages=try
silently falls back to normal pages and huge_pages=on refuses to start.

Recommendation (from 2 GiB of shared_buffers, where page tables reach hundreds of MiB at the
default connection counts): huge_pages = try (on would turn a missing pool into an outage), the
OS step reserving the pages (the count from shared_buffers, wal_buffers and the connections,
probes/hugepages.py; on a running server ``postgres -D DATADIR -C
shared_memory_size_in_huge_pages`` gives PostgreSQL's own count), and huge_page_size = 1GB
when a 1 GiB pool already covers the segment. Reserved huge pages leave the RAM left for
everything else: the note says so.
"""

from pmem_advisor.engines.postgres import baseline
from pmem_advisor.probes.hugepages import pages_needed, pg_shared_memory_bytes, pool_for
from pmem_advisor.probes.summary import human_bytes
from pmem_advisor.rules.model import PRIORITY_SPEED, Bytes, OsStep, Rule, Set

MIN_SHARED_BUFFERS = 2 << 30
SYSCTL_FILE = "/etc/sysctl.d/60-pmem-advisor-hugepages.conf"


def winning_bytes(f, knob: str, fallback: int, exclude: str) -> int:
    """The size the recommendation will really set for ``knob``: another rule's Set wins over
    the baseline as the engine merges them (highest priority, then the later rule id), e.g.
    PM011's 40% shared_buffers on DAX. (rules/fit.py may still lower a MySQL buffer pool to
    fit the budget: the pool is then a little larger than needed, never too small.)"""
    from pmem_advisor.rules.registry import all_rules

    best = None
    for rule in all_rules(f.engine):  # no other engine's baseline can set its knob
        if rule.id == exclude or not rule.id.startswith("PM"):
            continue
        for e in rule.evaluate(f):
            if isinstance(e, Set) and e.name == knob and isinstance(e.value, Bytes) \
                    and (best is None or (rule.priority, rule.id) > best[0]):
                best = ((rule.priority, rule.id), e.value.n)
    return best[1] if best else fallback


def host_wide_text(f, need_bytes: int = 0) -> str:
    """vm.nr_hugepages is the host's: a server in a container or a limited cgroup cannot set
    it, and cgroup v2 caps huge pages separately (hugetlb.<size>.max), not in memory.max."""
    limits = f.profile.get("limits") or {}
    overlay_root = any(m.get("mountpoint") == "/" and m.get("fstype") == "overlay"
                       for m in f.profile.get("mounts") or [])
    if not (overlay_root or limits.get("memory_max_bytes") or limits.get("cpu_quota_cpus")):
        return ""
    text = ("; the server runs in a container or a limited cgroup: vm.nr_hugepages is a "
            "host-wide setting, so run this on the host and let the cgroup's hugetlb limit "
            "(hugetlb.2MB.max; Kubernetes: hugepages-2Mi) allow these pages")
    allowed = (limits.get("hugetlb_max_bytes") or {}).get("2MB")
    if allowed is not None and allowed < need_bytes:
        text += (f" (it allows {human_bytes(allowed)} today, "
                 f"{(limits.get('sources') or {}).get('hugetlb_max_bytes.2MB')})")
    return text


def sysctl_step(pages: int, page_bytes: int, count_why: str, f) -> OsStep:
    """The OS step reserving ``pages`` huge pages of the default size, persistent across
    reboots, with the count's reason and what reserving costs."""
    return OsStep(
        f"printf 'vm.nr_hugepages = {pages}\\n' > {SYSCTL_FILE} && sysctl -p {SYSCTL_FILE}",
        f"{count_why}; the {human_bytes(pages * page_bytes)} reserved are taken from the RAM "
        "every other process can use: reserve at boot or soon after, before memory fragments"
        + host_wide_text(f, pages * page_bytes), key="vm.nr_hugepages")


def pool_shortfall(pool: dict | None, need: int) -> int | None:
    """The vm.nr_hugepages value that leaves ``need`` free pages, or None when the pool
    already has them. An unknown pool (no probe data) counts as empty."""
    total = (pool or {}).get("total") or 0
    free = (pool or {}).get("free") or 0
    if free >= need:
        return None
    return total - free + need


class PgHugePages(Rule):
    id = "PM040"
    title = "PostgreSQL shared memory in huge pages, with the pool reserved"
    insights = ()
    paper = "PostgreSQL manual: huge_pages, Linux Huge Pages (not from the seed papers)"
    priority = PRIORITY_SPEED
    engines = ("postgres",)

    def condition(self, f):
        return self._shared(f) >= MIN_SHARED_BUFFERS

    def _shared(self, f) -> int:
        return winning_bytes(f, "shared_buffers", baseline.memory(f)["shared_buffers"].n,
                             self.id)

    def effects(self, f):
        mem = baseline.memory(f)
        shared = self._shared(f)
        wal = winning_bytes(f, "wal_buffers", mem["wal_buffers"].n, self.id)
        segment = pg_shared_memory_bytes(shared, wal, baseline.connections(f))
        hp = (f.profile.get("limits") or {}).get("hugepages") or {}
        size = hp.get("default_size_bytes") or 2 << 20
        out: list = [Set("huge_pages", "try",
                         f"shared_buffers {human_bytes(shared)}: huge pages shrink every "
                         "backend's page tables and TLB misses; try (not on) so a missing pool "
                         "falls back instead of refusing to start")]
        giant = pool_for(hp, 1 << 30)
        if giant and (giant.get("free") or 0) >= pages_needed(segment, 1 << 30) \
                and f.version_at_least(14):
            size = 1 << 30
            out.append(Set("huge_page_size", Bytes(size),
                           "a free 1 GiB huge page pool covers the whole shared segment"))
        need = pages_needed(segment, size)
        target = pool_shortfall(pool_for(hp, size), need)
        count_why = (f"{need} x {human_bytes(size)} pages for a {human_bytes(segment)} segment "
                     f"(shared_buffers + wal_buffers + ~16 MB + 64 kB per connection); "
                     "on the running server `postgres -D DATADIR -C "
                     "shared_memory_size_in_huge_pages` gives PostgreSQL's exact count")
        if target is not None:
            out.append(sysctl_step(target, size, count_why, f))
        else:  # said on the setting itself: a Note would become a finding in `check`
            out[0] = Set("huge_pages", "try", out[0].reason + f"; the huge page pool already "
                         f"has the {need} free pages the segment needs ({count_why})")
        return out


RULE = PgHugePages()
