"""Baseline formulas (pgtune / MySQL dedicated server) on ordinary hardware."""

from __future__ import annotations

from pmem_advisor.engines.mysql import baseline as mysql
from pmem_advisor.engines.postgres import baseline as postgres
from pmem_advisor.rules.facts import build_facts
from pmem_advisor.rules.model import Bytes
from tests.rules.machines import make_profile

GB, MB = 1 << 30, 1 << 20


def f(engine="postgres", machine="ssd", **kw):
    kw.setdefault("data_dir", "/srv/db")
    return build_facts(make_profile(machine), engine=engine, **kw)


def test_pg_memory_formulas():
    s = postgres.settings(f(memory_bytes=16 * GB))
    assert s["shared_buffers"] == Bytes(4 * GB)
    assert s["effective_cache_size"] == Bytes(12 * GB)
    assert s["maintenance_work_mem"] == Bytes(1 * GB)
    assert s["wal_buffers"] == Bytes(16 * MB)
    big = f(machine={"preset": "ssd", "memory_gb": 512})
    assert postgres.settings(big)["maintenance_work_mem"] == Bytes(8 * GB)
    # autovacuum: RAM/64 per worker, never more than maintenance_work_mem (PG 17+ uses it all)
    assert postgres.autovacuum_work_mem(f(memory_bytes=16 * GB))[0] == Bytes(256 * MB)
    assert postgres.autovacuum_work_mem(big)[0] == Bytes(8 * GB)


def test_pg_wal_sizes_by_workload_and_media():
    assert postgres.settings(f(workload="olap"))["max_wal_size"] == Bytes(16 * GB)
    assert postgres.settings(f(workload="oltp"))["min_wal_size"] == Bytes(2 * GB)
    hdd = build_facts(make_profile({"preset": "ssd", "mounts": {"/data": {"medium": "hdd"}}}),
                      engine="postgres", data_dir="/data/pg")
    assert postgres.io(hdd) == {"random_page_cost": 4.0, "effective_io_concurrency": 2}


def test_pg_parallel_workers():
    assert postgres.parallel(f(cpus=2)) == {}
    p = postgres.parallel(f(cpus=16))
    assert p["max_parallel_workers_per_gather"] == 4 and p["max_worker_processes"] == 16
    assert postgres.parallel(f(cpus=16, workload="olap"))["max_parallel_workers_per_gather"] == 8


def test_pg_connections_and_work_mem():
    fx = f(memory_bytes=16 * GB, clients=90, cpus=4)
    assert postgres.connections(fx) == 100
    assert postgres.work_mem(fx, 4) == Bytes((12 * GB) // ((100 + 4) * 3))


def test_mysql_dedicated_server_sizing():
    assert mysql.buffer_pool(f("mysql", memory_bytes=512 * MB)) == 128 * MB
    assert mysql.buffer_pool(f("mysql", memory_bytes=4 * GB)) == 2 * GB
    assert mysql.buffer_pool(f("mysql", memory_bytes=32 * GB)) == 24 * GB
    r = mysql.redo(f("mysql", flavour="mysql", version="8.4", cpus=8, memory_bytes=32 * GB))
    assert r == {"innodb_redo_log_capacity": Bytes(4 * GB)}
    # 8.0.14-8.0.29: 1 GB files, round(pool GB x 0.75) of them (24 GB pool -> 18)
    old = mysql.redo(f("mysql", flavour="mysql", version="8.0.20", memory_bytes=32 * GB))
    assert old == {"innodb_log_file_size": Bytes(1 * GB), "innodb_log_files_in_group": 18}
    older = mysql.redo(f("mysql", flavour="mysql", version="8.0.13", memory_bytes=32 * GB))
    assert older == {"innodb_log_file_size": Bytes(2 * GB), "innodb_log_files_in_group": 2}
    # 8.0.30+: memory-based capacity, round(0.5625 x 32) = 18 GB
    mid = mysql.redo(f("mysql", flavour="mysql", version="8.0.36", memory_bytes=32 * GB))
    assert mid == {"innodb_redo_log_capacity": Bytes(18 * GB)}
    maria = mysql.redo(f("mysql", flavour="mariadb", version="10.11", memory_bytes=32 * GB))
    assert maria == {"innodb_log_file_size": Bytes(6 * GB)}


def test_mysql_io_by_medium_and_flavour():
    assert mysql.io(f("mysql", flavour="mysql"))["innodb_io_capacity"] == 2000
    assert "innodb_flush_method" not in mysql.io(f("mysql", flavour="mariadb", version="11.4"))


def test_mysql_io_capacity_max_never_below_the_servers_own_floor():
    # The server's rule is max(2 x io_capacity, 2000); a lower ceiling starves the page
    # cleaner when the redo log fills (measured: 5,400 -> 1,200 tps on MariaDB 10.11).
    hdd = build_facts(make_profile({"preset": "ssd", "mounts": {"/data": {"medium": "hdd"}}}),
                      engine="mysql", flavour="mariadb", version="10.11", data_dir="/data/db")
    io = mysql.io(hdd)
    assert io["innodb_io_capacity"] == 200 and io["innodb_io_capacity_max"] == 2000
    nvme = build_facts(make_profile({"preset": "ssd", "mounts": {"/data": {"medium": "nvme"}}}),
                       engine="mysql", flavour="mysql", version="8.0.36", data_dir="/data/db")
    assert mysql.io(nvme)["innodb_io_capacity_max"] == 20000


def test_mysql_io_capacity_takes_the_mediums_figure_and_a_measurement_only_caps_it():
    # A measured figure is the device's peak at depth 32, not the flushing a workload needs:
    # half of 75,483 IOPS (20,000 / 40,000) ran MariaDB write-only 17% slower than 2,000 / 4,000.
    def at(write_iops):
        prof = make_profile({"preset": "ssd", "mounts": {"/data": {
            "medium": "ssd", "measured": {"write_iops": write_iops}}}})
        return mysql.io(build_facts(prof, engine="mysql", flavour="mariadb", version="10.11",
                                    data_dir="/data/db"))
    fast = at(75483)
    assert (fast["innodb_io_capacity"], fast["innodb_io_capacity_max"]) == (2000, 4000)
    slow = at(1200)  # a device slower than the medium's figure: half of what it sustains
    assert (slow["innodb_io_capacity"], slow["innodb_io_capacity_max"]) == (600, 2000)
