"""MySQL/MariaDB baseline for a dedicated server (MySQL's innodb_dedicated_server sizing).

Every threshold carries its reason; the PMEM rules of ``rules/catalog`` adjust the result.
"""

from __future__ import annotations

from pmem_advisor.engines.mysql.memory import largest_running_as_set
from pmem_advisor.rules.facts import Facts
from pmem_advisor.rules.model import PRIORITY_BASELINE, Bytes, Rule, Set

MB, GB = 1 << 20, 1 << 30

CONNECTIONS = {"oltp": 300, "olap": 40, "mixed": 100, "kv": 200}
# Background flushing budget per medium ("as low as practical": a measurement only caps it).
IO_CAPACITY = {"hdd": 200, "ssd": 2000, "nvme": 10000, "pmem": 10000, "cxl": 10000}


def medium(f: Facts) -> str:
    m = f.data.medium if f.data is not None else "unknown"
    return "ssd" if m in ("unknown", "tmpfs") else m


def pool_share(f: Facts) -> int | None:
    """The dedicated server's share of the memory for the pool; None under 1 GB (too small
    to give away: MySQL's default is kept)."""
    ram = f.memory_bytes
    if ram < 1 * GB:
        return None
    if ram <= 4 * GB:  # the OS and connections still need half
        return ram // 2
    return ram * 3 // 4  # dedicated server: InnoDB caches itself (O_DIRECT)


def buffer_pool(f: Facts) -> int:
    share = pool_share(f)
    if share is None:
        return 128 * MB
    # a size the server runs as written: MySQL rounds a pool up to whole chunks x instances
    # (1.5 GB with 8.0's 8 instances runs 2 GB), past the share the budget gave it
    return largest_running_as_set(share, flavour="mariadb" if f.mariadb else "mysql",
                                  version=f.version, cpus=f.cpus)


