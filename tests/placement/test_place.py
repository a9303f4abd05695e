"""place against a managed PostgreSQL with skewed access: a hot small table read over and over,
a cold big table scanned once. The plan must put the hot table (and its index) on the fast tier,
its SQL applied by --apply must leave them there (pg_class/pg_tablespace), and bad input must
end in one line and an exit code, never a plan."""

from __future__ import annotations

import json
import threading
import time

import pytest

from pmem_advisor.instances import create_instance
from tests.placement.tiers import postgres_binary, server_dir

pytestmark = pytest.mark.server

# a small buffer cache so both tables miss it: the hot one many times per byte, the cold once.
# No WAL nor reads on a timer, for the idle-window test: wal_level minimal (the background
# writer logs a standby snapshot, ~50 bytes of WAL, within 15 s of any activity when the level
# is replica, the default), no autovacuum (a worker reads and analyzes the tables a naptime
# after the fixture's load; the fixture vacuums and analyzes them itself), no timed checkpoint
CONFIG = ("shared_buffers = 256kB\nmax_wal_size = 32MB\nmin_wal_size = 32MB\n"
          "wal_level = minimal\nmax_wal_senders = 0\nautovacuum = off\n"
          "checkpoint_timeout = 1d\n")


@pytest.fixture(scope="module")
def pg():
    inst = create_instance(postgres_binary())
    with inst:
        inst.initialize()
        inst.start(CONFIG)
        inst.query("CREATE TABLE hot (id int PRIMARY KEY, v text)")
        inst.query("INSERT INTO hot SELECT g, md5(g::text) FROM generate_series(1, 3000) g")
        inst.query("CREATE TABLE cold (id int, v text)")
        inst.query("INSERT INTO cold SELECT g, repeat(md5(g::text), 4) FROM "
                   "generate_series(1, 60000) g")
        inst.query("VACUUM ANALYZE hot, cold")
        yield inst


def _dsn(inst) -> str:
    c = inst.conninfo
    return f"host={c.socket_dir} port={c.port} user={c.user} dbname={c.dbname}"


def _load(inst, rounds: int = 40) -> None:
    with inst.connect() as conn:
        for i in range(rounds):
            conn.execute("SELECT count(*) FROM cold WHERE id = %s", (i,)) if i % 20 == 0 \
                else None
            conn.execute("SELECT sum(length(v)) FROM hot")
            conn.execute("UPDATE hot SET v = md5(v) WHERE id %% 50 = %s", (i % 50,))


@pytest.fixture
def fast_dir(pg):
    with server_dir(pg, "/dev/shm") as tier:
        yield tier


def _where(inst) -> dict[str, str]:
    rows = inst.query("SELECT c.relname, coalesce(t.spcname, 'pg_default') FROM pg_class c "
                      "LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE c.relname IN "
                      "('hot', 'hot_pkey', 'cold')")
    return dict(rows)


def _capacity(inst) -> int:
    hot = inst.query("SELECT pg_table_size('hot') + pg_relation_size('hot_pkey')")[0][0]
    cold = inst.query("SELECT pg_table_size('cold')")[0][0]
    assert cold > 4 * hot  # the schema is skewed as the test means
    return hot + hot // 2


def test_bad_input_is_one_line_and_no_plan(pg, fast_dir, run_cli):
    dsn = _dsn(pg)
    code, out, err = run_cli("place", "postgres", "--dsn", dsn, "--fast", str(fast_dir))
    assert code == 2 and out == "" and "refused for data" in err and len(err.splitlines()) == 1
    code, out, err = run_cli("place", "postgres", "--dsn", dsn, "--fast", f"{fast_dir}:4K",
                             "--allow-unsafe")
    assert code == 2 and out == "" and "hold no object" in err
    code, out, err = run_cli("place", "postgres", "--dsn", dsn, "--fast", "/dev/shm",
                             "--allow-unsafe")
    assert code == 2 and out == "" and "not to the server's user" in err


