"""PM041 InnoDB's buffer pool in large pages, with the OS steps MariaDB/MySQL need.

Anti-pattern: a multi-GiB buffer pool on 4 KiB pages: TLB misses on every page access and
page-table memory. MySQL and MariaDB put the buffer pool in huge pages with ``large_pages``
(MySQL manual "Enabling Large Page Support"; MariaDB KB "large_pages"); the server falls back
to normal pages, with a warning in its error log, when the pool is missing or it may not use
it, so the OS steps come with it:
- ``vm.nr_hugepages`` reserving the pages (buffer pool plus InnoDB's per-page descriptors,
  about 5% of the pool and allocated with it, plus 16 MiB of other large buffers);
- ``vm.hugetlb_shm_group`` = the server's group: MySQL allocates them as System V shared
  memory with SHM_HUGETLB, which needs that group (or CAP_IPC_LOCK);
- ``LimitMEMLOCK=infinity`` for the service: the pages are locked in memory, and the default
  memlock limit (8 MiB on systemd) refuses them (the MariaDB KB's step).

Recommendation (from a 2 GiB buffer pool): large_pages = ON with the three steps, each with
the count.
"""

from pmem_advisor.engines.mysql import baseline
from pmem_advisor.probes.hugepages import pages_needed, pool_for
from pmem_advisor.probes.summary import human_bytes
from pmem_advisor.rules.catalog.PM040_pg_huge_pages import (
    MIN_SHARED_BUFFERS,
    pool_shortfall,
    sysctl_step,
    winning_bytes,
)
from pmem_advisor.rules.model import PRIORITY_SPEED, OsStep, Rule, Set

DESCRIPTOR_SHARE = 0.06  # InnoDB's buf_block_t per 16 KiB page (~5%), rounded up
OTHER_LARGE = 16 << 20  # adaptive hash / log buffer parts that also ask for large pages


class MysqlLargePages(Rule):
    id = "PM041"
    title = "InnoDB buffer pool in large pages, with the pool, group and memlock steps"
    insights = ()
    paper = ("MySQL manual: Enabling Large Page Support; MariaDB KB: large_pages (not from the "
             "seed papers)")
    priority = PRIORITY_SPEED
    engines = ("mysql",)

    def condition(self, f):
        return self._pool(f) >= MIN_SHARED_BUFFERS

    def _pool(self, f) -> int:
        return winning_bytes(f, "innodb_buffer_pool_size", baseline.buffer_pool(f), self.id)

    def effects(self, f):
        pool_bytes = self._pool(f)
        hp = (f.profile.get("limits") or {}).get("hugepages") or {}
        size = hp.get("default_size_bytes") or 2 << 20
        segment = int(pool_bytes * (1 + DESCRIPTOR_SHARE)) + OTHER_LARGE
        need = pages_needed(segment, size)
        target = pool_shortfall(pool_for(hp, size), need)
        service = "mariadb.service" if f.mariadb else "mysql.service"
        user = "mysql"
        out: list = [Set("large_pages", "ON",
                         f"innodb_buffer_pool_size {human_bytes(pool_bytes)}: huge pages cut "
                         "TLB misses and page tables; without the pool the server falls back to "
                         "normal pages (a warning in its error log)")]
        count_why = (f"{need} x {human_bytes(size)} pages for the buffer pool "
                     f"{human_bytes(pool_bytes)} + ~6% page descriptors + 16 MB")
        if target is not None:
            out.append(sysctl_step(target, size, count_why, f))
        else:  # said on the setting itself: a Note would become a finding in `check`
            out[0] = Set("large_pages", "ON", out[0].reason + f"; the huge page pool already "
                         f"has the {need} free pages ({count_why})")
        out.append(OsStep(f"printf 'vm.hugetlb_shm_group = %s\\n' \"$(id -g {user})\" > "
                          "/etc/sysctl.d/61-pmem-advisor-hugetlb-group.conf && sysctl -p "
                          "/etc/sysctl.d/61-pmem-advisor-hugetlb-group.conf",
                          f"the server allocates large pages as SysV shared memory: its group "
                          f"({user}) must be allowed", key="vm.hugetlb_shm_group"))
        out.append(OsStep(f"systemctl edit {service}: [Service] LimitMEMLOCK=infinity",
                          "large pages are locked in memory; the default memlock limit refuses "
                          "them", key="memlock"))
        return out


RULE = MysqlLargePages()
