"""CK030 on a managed PostgreSQL: a hot table and its index in a tablespace on /var/tmp (the
same SSD as the data directory), a cold table in the data directory, and (per test) an empty
tablespace on /dev/shm standing in for the fast tier. `check --dsn` must name the hot table on
the slower location with the server's own counters, and say nothing where the only faster
location is tmpfs without --allow-unsafe, or where every location is on one filesystem."""

from __future__ import annotations

import json
import os
import re

import pytest

from pmem_advisor.instances import create_instance
from tests.placement.tiers import postgres_binary, server_dir

pytestmark = pytest.mark.server

# a small buffer cache so the hot table misses it; no autovacuum, whose reads of the tables
# would move the counters between check's reading and the test's
CONFIG = "shared_buffers = 256kB\nautovacuum = off\n"


@pytest.fixture(scope="module")
def pg():
    inst = create_instance(postgres_binary())
    with inst:
        inst.initialize()
        inst.start(CONFIG)
        with server_dir(inst, "/var/tmp", "slow") as slow:
            inst.query(f"CREATE TABLESPACE slow_ts LOCATION '{slow}'")
            inst.query("CREATE TABLE hot (id int PRIMARY KEY USING INDEX TABLESPACE slow_ts, "
                       "v text) TABLESPACE slow_ts")
            inst.query("INSERT INTO hot SELECT g, md5(g::text) FROM generate_series(1, 3000) g")
            inst.query("CREATE TABLE cold (id int, v text)")
            inst.query("INSERT INTO cold SELECT g, repeat(md5(g::text), 4) FROM "
                       "generate_series(1, 20000) g")
            with inst.connect() as conn:
                for i in range(150):
                    if i % 50 == 0:
                        conn.execute("SELECT count(*) FROM cold WHERE id = %s", (i,))
                    conn.execute("SELECT sum(length(v)) FROM hot")
                    conn.execute("UPDATE hot SET v = md5(v) WHERE id %% 50 = %s", (i % 50,))
                # the counters reach shared memory before this returns (PostgreSQL 15+)
                conn.execute("SELECT pg_stat_force_next_flush()")
                conn.execute("SELECT 1")
            inst.slow_dir = slow
            yield inst


@pytest.fixture
def fast_ts(pg):
    """An empty tablespace on /dev/shm: a location the server uses, faster, with room."""
    with server_dir(pg, "/dev/shm", "fast") as fast:
        pg.query(f"CREATE TABLESPACE fast_ts LOCATION '{fast}'")
        try:
            yield fast
        finally:
            pg.query("DROP TABLESPACE fast_ts")


def _dsn(inst) -> str:
    c = inst.conninfo
    return f"host={c.socket_dir} port={c.port} user={c.user} dbname={c.dbname}"


def _ck030(run_cli, inst, *flags: str) -> tuple[list[dict], str]:
    code, out, err = run_cli("check", "--dsn", _dsn(inst), "--format", "json", *flags)
    assert code in (0, 1), err
    return [f for f in json.loads(out)["findings"] if f["rule"] == "CK030"], err


def test_the_hot_table_on_the_slower_tablespace_is_named_with_the_servers_figures(
        pg, fast_ts, run_cli):
    found, err = _ck030(run_cli, pg, "--allow-unsafe")
    hot = [f for f in found if f["subject"] == "tier:public.hot"]
    assert len(hot) == 1, (found, err)
    msg, fix = hot[0]["message"], hot[0]["fix"]
    # the figures are the server's own: its block reads of the table and its size
    reads, size = pg.query(
        "SELECT heap_blks_read + coalesce(toast_blks_read, 0) + coalesce(tidx_blks_read, 0), "
        "pg_table_size('hot') FROM pg_statio_user_tables WHERE relname = 'hot'")[0]
    assert reads > 0 and f"({reads} blocks read past the server's cache" in msg, msg
    assert f"(table, {size / 1024:.1f} KiB)" in msg, msg
    share = int(re.search(r"takes (\d+)% of the tables' and indexes' I/O", msg).group(1))
    assert share >= 10, msg
    # /var/tmp's medium is this host's (ssd here): any durable class below tmpfs
    assert re.search(rf"on tablespace slow_ts at {re.escape(str(pg.slow_dir))} "
                     r"\((hdd|ssd|nvme),", msg), msg
    assert f"while tablespace fast_ts at {fast_ts} (tmpfs, the filesystem)" in msg, msg
    free = re.search(r"has ([\d.]+) GiB free", msg)
    st = os.statvfs(fast_ts)
    assert free and abs(float(free.group(1)) - st.f_bavail * st.f_frsize / 2**30) < 0.2, msg
    assert f"`pmem-advisor place postgres --dsn ... --fast {fast_ts} --allow-unsafe`" in fix
    assert hot[0]["severity"] == "warn"
    # every finding names a location the server really uses (cold: its inserts' writes)
    assert all(f"{fast_ts} (tmpfs" in f["message"] for f in found), found


def test_tmpfs_is_no_target_without_allow_unsafe(pg, fast_ts, run_cli):
    found, err = _ck030(run_cli, pg)
    assert found == [], found


def test_locations_on_one_filesystem_are_one_tier(pg, run_cli):
    data = pg.query("SHOW data_directory")[0][0]
    if os.stat(data).st_dev != os.stat(pg.slow_dir).st_dev:  # the case this test means
        pytest.skip(f"/var/tmp and the data directory {data} are on two filesystems here")
    found, err = _ck030(run_cli, pg, "--allow-unsafe")
    assert found == [], found
