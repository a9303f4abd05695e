"""CK030 on a managed MariaDB: a hot table created with DATA DIRECTORY on /var/tmp (the same
SSD as the data directory), a small table parked in a DATA DIRECTORY on /dev/shm (the fast
tier the server already uses). `check --dsn --allow-unsafe` must name the hot table with the
server's own file counters (performance_schema.file_summary_by_instance)."""

from __future__ import annotations

import json
import re

import pytest

from pmem_advisor.instances import create_instance
from tests.instances.conftest import find_server
from tests.placement.tiers import server_dir

pytestmark = pytest.mark.server

CONFIG = ("[mysqld]\nperformance_schema = ON\ninnodb_buffer_pool_size = 6M\n"
          "innodb_old_blocks_time = 0\ninnodb_max_dirty_pages_pct = 0\n"
          "innodb_max_dirty_pages_pct_lwm = 0\n")


def test_the_hot_table_in_a_slower_data_directory_is_named(run_cli):
    inst = create_instance(find_server("mariadb"))
    with inst:
        inst.initialize()
        inst.start(CONFIG)
        with server_dir(inst, "/var/tmp", "slow") as slow, \
                server_dir(inst, "/dev/shm", "fast") as fast:
            inst.query("CREATE TABLE hot (id int PRIMARY KEY, v varchar(200)) ENGINE=InnoDB "
                       f"DATA DIRECTORY='{slow}'")
            inst.query("INSERT INTO hot SELECT seq, repeat(md5(seq), 4) FROM seq_1_to_20000")
            inst.query("CREATE TABLE parked (id int PRIMARY KEY) ENGINE=InnoDB "
                       f"DATA DIRECTORY='{fast}'")
            inst.query("CREATE TABLE cold (id int PRIMARY KEY, v varchar(200)) ENGINE=InnoDB")
            inst.query("INSERT INTO cold SELECT seq, repeat(md5(seq), 4) FROM seq_1_to_30000")
            conn = inst.connect()
            try:
                cur = conn.cursor()
                # hot is larger than the 6M pool and scanned with old_blocks_time 0: every
                # scan reads it past the cache, so its share is large whatever the page
                # cleaner has flushed of cold's load (with a small hot table and scans of
                # cold, cold's reads took 91% of the I/O in one run of seven)
                for i in range(20):
                    cur.execute("SELECT sum(length(v)) FROM hot")
                    cur.fetchall()
                    cur.execute("UPDATE hot SET v = reverse(v) WHERE id %% 50 = %s", (i % 50,))
            finally:
                conn.close()
            dsn = f"socket={inst.socket_path} user=root dbname={inst.conninfo.dbname}"
            code, out, err = run_cli("check", "--dsn", dsn, "--format", "json",
                                     "--allow-unsafe")
            assert code in (0, 1), err
            found = [f for f in json.loads(out)["findings"] if f["rule"] == "CK030"]
            db = inst.conninfo.dbname
            hot = [f for f in found if f["subject"] == f"tier:`{db}`.`hot`"]
            assert len(hot) == 1, (found, err)
            msg = hot[0]["message"]
            # the server's own count of read operations on the hot table's file (a check
            # reads no user table: the count stands still between the two readings)
            reads = inst.query("SELECT COUNT_READ FROM performance_schema."
                               "file_summary_by_instance WHERE FILE_NAME = %s",
                               (f"{slow}/{db}/hot.ibd",))
            assert reads and f"({reads[0][0]} file operations read past" in msg, (msg, reads)
            # /var/tmp's medium is this host's (ssd here): any durable class below tmpfs
            assert re.search(rf"on {re.escape(str(slow))} \((hdd|ssd|nvme),", msg), msg
            assert f"while {fast} (tmpfs, the filesystem)" in msg, msg
            assert f"place mariadb --dsn ... --fast {fast} --allow-unsafe" in hot[0]["fix"]
