"""place against a managed MariaDB with skewed access: a small hot table read and updated over
and over, a big cold table scanned now and then, a buffer pool smaller than both. The plan must
put the hot table on the fast tier and leave the cold one, --apply must leave the hot table's
.ibd under the fast path (information_schema and the file itself), and bad input must end in
one line and an exit code, never a plan."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from pmem_advisor.instances import create_instance
from tests.instances.conftest import find_server
from tests.placement.tiers import server_dir

pytestmark = pytest.mark.server

# a buffer pool smaller than the cold table, scans allowed to evict the hot pages
# (old_blocks_time 0), dirty pages flushed at once: both tables see file reads and writes
CONFIG = ("[mysqld]\nperformance_schema = ON\ninnodb_buffer_pool_size = 6M\n"
          "innodb_old_blocks_time = 0\ninnodb_max_dirty_pages_pct = 0\n"
          "innodb_max_dirty_pages_pct_lwm = 0\ninnodb_log_file_size = 8M\n")


@pytest.fixture(scope="module")
def maria():
    inst = create_instance(find_server("mariadb"))
    with inst:
        inst.initialize()
        inst.start(CONFIG)
        # statistics computed once, by ANALYZE here, never by InnoDB's background thread: its
        # recalculation after a tenth of the rows changed runs at least 10 s after the last
        # one, reads the table's pages and writes mysql.innodb_table_stats (file I/O and redo
        # in whatever window it lands, seen in the idle-window test below)
        for table, rows in (("hot", 2000), ("cold", 60000)):
            inst.query(f"CREATE TABLE {table} (id int PRIMARY KEY, v varchar(200)) "
                       "ENGINE=InnoDB STATS_PERSISTENT=1 STATS_AUTO_RECALC=0")
            inst.query(f"INSERT INTO {table} SELECT seq, repeat(md5(seq), 4) "
                       f"FROM seq_1_to_{rows}")
        inst.query("ANALYZE TABLE hot, cold")
        yield inst


def _dsn(inst) -> str:
    return f"socket={inst.socket_path} user=root dbname={inst.conninfo.dbname}"


def _load(inst, rounds: int) -> None:
    conn = inst.connect()
    try:
        cur = conn.cursor()
        for i in range(rounds):
            if i % 20 == 0:
                cur.execute("SELECT count(*) FROM cold WHERE v LIKE 'x%'")  # a full scan
                cur.fetchall()
            cur.execute("SELECT sum(length(v)) FROM hot")
            cur.fetchall()
            cur.execute("UPDATE hot SET v = reverse(v) WHERE id %% 50 = %s", (i % 50,))
    finally:
        conn.close()


@pytest.fixture
def fast_dir(maria):
    with server_dir(maria, "/dev/shm") as tier:
        yield tier


def _files(inst) -> dict[str, str]:
    """table -> the path of its .ibd, as the server says (absolute)."""
    datadir = inst.query("SELECT @@datadir")[0][0]
    rows = inst.query("SELECT NAME, FILENAME FROM information_schema.INNODB_SYS_TABLESPACES "
                      f"WHERE NAME LIKE '{inst.conninfo.dbname}/%'")
    return {n.split("/", 1)[1]: os.path.normpath(os.path.join(datadir, f)) for n, f in rows}


def _sizes(inst) -> tuple[int, int]:
    rows = dict(inst.query("SELECT NAME, FILE_SIZE FROM information_schema."
                           "INNODB_SYS_TABLESPACES WHERE NAME LIKE "
                           f"'{inst.conninfo.dbname}/%'"))
    db = inst.conninfo.dbname
    return rows[f"{db}/hot"], rows[f"{db}/cold"]


def _idle(inst, timeout: float = 120) -> None:
    """Wait until the counters place reads stand still: purge done (history list length 0: no
    undo left whose purge writes redo), no dirty page left to flush, and two reads of place's
    own snapshot one poll apart with no I/O between them. The sources on a timer are gone by
    construction (the fixture's STATS_AUTO_RECALC=0), so what is left only drains."""
    from pmem_advisor.rules import placement_mariadb as pm

    datadir = inst.query("SELECT @@datadir")[0][0]
    conn = inst.connect()
    try:
        cur = conn.cursor()
        deadline, last = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            history, dirty = inst.query(
                "SELECT (SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = "
                "'trx_rseg_history_len'), (SELECT VARIABLE_VALUE FROM information_schema."
                "GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_PAGES_DIRTY')")[0]
            snap = pm.snapshot(cur, datadir)
            if (int(history) == 0 and int(dirty) == 0 and last is not None
                    and not any(o.io for o in pm.objects(last, snap)[0])):
                return
            last = snap
            cur.execute("SELECT SLEEP(0.2)")  # the server's clock: one poll per 0.2 s
            cur.fetchall()
    finally:
        conn.close()
    pytest.fail("InnoDB never went idle")


def test_the_server_ignores_data_directory_in_alter_table(maria, fast_dir):
    """Why place rebuilds: MariaDB 10.11 takes ALTER TABLE ... DATA DIRECTORY without error
    or warning and leaves the file where it was."""
    maria.query("CREATE TABLE probe (id int PRIMARY KEY) ENGINE=InnoDB")
    try:
        before = _files(maria)["probe"]
        maria.query(f"ALTER TABLE probe DATA DIRECTORY = '{fast_dir}', ALGORITHM=COPY")
        assert _files(maria)["probe"] == before and not str(before).startswith(str(fast_dir))
    finally:
        maria.query("DROP TABLE probe")


def test_performance_schema_off_is_one_line_exit_3(fast_dir, run_cli):
    inst = create_instance(find_server("mariadb"))
    with inst:
        inst.initialize()
        inst.start("[mysqld]\nperformance_schema = OFF\n")
        os.chown(fast_dir, inst.user.uid, inst.user.gid)
        code, out, err = run_cli("place", "mariadb", "--dsn", _dsn(inst), "--fast",
                                 str(fast_dir), "--allow-unsafe")
    assert code == 3 and out == "" and "performance_schema is OFF" in err, err
    assert len(err.splitlines()) <= 2  # the reason, and the hint to turn it on


def test_bad_input_is_one_line_and_no_plan(maria, fast_dir, run_cli):
    dsn = _dsn(maria)
    _load(maria, 5)
    code, out, err = run_cli("place", "mariadb", "--dsn", dsn, "--fast", str(fast_dir))
    assert code == 2 and out == "" and "refused for data" in err and len(err.splitlines()) == 1, err
    code, out, err = run_cli("place", "mariadb", "--dsn", dsn, "--fast", f"{fast_dir}:4K",
                             "--allow-unsafe")
    assert code == 2 and out == "" and "hold no object" in err
    code, out, err = run_cli("place", "mariadb", "--dsn", dsn, "--fast", "/dev/shm",
                             "--allow-unsafe")
    assert code == 2 and out == "" and "not to the server's user" in err
    code, out, err = run_cli("place", "mysql", "--dsn", dsn, "--fast", str(fast_dir))
    assert code == 2 and out == "" and "this is MariaDB" in err and "place mariadb" in err


def test_no_statistics_in_an_idle_window_is_no_plan(maria, fast_dir, run_cli):
    _idle(maria)
    code, out, err = run_cli("place", "mariadb", "--dsn", _dsn(maria), "--fast", str(fast_dir),
                             "--allow-unsafe", "--interval", "1")
    assert code == 3 and out == "" and "no statistics" in err, err


def test_interval_plan_puts_the_hot_table_on_the_fast_tier_and_apply_moves_it(
        maria, fast_dir, run_cli):
    hot, cold = _sizes(maria)
    assert cold > 4 * hot  # the schema is skewed as the test means
    cap = hot + hot // 2
    worker = threading.Thread(target=_load, args=(maria, 400))
    worker.start()
    try:
        code, out, err = run_cli("place", "mariadb", "--dsn", _dsn(maria), "--fast",
                                 f"{fast_dir}:{cap}", "--interval", "2", "--allow-unsafe",
                                 "--format", "json")
    finally:
        worker.join()
    assert code == 0, err
    doc = json.loads(out)
    from pmem_advisor import schemas

    assert schemas.validate(doc) == "pmem-advisor.place/1"
    chosen = {o["name"]: o for o in doc["objects"]}
    hot_o, cold_o = (chosen[f"`{maria.conninfo.dbname}`.`{t}`"] for t in ("hot", "cold"))
    assert hot_o["io"] > 0 and hot_o["on_fast"] and not cold_o["on_fast"], doc
    assert doc["engine"] == "mariadb" and doc["window"] == "interval 2 s" and doc["unsafe"]
    assert sum(o["size"] for o in doc["objects"] if o["on_fast"]) <= cap
    assert chosen["redo log"]["kind"] == "wal" and "UNSAFE" in err

    _load(maria, 60)  # lifetime counters this time (the snapshot without --interval)
    code, out, err = run_cli("place", "mariadb", "--dsn", _dsn(maria), "--fast",
                             f"{fast_dir}:{cap}", "--allow-unsafe", "--format", "sql",
                             "--apply")
    assert code == 0, err
    assert "since the server started" in err and "LOCK TABLES" in out
    db = maria.conninfo.dbname
    assert f"DATA DIRECTORY='{fast_dir}'" in out and f"`{db}`.`cold`" not in out
    files = _files(maria)
    assert files["hot"] == str(fast_dir / db / "hot.ibd") and os.path.isfile(files["hot"])
    assert os.stat(files["hot"]).st_uid == maria.user.uid
    assert not files["cold"].startswith(str(fast_dir)) and os.path.isfile(files["cold"])
    assert maria.query("SELECT count(*), count(DISTINCT id) FROM hot")[0] == (2000, 2000)
    assert not [t for t in files if t.endswith(("__pmem_new", "__pmem_old"))]

    # planned again on the same tier: the directory is known, nothing left to rebuild
    _load(maria, 20)
    code, out, err = run_cli("place", "mariadb", "--dsn", _dsn(maria), "--fast",
                             f"{fast_dir}:{cap}", "--allow-unsafe", "--format", "sql")
    assert code == 0, err
    assert "LOCK TABLES" not in out and "CREATE TABLE" not in out


def test_apply_on_a_busy_table_gives_up_after_the_lock_wait_and_leaves_it_as_it_was(
        maria, fast_dir, run_cli):
    """--apply never queues behind a session holding the table: its LOCK TABLES fails after
    lock_wait_timeout, the scratch copy is dropped, the table stays where it was."""
    _load(maria, 60)
    before = _files(maria)
    holder = maria.connect()
    try:
        holder.cursor().execute("LOCK TABLES hot READ")
        hot, _cold = _sizes(maria)
        code, out, err = run_cli("place", "mariadb", "--dsn", _dsn(maria), "--fast",
                                 f"{fast_dir}:{hot + hot // 2}", "--allow-unsafe", "--format",
                                 "sql", "--apply")
    finally:
        holder.close()
    assert code == 3 and "LOCK TABLES" in err and "left as it was" in err, err
    assert "Lock wait timeout" in err and len(err.strip().splitlines()) <= 8
    assert _files(maria) == before and not os.listdir(fast_dir / maria.conninfo.dbname)
    # the empty schema directory the failed rebuild left is no obstacle to the next plan
    code, out, err = run_cli("place", "mariadb", "--dsn", _dsn(maria), "--fast",
                             f"{fast_dir}:{hot + hot // 2}", "--allow-unsafe", "--format", "sql")
    assert code == 0 and "LOCK TABLES `" in out, err


def test_tables_with_foreign_keys_are_left_out_of_the_sql_with_a_note(maria, fast_dir, run_cli):
    """The rebuild's rename would leave a foreign key on the old table: no SQL, a note."""
    maria.query("CREATE TABLE parent (id int PRIMARY KEY) ENGINE=InnoDB")
    maria.query("CREATE TABLE child (id int PRIMARY KEY, p int, FOREIGN KEY (p) REFERENCES "
                "parent (id)) ENGINE=InnoDB")
    try:
        maria.query("INSERT INTO parent SELECT seq FROM seq_1_to_3000")
        maria.query("INSERT INTO child SELECT seq, seq FROM seq_1_to_3000")
        _load(maria, 20)
        code, out, err = run_cli("place", "mariadb", "--dsn", _dsn(maria), "--fast",
                                 f"{fast_dir}:1G", "--allow-unsafe", "--format", "sql")
    finally:
        maria.query("DROP TABLE child")
        maria.query("DROP TABLE parent")
    assert code == 0, err
    db = maria.conninfo.dbname
    for t in ("parent", "child"):
        assert f"`{db}`.`{t}`: not moved by SQL (a foreign key" in err
        assert f"`{t}{'__pmem_new'}`" not in out
    assert f"`{db}`.`hot__pmem_new`" in out  # the rest of the plan is still emitted
