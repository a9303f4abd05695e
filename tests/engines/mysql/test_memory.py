"""engines/mysql/memory.py: the buffer pool counted as the server runs it. MySQL rounds a pool up
to a multiple of innodb_buffer_pool_chunk_size x instances, so a size we write must be one it
runs as written, and a size others wrote is counted at what it becomes."""

from __future__ import annotations

import pytest

from pmem_advisor.engines.mysql.memory import largest_running_as_set, running_pool
from pmem_advisor.rules import build_facts, recommend
from pmem_advisor.rules.fit import fitted_budget
from pmem_advisor.rules.memory import worst_case
from tests.rules.machines import make_profile

MB, GB = 1 << 20, 1 << 30


@pytest.mark.parametrize("version,pool,instances,cpus,runs", [
    # the manual's own examples ("Configuring InnoDB Buffer Pool Size"): 16 instances of
    # 128 MB chunks make a 2 GB unit; 8 GB is a multiple, 9 GB runs as 10 GB
    ("8.0", 8 * GB, 16, None, 8 * GB),
    ("8.0", 9 * GB, 16, None, 10 * GB),
    # 8.0's default above 1 GiB is 8 instances: whole GiB
    ("8.0", 1536 * MB, None, None, 2 * GB),
    ("8.0", 3 * GB, None, None, 3 * GB),
    # under 1 GiB one instance whatever is set: whole 128 MB chunks
    ("8.0", 200 * MB, 8, None, 256 * MB),
    ("8.4", 900 * MB, None, 64, 1 * GB),
    # 8.4: the smaller of half the chunks and a quarter of the CPUs
    ("8.4", 1536 * MB, None, 4, 1536 * MB),   # 1 instance
    ("8.4", 1280 * MB, None, 16, 1536 * MB),  # 4 instances of 128 MB: a 512 MB unit
    ("8.4", 1280 * MB, None, None, 1536 * MB),  # CPUs unknown: the largest any count runs
])
def test_mysql_runs_the_pool_rounded_up_to_chunks_times_instances(version, pool, instances,
                                                                  cpus, runs):
    assert running_pool(pool, flavour="mysql", version=version, cpus=cpus,
                        instances=instances) == runs


def test_mariadb_runs_the_pool_it_is_given():
    # 10.11/11.4: the chunk size is "a deprecated parameter with no effect", one instance
    assert running_pool(1536 * MB, flavour="mariadb", version="10.11") == 1536 * MB
    assert largest_running_as_set(1536 * MB + 12345, flavour="mariadb",
                                  version="11.4") == 1536 * MB


@pytest.mark.parametrize("version,cpus,allowed,want", [
    ("8.0", 4, 1536 * MB, 1 * GB), ("8.0", 4, 2 * GB + 5, 2 * GB),
    ("8.0", 4, 900 * MB, 896 * MB), ("8.4", 4, 1536 * MB + 5, 1536 * MB),
    ("8.4", 32, 1536 * MB + 5, 1536 * MB),  # 6 instances: a 768 MB unit
    ("8.4", 32, 1400 * MB, 1280 * MB)])  # 5 instances: a 640 MB unit
def test_the_largest_pool_that_runs_as_written(version, cpus, allowed, want):
    got = largest_running_as_set(allowed, flavour="mysql", version=version, cpus=cpus)
    assert got == want
    assert running_pool(got, flavour="mysql", version=version, cpus=cpus) == got


def test_a_pool_others_wrote_is_counted_at_what_the_server_runs():
    """A my.cnf with a 1.5 GB pool on MySQL 8.0 allocates 2 GB: the worst case counts 2 GB
    and says why (a check that counted 1.5 GB passed a config 0.5 GB over its budget)."""
    est = worst_case("mysql", {"innodb_buffer_pool_size": "1536M"}, flavour="mysql",
                     version="8.0")
    pool = next(p for p in est.parts if p.name == "innodb_buffer_pool_size")
    assert pool.bytes == 2 * GB and "run as" in pool.why
    control = next(p for p in est.parts if p.name == "buffer pool control structures")
    assert control.bytes == 2 * GB // 10
    assert worst_case("mysql", {"innodb_buffer_pool_size": "1536M"}, flavour="mysql",
                      version="8.4", host_cpus=4).parts[0].bytes == 1536 * MB


@pytest.mark.parametrize("version", ["8.0", "8.4"])
@pytest.mark.parametrize("memory_gb,clients,cpus", [
    (3, 50, 4), (4, 300, 4), (4, 800, 4), (6, 600, 32), (8, 1500, 16), (24, 3000, 64)])
def test_every_pool_we_size_runs_as_written_and_fits(version, memory_gb, clients, cpus):
    """The baseline's share (half the memory up to 4 GB) and MEM-FIT's lowered pool are sizes
    the server runs as written: 8.0 at 3 GB gives 1 GB, not 1.5 GB that runs as 2 GB."""
    profile = make_profile({"preset": "ssd", "memory_gb": 64, "cores": cpus,
                            "threads": cpus})
    rec = recommend(build_facts(profile, engine="mysql", flavour="mysql", version=version,
                                memory_bytes=memory_gb * GB, clients=clients, cpus=cpus,
                                target=True))
    pool = int(rec.setting("innodb_buffer_pool_size").value)
    assert running_pool(pool, flavour="mysql", version=version, cpus=rec.facts.cpus) == pool
    assert rec.memory.total_bytes <= fitted_budget(memory_gb * GB)
    if (version, memory_gb, clients) == ("8.0", 3, 50):
        assert pool == 1 * GB  # and it says why it is not half of 3 GB
        assert "rounded down" in rec.setting("innodb_buffer_pool_size").reason