def _idle(inst, timeout: float = 120) -> None:
    """Wait until the counters place reads stand still: no other session or autovacuum worker
    (a backend flushes its statistics up to a second late, or as it exits) and two reads of
    place's own snapshot one poll apart with no I/O between them. The sources on a timer are
    gone by construction (CONFIG), so what is left only drains."""
    import psycopg

    from pmem_advisor.rules import placement_postgres as pp

    with psycopg.connect(_dsn(inst), autocommit=True) as conn:
        deadline, last = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            others = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid <> "
                                  "pg_backend_pid() AND backend_type IN ('client backend', "
                                  "'autovacuum worker')").fetchone()[0]
            snap = pp.pg_snapshot(conn)
            if not others and last and not any(o.io for o in pp.pg_objects(last, snap)):
                return
            last = snap
            conn.execute("SELECT pg_sleep(0.2)")  # the server's clock: one poll per 0.2 s
    pytest.fail("PostgreSQL never went idle")


def test_no_statistics_in_an_idle_window_is_no_plan(pg, fast_dir, run_cli):
    _idle(pg)
    code, out, err = run_cli("place", "postgres", "--dsn", _dsn(pg), "--fast", str(fast_dir),
                             "--allow-unsafe", "--interval", "1")
    assert code == 3 and out == "" and "no statistics" in err, err


def test_interval_plan_puts_the_hot_table_on_the_fast_tier_and_apply_moves_it(
        pg, fast_dir, run_cli):
    cap = _capacity(pg)
    worker = threading.Thread(target=_load, args=(pg, 200))
    worker.start()
    try:
        code, out, err = run_cli("place", "postgres", "--dsn", _dsn(pg), "--fast",
                                 f"{fast_dir}:{cap}", "--interval", "2", "--allow-unsafe",
                                 "--format", "json")
    finally:
        worker.join()
    assert code == 0, err
    doc = json.loads(out)
    from pmem_advisor import schemas

    assert schemas.validate(doc) == "pmem-advisor.place/1"  # advisor/schemas/place-1.json
    chosen = {o["name"]: o for o in doc["objects"]}
    assert chosen["public.hot"]["on_fast"] and not chosen["public.cold"]["on_fast"], doc
    assert doc["window"] == "interval 2 s" and doc["unsafe"] is True
    assert sum(o["size"] for o in doc["objects"] if o["on_fast"]) <= cap
    assert "UNSAFE" in err

    _load(pg, 60)
    code, out, err = run_cli("place", "postgres", "--dsn", _dsn(pg), "--fast",
                             f"{fast_dir}:{cap}", "--allow-unsafe", "--format", "sql", "--apply")
    assert code == 0, err
    assert "CREATE TABLESPACE pmem_fast LOCATION" in out
    assert "ALTER TABLE public.hot SET TABLESPACE pmem_fast;" in out
    assert "ACCESS EXCLUSIVE" in out and "since the last reset" in err
    where = _where(pg)
    planned = {line.split()[2].split(".")[1] for line in out.splitlines()
               if line.startswith("ALTER ") and line.rstrip(";").endswith("pmem_fast")}
    assert planned and {rel: where[rel] for rel in planned} == dict.fromkeys(planned,
                                                                             "pmem_fast")
    assert where["cold"] == "pg_default"
    assert pg.query("SELECT pg_tablespace_location(oid) FROM pg_tablespace WHERE spcname = "
                    "'pmem_fast'")[0][0] == str(fast_dir)

    # planned again on the same tier: the tablespace is reused, nothing left to move
    code, out, err = run_cli("place", "postgres", "--dsn", _dsn(pg), "--fast",
                             f"{fast_dir}:{cap}", "--allow-unsafe", "--format", "sql")
    assert code == 0, err
    assert "CREATE TABLESPACE" not in out and "ALTER TABLE public.hot" not in out
