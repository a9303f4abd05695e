"""MySQL/MariaDB baseline for a dedicated server (MySQL's innodb_dedicated_server sizing).

Every threshold carries its reason; the PMEM rules of ``rules/catalog`` adjust the result.
"""

from __future__ import annotations

from pmem_advisor.rules.facts import Facts
from pmem_advisor.rules.model import PRIORITY_BASELINE, Bytes, Rule, Set

MB, GB = 1 << 20, 1 << 30

CONNECTIONS = {"oltp": 300, "olap": 40, "mixed": 100, "kv": 200}
# Background flushing rate the device sustains (IOPS budget): spindle, SSD, NVMe/PMEM.
IO_CAPACITY = {"hdd": 200, "ssd": 2000, "nvme": 10000, "pmem": 10000, "cxl": 10000}


def medium(f: Facts) -> str:
    m = f.data.medium if f.data is not None else "unknown"
    return "ssd" if m in ("unknown", "tmpfs") else m


def buffer_pool(f: Facts) -> int:
    ram = f.memory_bytes
    if ram < 1 * GB:  # too small to give away: keep MySQL's default
        return 128 * MB
    if ram <= 4 * GB:  # the OS and connections still need half
        return ram // 2
    return ram * 3 // 4  # dedicated server: InnoDB caches itself (O_DIRECT)


def redo(f: Facts) -> dict[str, object]:
    if f.mariadb:  # one ib_logfile0; ~1/4 of the pool keeps checkpoints rare
        return {"innodb_log_file_size": Bytes(min(max(buffer_pool(f) // 4, 96 * MB), 16 * GB))}
    if f.version_at_least(8, 0, 30):  # dedicated server: CPUs/2 GB, at most 16 GB
        cap = min(max(f.cpus // 2, 1) * GB, 16 * GB, max(f.memory_bytes // 4, 100 * MB))
        return {"innodb_redo_log_capacity": Bytes(cap)}
    ram = f.memory_bytes  # before 8.0.30: per-file size by RAM, 2 files
    size = (48 * MB if ram < 1 * GB else 128 * MB if ram <= 4 * GB else
            512 * MB if ram <= 8 * GB else 1 * GB if ram <= 16 * GB else 2 * GB)
    return {"innodb_log_file_size": Bytes(size), "innodb_log_files_in_group": 2}


def io(f: Facts) -> dict[str, object]:
    m = medium(f)
    cap = IO_CAPACITY.get(m, 2000)
    # io_capacity_max: the server's own rule, max(2 x io_capacity, 2000). A lower ceiling
    # throttles the page cleaner when the redo log fills: measured here, MariaDB 10.11
    # sysbench write-only fell from ~5,400 to ~1,200 tps with 200/400 on a virtio disk.
    out: dict[str, object] = {"innodb_io_capacity": cap,
                              "innodb_io_capacity_max": max(2 * cap, 2000),
                              "innodb_flush_neighbors": 1 if m == "hdd" else 0}  # seeks only
    if not (f.mariadb and f.version_at_least(11, 0)):  # 11.0 deprecated innodb_flush_method
        out["innodb_flush_method"] = "O_DIRECT"  # no double caching with the page cache
    return out


def settings(f: Facts) -> dict[str, object]:
    pool = buffer_pool(f)
    out: dict[str, object] = {
        "innodb_buffer_pool_size": Bytes(pool),
        **redo(f), **io(f),
        "max_connections": f.clients + 10 if f.clients else CONNECTIONS[f.workload],
        "innodb_log_buffer_size": Bytes(64 * MB if f.workload != "olap" else 16 * MB),
    }
    return out


class MysqlBaseline(Rule):
    id = "MY-BASE"
    title = "MySQL/MariaDB dedicated-server sizing"
    insights = ()
    paper = "MySQL innodb_dedicated_server"
    priority = PRIORITY_BASELINE
    engines = ("mysql",)

    def condition(self, f: Facts) -> bool:
        return True

    def effects(self, f: Facts):
        why = {"innodb_buffer_pool_size": "dedicated server: 50% of RAM up to 4 GB, then 75%",
               "innodb_redo_log_capacity": "dedicated server: CPUs/2 GB, at most 16 GB",
               "innodb_log_file_size": "redo sized to the buffer pool / RAM",
               "innodb_flush_method": "O_DIRECT: no double caching in the OS page cache"}
        return [Set(k, v, f"baseline: {why.get(k, 'sized for ' + medium(f) + ', ' + f.workload)}")
                for k, v in settings(f).items()]