def redo(f: Facts) -> dict[str, object]:
    """innodb_dedicated_server's redo sizing, per version (MySQL 8.0/8.4 manuals, "Enabling
    Automatic InnoDB Configuration for a Dedicated MySQL Server")."""
    if f.mariadb:  # one ib_logfile0; ~1/4 of the pool keeps checkpoints rare
        return {"innodb_log_file_size": Bytes(min(max(buffer_pool(f) // 4, 96 * MB), 16 * GB))}
    if f.version_at_least(8, 4):  # 8.4: CPU-based, (logical CPUs / 2) GB, at most 16 GB
        cap = min(max(f.cpus, 1) * GB // 2, 16 * GB)
        # ... but not above the pool: under 1 GB of RAM the dedicated server keeps the 128 MB
        # pool, and a redo larger than the pool it protects buys few checkpoints (CK019)
        return {"innodb_redo_log_capacity": Bytes(min(cap, max(buffer_pool(f), 100 * MB)))}
    ram_gb = f.memory_bytes / GB
    if f.version_at_least(8, 0, 30):  # 8.0.30+: memory-based capacity (8.0 manual Table 17.9)
        if ram_gb <= 2:
            cap = 100 * MB  # the default
        elif ram_gb <= 4:
            cap = 1 * GB
        elif ram_gb <= 10.66:
            cap = _half_up(0.75 * ram_gb) * GB // 2
        elif ram_gb <= 170.66:
            cap = _half_up(0.5625 * ram_gb) * GB
        else:
            cap = 128 * GB
        return {"innodb_redo_log_capacity": Bytes(cap)}
    if f.version_at_least(8, 0, 14):  # 8.0.14-8.0.29: file size and count by the pool
        pool_gb = buffer_pool(f) / GB
        size = 512 * MB if pool_gb < 8 else 1 * GB if pool_gb <= 128 else 2 * GB
        files = (_half_up(pool_gb) if pool_gb < 8 else _half_up(pool_gb * 0.75)
                 if pool_gb <= 128 else 64)
        return {"innodb_log_file_size": Bytes(size), "innodb_log_files_in_group": max(2, files)}
    # before 8.0.14: per-file size by RAM, 2 files
    size = (48 * MB if ram_gb < 1 else 128 * MB if ram_gb <= 4 else
            512 * MB if ram_gb <= 8 else 1 * GB if ram_gb <= 16 else 2 * GB)
    return {"innodb_log_file_size": Bytes(size), "innodb_log_files_in_group": 2}


def _half_up(x: float) -> int:
    return int(x + 0.5)


def measured_write_iops(f: Facts) -> int | None:
    """The data device's write IOPS as the probe measured them (fio/native), if it did."""
    m = (f.data.measured or {}) if f.data is not None else {}
    iops = m.get("write_iops")
    return int(iops) if isinstance(iops, int | float) and iops > 0 else None


def io_capacity(f: Facts) -> int:
    """Background flushing budget: the medium class's typical figure, never above half the
    measured write IOPS (the other half stays for foreground writes and the redo log).

    The manual's rule is "as low as practical, but not so low that background activities fall
    behind" (MySQL 8.0, Configuring InnoDB I/O Capacity: about 1000 for a higher-end SSD).
    A measured IOPS figure is the device's peak at queue depth 32, not the flushing rate a
    workload needs, so it only caps the budget: on this VM's disk (75,483 write IOPS) half of
    it, 20,000 / 40,000, ran MariaDB 10.11 sysbench write-only at 1 GiB slower than 2,000 /
    4,000 (real server, 11 interleaved rounds: 2,000 / 4,000 +21.0% [+6.8%, +37.1%], p 0.0068;
    up to +53% in rounds where the disk ran slow, alike where it ran fast; read-write +3.0%,
    p 0.54): the flushing it asked for took the disk from the commits."""
    typical = IO_CAPACITY.get(medium(f), 2000)
    iops = measured_write_iops(f)
    if iops is not None:
        return max(100, min(iops // 2, typical))  # 100: the server's minimum
    return typical


def io(f: Facts) -> dict[str, object]:
    m = medium(f)
    cap = io_capacity(f)
    # io_capacity_max: the server's own rule, max(2 x io_capacity, 2000). A lower ceiling
    # throttles the page cleaner when the redo log fills: measured here, MariaDB 10.11
    # sysbench write-only fell from ~5,400 to ~1,200 tps with 200/400 on a virtio disk.
    out: dict[str, object] = {"innodb_io_capacity": cap,
                              "innodb_io_capacity_max": max(2 * cap, 2000),
                              "innodb_flush_neighbors": 1 if m == "hdd" else 0}  # seeks only
    if not (f.mariadb and f.version_at_least(11, 0)):  # 11.0 deprecated innodb_flush_method
        out["innodb_flush_method"] = "O_DIRECT"  # no double caching with the page cache
    return out


def temptable_ram(f: Facts) -> int:
    """MySQL 8.4's own default (3% of RAM, 1-4 GB) applied to the budget, not the host: on a
    container the server sees the host's RAM. At most 1/16 of the budget, because the 1 GB
    floor is a quarter of a 4 GB cgroup and would crowd out the buffer pool in the worst case."""
    own = min(max(f.memory_bytes * 3 // 100, 1 * GB), 4 * GB)
    return max(2 * MB, min(own, f.memory_bytes // 16) // MB * MB)  # 2 MB: the server minimum


# Above the application's clients, for the DBA's sessions, monitoring and backup tools (the
# server keeps one more for an account with CONNECTION_ADMIN/SUPER by itself).
TOOL_CONNECTIONS = 10


def connections_reason(f: Facts) -> str:
    if f.clients:
        return (f"{f.clients} clients (--clients) + {TOOL_CONNECTIONS} for monitoring, backup "
                "and admin sessions (the server adds 1 for CONNECTION_ADMIN itself)")
    return (f"{CONNECTIONS[f.workload]} for {f.workload} (no --clients given; pass it: the "
            f"clients + {TOOL_CONNECTIONS} reserved are sized then)")


def log_buffer(f: Facts) -> int:
    """The redo log buffer holds what transactions write between flushes; with a commit flush
    per transaction only large transactions need more than the servers' 16 MB default. 64 MB
    for writes, but at most 1/64 of the budget (16 MB at 1 GiB), so a small budget keeps it
    for the buffer pool; OLAP loads keep the default."""
    if f.workload == "olap":
        return 16 * MB
    return max(16 * MB, min(64 * MB, f.memory_bytes // 64 // MB * MB))


def mariadb_side_caches(f: Facts) -> dict[str, object]:
    """MariaDB's MyISAM key cache and Aria page cache take 128 MB each by default, allocated at
    start, which a 1 GiB budget then takes from the buffer pool. On an InnoDB server no table
    of ours is MyISAM (MariaDB's system and internal temporary tables are Aria): MariaDB KB,
    "Optimizing key_buffer_size": without MyISAM tables "a very low value, such as 64K"; we
    keep 1/64 of the budget, 8-128 MB, for MyISAM tables a tool may create. The Aria cache
    serves internal on-disk temporary tables only (aria_used_for_temp_tables): 1/32 of the
    budget, 16-128 MB (the default from 4 GiB up)."""
    return {"key_buffer_size": Bytes(max(8 * MB, min(128 * MB, f.memory_bytes // 64 // MB * MB))),
            "aria_pagecache_buffer_size": Bytes(max(16 * MB, min(128 * MB,
                                                                 f.memory_bytes // 32 // MB * MB)))}


def settings(f: Facts) -> dict[str, object]:
    pool = buffer_pool(f)
    out: dict[str, object] = {
        "innodb_buffer_pool_size": Bytes(pool),
        **redo(f), **io(f),
        "max_connections": f.clients + TOOL_CONNECTIONS if f.clients else CONNECTIONS[f.workload],
        "innodb_log_buffer_size": Bytes(log_buffer(f)),
    }
    if f.mariadb:  # MariaDB has no TempTable engine (tmp_table_size bounds its temp tables)
        out.update(mariadb_side_caches(f))
    else:
        out["temptable_max_ram"] = Bytes(temptable_ram(f))
    if not f.mariadb and f.version_at_least(8, 4) and f.cpus < f.logical_total:
        # 8.4's default is the host's logical CPUs / 2 (at least 4): a cgroup or cpuset with
        # fewer CPUs gets the budget's instead
        out["innodb_read_io_threads"] = max(4, f.cpus // 2)
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
        iops = measured_write_iops(f)
        share = pool_share(f)
        if share is None:
            pool_why = ("dedicated server: under 1 GB of RAM the 128 MB default is kept (50% "
                        "of RAM from 1 GB up to 4 GB, then 75%)")
        else:
            pool_why = "dedicated server: 50% of RAM up to 4 GB, then 75%"
            if buffer_pool(f) < share // MB * MB:
                pool_why += (", rounded down to a size MySQL runs as written (it rounds a pool "
                             "up to whole chunks x instances)")
        why = {"innodb_buffer_pool_size": pool_why,
               "innodb_io_capacity": (f"typical for {medium(f)} ('as low as practical': MySQL "
                                      "manual, Configuring InnoDB I/O Capacity)"
                                      + (f", at most half the measured {iops} write IOPS"
                                         if iops else "")),
               "innodb_flush_neighbors": ("1: neighbour flushing saves seeks on a spinning disk"
                                          if medium(f) == "hdd" else
                                          "0: flash has no seeks to save"),
               "innodb_redo_log_capacity": ("dedicated server 8.4: logical CPUs/2 GB, at most "
                                            "16 GB and at most the buffer pool (a larger "
                                            "redo buys few checkpoints: CK019)"
                                            if f.version_at_least(8, 4) else
                                            "dedicated server 8.0.30+: by RAM"),
               "temptable_max_ram": ("3% of the budget, 1-4 GB (8.4's default, which reads the "
                                     "host's RAM), at most 1/16 of the budget so the worst case "
                                     "keeps the buffer pool"),
               "innodb_read_io_threads": (f"the budget's {f.cpus} CPUs / 2, at least 4: 8.4's "
                                          "default would count the host's "
                                          f"{f.logical_total} logical CPUs"),
               "innodb_log_file_size": "dedicated server: redo sized to the buffer pool / RAM",
               "innodb_log_files_in_group": "dedicated server 8.0.14+: files by buffer pool",
               "innodb_flush_method": ("O_DIRECT: no double caching in the OS page cache (8.0's "
                                       "dedicated server would pick O_DIRECT_NO_FSYNC, a "
                                       "durability risk: not followed)"),
               "innodb_log_buffer_size": ("what transactions write between commit flushes: 64 MB "
                                          "for writes, at most 1/64 of the budget, at least the "
                                          "16 MB default" if f.workload != "olap" else
                                          "the servers' 16 MB default: OLAP loads write little"),
               "key_buffer_size": ("MyISAM key cache: no table of an InnoDB server is MyISAM "
                                   "(MariaDB KB: 'a very low value' without MyISAM tables): "
                                   "1/64 of the budget, 8-128 MB"),
               "aria_pagecache_buffer_size": ("Aria page cache: internal on-disk temporary "
                                              "tables only: 1/32 of the budget, 16-128 MB"),
               "max_connections": connections_reason(f)}
        return [Set(k, v, f"baseline: {why.get(k, 'sized for ' + medium(f) + ', ' + f.workload)}")
                for k, v in settings(f).items()]
