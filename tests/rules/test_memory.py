"""rules/memory.py: worst-case memory of a config, term by term."""

import pytest

from pmem_advisor.engines.postgres.memory import pg_work_mem_to_fit
from pmem_advisor.errors import UsageError
from pmem_advisor.rules.memory import (
    GB,
    KB,
    MB,
    worst_case,
)
from pmem_advisor.rules.model import Bytes


def part(est, name):
    return next(p for p in est.parts if p.name == name)


def test_pg_terms_add_up_with_hash_mem_multiplier():
    est = worst_case("postgres", {"shared_buffers": "6GB", "work_mem": "10MB",
                                  "max_connections": 300}, version="18")
    # 2 sorts + 1 hash x 2.0 (PG 15+ default hash_mem_multiplier) = 4 x work_mem
    assert part(est, "work_mem").bytes == 40 * MB
    assert part(est, "temp_buffers").bytes == 8 * MB  # catalog default
    assert part(est, "wal_buffers").bytes == 16 * MB  # -1: shared/32 capped at a segment
    assert part(est, "background:parallel workers").bytes == 8 * 40 * MB
    assert est.per_connection_bytes == 48 * MB
    assert est.connections == 300
    assert est.total_bytes == est.global_bytes + 300 * 48 * MB
    assert est.to_dict()["total_bytes"] == est.total_bytes
    assert "300 x" in est.describe()


def test_pg13_hash_mem_multiplier_was_one():
    est = worst_case("postgres", {"work_mem": "10MB"}, version="13")
    assert part(est, "work_mem").bytes == 30 * MB


def test_pg17_autovacuum_takes_full_maintenance_work_mem():
    cfg = {"maintenance_work_mem": "2GB"}
    new = worst_case("postgres", cfg, version="17")
    old = worst_case("postgres", cfg, version="16")
    assert part(new, "background:autovacuum").bytes == 3 * 2 * GB
    assert part(old, "background:autovacuum").bytes == 3 * 1 * GB  # 1 GB dead-tuple cap
    capped = worst_case("postgres", {**cfg, "autovacuum_work_mem": "256MB"}, version="17")
    assert part(capped, "background:autovacuum").bytes == 3 * 256 * MB


def test_base_unit_values_are_accepted():
    # shared_buffers in 8 kB pages, as pg_settings reports it
    est = worst_case("postgres", {"shared_buffers": 131072}, version="16")
    assert part(est, "shared_buffers").bytes == 1 * GB


def test_mariadb_counts_its_own_caches_and_tmp_tables():
    est = worst_case("mysql", {"innodb_buffer_pool_size": "16G", "max_connections": 100,
                               "tmp_table_size": "64M", "max_heap_table_size": "32M"},
                     flavour="mariadb", version="10.11")
    assert part(est, "innodb_buffer_pool_size").bytes == 16 * GB
    assert part(est, "buffer pool control structures").bytes == 16 * GB // 10
    assert part(est, "aria_pagecache_buffer_size").bytes == 128 * MB
    assert part(est, "tmp tables").bytes == 32 * MB  # the smaller of the two limits
    assert part(est, "sort_buffer_size").bytes == 2 * MB  # MariaDB's default
    assert part(est, "thread_stack").bytes == 299008


def test_mysql8_temp_tables_are_global():
    est = worst_case("mysql", {"innodb_buffer_pool_size": 1 << 30}, flavour="mysql",
                     version="8.0")
    assert part(est, "temptable_max_ram").bytes == 1 * GB
    assert not part(est, "temptable_max_ram").per_connection
    assert est.connections == 151


def test_work_mem_to_fit_lands_inside_the_budget():
    cfg = {"shared_buffers": "6GB", "max_connections": 300}
    wm = pg_work_mem_to_fit(24 * GB, cfg, version="18")
    assert wm > 4 * MB
    fits = worst_case("postgres", {**cfg, "work_mem": Bytes(wm)}, version="18")
    assert fits.total_bytes <= 24 * GB
    more = worst_case("postgres", {**cfg, "work_mem": Bytes(wm + 64 * KB)}, version="18")
    assert more.total_bytes > 24 * GB  # the largest that fits, not a wasteful guess


def test_bad_input_is_a_usage_error():
    with pytest.raises(UsageError):
        worst_case("oracle", {})
    with pytest.raises(UsageError):
        worst_case("postgres", {"work_mem": "lots"}, version="18")


def test_mysql84_temptable_default_follows_the_host():
    est = worst_case("mysql", {}, flavour="mysql", version="8.4",
                     host_memory_bytes=64 * GB)
    assert part(est, "temptable_max_ram").bytes == 64 * GB * 3 // 100  # 3% of RAM
    big = worst_case("mysql", {}, flavour="mysql", version="8.4", host_memory_bytes=512 * GB)
    assert part(big, "temptable_max_ram").bytes == 4 * GB  # at most 4 GB
    old = worst_case("mysql", {}, flavour="mysql", version="8.0", host_memory_bytes=512 * GB)
    assert part(old, "temptable_max_ram").bytes == 1 * GB  # 8.0: a fixed 1 GB


def test_static_and_realistic_peak_beside_the_worst_case():
    """pgtune's 16 GB / 4 CPU / 200-connection web config: 4 GiB held from start, a worst case
    above 16 GiB, a realistic peak (2 active sessions per CPU) well below it."""
    est = worst_case("postgres", {"shared_buffers": "4GB", "wal_buffers": "16MB",
                                  "maintenance_work_mem": "1GB", "work_mem": "20560kB",
                                  "max_connections": 200, "max_worker_processes": 4,
                                  "max_parallel_workers": 4}, version="16")
    assert est.static_bytes == 4 * GB + 16 * MB  # shared memory, not maintenance_work_mem
    assert est.total_bytes > 16 * GB
    assert est.active_sessions(4) == 8 and est.active_sessions(None) == 200
    assert est.realistic_peak(4) == est.global_bytes + 8 * est.per_connection_bytes
    assert est.realistic_peak(4) < 10 * GB
    assert "8 active sessions (2 per CPU x 4 CPUs)" in est.describe_peak(4)
    assert est.to_dict(4)["realistic_peak_bytes"] == est.realistic_peak(4)


def test_mysql_static_is_the_pool_not_the_temp_tables():
    est = worst_case("mysql", {"innodb_buffer_pool_size": "4G"}, flavour="mysql",
                     version="8.0")
    names = {p.name for p in est.parts if p.is_static}
    assert "innodb_buffer_pool_size" in names and "temptable_max_ram" not in names
