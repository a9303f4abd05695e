"""place mysql without a MySQL server (none is installable here): the reader, the planner and
the SQL are checked against what MySQL 8 itself recorded.

- The reader runs on tests/placement/data/mysql8_snapshot.json, the answers a MySQL 8.0.36
  server gives to the queries the module sends (column names and forms cited in the file):
  a query the module sends that the snapshot has no answer for fails the test, so the SQL
  text the module sends is pinned too.
- Every statement of the emitted SQL is matched, clause by clause, against statements MySQL's
  own test suite ran and recorded (tests/placement/data/mysql_recorded.txt: repository, path
  and commit of each excerpt).
- Bad input: a MariaDB server answering (the managed service on 127.0.0.1:3306), a fast path
  outside innodb_directories or under the data directory, a tmpfs fast tier for data.
- The queries MySQL and MariaDB share are run on the MariaDB service: that says MariaDB accepts
  them, nothing about MySQL.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from pmem_advisor.errors import UsageError
from pmem_advisor.rules import placement, placement_mariadb, placement_mysql
from pmem_advisor.rules.placement import Plan, Tier

DATA = Path(__file__).parent / "data"
DATADIR, KNOWN, FAST = "/var/lib/mysql", "/srv/ts", "/srv/ts/pmem"


def _fixture(datadir: str = DATADIR, known: str = KNOWN, fast: str = FAST) -> dict:
    text = (DATA / "mysql8_snapshot.json").read_text(encoding="utf-8")
    for k, v in (("{datadir}", datadir), ("{known}", known), ("{fast}", fast)):
        text = text.replace(k, v)
    return json.loads(text)


class Replay:
    """A connection answering each query with the recorded answer (one per snapshot, the last
    repeated); a query without one is a failure: the module sent SQL the snapshot never saw."""

    def __init__(self, fixture: dict):
        self.answers, self.asked = fixture["queries"], {}

    def cursor(self):
        return self

    def execute(self, sql, args=()):
        if sql not in self.answers:
            raise AssertionError(f"no recorded answer for {sql!r}")
        n = self.asked[sql] = self.asked.get(sql, -1) + 1
        seq = self.answers[sql]
        self.rows = [tuple(r) for r in seq[min(n, len(seq) - 1)]]

    def fetchall(self):
        return self.rows

    def close(self):
        pass


def _server(fx: dict) -> dict:
    return fx["server"] | {"pid": os.getpid()}


def _snapshots(fx: dict):
    cur = Replay(fx)
    return placement_mysql.snapshot(cur, _server(fx)), placement_mysql.snapshot(cur, _server(fx))


def _tier(path: str, capacity: int | None = None, lat: float = 1e-5) -> Tier:
    return Tier(path, capacity, lat, lat, 200e6, True, "pmem" if lat < 1e-4 else "disk", "test")


def _plan(fx: dict, capacity: int, interval: float | None = None,
          tablespace: str = "pmem_fast", existing: str | None = None) -> Plan:
    first, second = _snapshots(fx)
    objs, facts, notes = (placement_mysql.objects(first, second) if interval
                          else placement_mysql.objects(None, first))
    r = placement_mysql.reading(objs, facts, notes, first, interval, existing or tablespace,
                                existing, KNOWN)
    fast, slow = _tier(FAST, capacity), _tier(DATADIR, None, 1e-3)
    method = placement.choose(r.objects, fast, slow)
    return Plan("mysql", r.objects, fast, slow, r.window, method, r.tablespace, r.existing,
                r.notes, False, r.extra)


def _by_name(objs) -> dict:
    return {o.name: o for o in objs}


# -- (1) the reader and the planner on the recorded snapshot --------------------------------
def test_lifetime_counters_per_table_from_the_snapshot():
    first, _ = _snapshots(_fixture())
    objs, facts, notes = placement_mysql.objects(None, first)
    o = _by_name(objs)
    hot = o["`shop`.`hot`"]
    assert (hot.reads, hot.writes, hot.hits) == (5200, 900, 93000)
    assert hot.size == 2097152 and hot.tablespace == DATADIR  # the file is larger than TABLES
    assert (o["`shop`.`cold`"].reads, o["`shop`.`cold`"].writes) == (700, 20)
    # ts_old's file (3000 reads, 400 writes) split by row operations 16500 : 1500
    orders, audit = o["`shop`.`orders`"], o["`shop`.`audit`"]
    assert orders.reads == pytest.approx(2750) and audit.reads == pytest.approx(250)
    assert orders.writes + audit.writes == pytest.approx(400)
    assert orders.tablespace == f"ts_old ({KNOWN})" and orders.size == 4734976
    events = o["`shop`.`events`"]  # two partition files summed into their table
    assert (events.reads, events.writes, events.movable) == (180, 90, False)
    assert o["`shop`.`legacy`"].io == 0 and facts["`shop`.`legacy`"]["space_type"] == "System"
    assert any("system tablespace" in n for n in notes)
    assert any("split by their row operations" in n for n in notes)
    redo, temp = o["redo log"], o["temp files (ibtmp1, #innodb_temp)"]
    assert (redo.writes, redo.size, redo.tablespace, redo.movable) == (1800, 104857600, DATADIR,
                                                                       False)
    assert (temp.reads, temp.writes) == (45, 70)  # temp_1.ibt and ibtmp1, not ibdata1
    assert "mysql.`innodb_table_stats`" not in str(list(o))  # only the DSN's schema


def test_interval_is_the_difference_of_two_snapshots():
    first, second = _snapshots(_fixture())
    o = _by_name(placement_mysql.objects(first, second)[0])
    assert (o["`shop`.`hot`"].reads, o["`shop`.`hot`"].writes) == (600, 100)
    # ts_old's 30 reads in the window all to orders: audit had no row operation in it
    assert o["`shop`.`orders`"].reads == pytest.approx(30) and o["`shop`.`audit`"].io == 0
    assert o["redo log"].writes == 100


def test_redo_log_by_version():
    s = _fixture()["server"]["settings"]
    new = placement_mysql.redo_facts(s, DATADIR, (8, 0, 36))
    assert new == {"size": 104857600, "home": DATADIR, "files": f"{DATADIR}/#innodb_redo",
                   "capacity": True}
    old = placement_mysql.redo_facts(s, DATADIR, (8, 0, 29))  # before innodb_redo_log_capacity
    assert old["size"] == 2 * 50331648 and not old["capacity"]


def test_the_plan_puts_the_hot_table_on_the_fast_tier_and_renders_its_sql():
    p = _plan(_fixture(), capacity=3 << 20)
    o = _by_name(p.objects)
    assert o["`shop`.`hot`"].on_fast and not o["`shop`.`cold`"].on_fast
    assert sum(x.size for x in p.objects if x.on_fast) <= 3 << 20
    sql = placement_mysql.render_sql(p)
    stmts = _statements(sql)
    assert stmts == ["SET SESSION lock_wait_timeout = 10",
                     f"CREATE TABLESPACE `pmem_fast` ADD DATAFILE '{FAST}/pmem_fast.ibd' "
                     "ENGINE=InnoDB",
                     "ALTER TABLE `shop`.`hot` TABLESPACE=`pmem_fast`, ALGORITHM=COPY"], sql
    assert "full table rebuild (ALGORITHM=COPY)" in sql and "their writes wait" in sql
    assert f"{FAST} lies in {KNOWN}" in sql and "read-only startup option" in sql


def test_a_table_already_in_the_fast_tablespace_goes_back_when_the_plan_leaves_it():
    fx = _fixture()
    spaces = fx["queries"][placement_mysql.Q_SPACES][0]
    spaces[1] = ["shop/cold", "pmem_fast", "General", f"{FAST}/pmem_fast.ibd", 16777216]
    fx["queries"][placement_mysql.Q_GENERAL][0].append(
        ["pmem_fast", f"{FAST}/pmem_fast.ibd", 16777216])
    first, _ = _snapshots(fx)
    assert placement_mysql.existing_tablespace(first, FAST, "pmem_fast") == "pmem_fast"
    p = _plan(fx, capacity=3 << 20, existing="pmem_fast")
    stmts = _statements(placement_mysql.render_sql(p))
    assert "ALTER TABLE `shop`.`cold` TABLESPACE=`innodb_file_per_table`, ALGORITHM=COPY" in stmts
    assert "ALTER TABLE `shop`.`hot` TABLESPACE=`pmem_fast`, ALGORITHM=COPY" in stmts
    assert not any(s.startswith("CREATE TABLESPACE") for s in stmts)  # it is there already


def test_the_tablespace_name_taken_elsewhere_is_one_line():
    first, _ = _snapshots(_fixture())
    with pytest.raises(UsageError, match="already has its file at /srv/ts/ts_old.ibd"):
        placement_mysql.existing_tablespace(first, FAST, "ts_old")


def test_the_redo_and_temp_move_by_config_lines_not_sql():
    p = _plan(_fixture(), capacity=200 << 20)  # room for the redo log and the temp files
    o = _by_name(p.objects)
    assert o["redo log"].on_fast and o["temp files (ibtmp1, #innodb_temp)"].on_fast
    sql = placement_mysql.render_sql(p)
    assert f"innodb_log_group_home_dir = {FAST}" in sql and "#innodb_redo" in sql
    assert f"innodb_temp_tablespaces_dir = {FAST}/#innodb_temp" in sql
    assert not any("innodb_log_group_home_dir" in s or "innodb_temp" in s
                   for s in _statements(sql))  # comments only: no SET pretends to move them


def test_a_name_with_a_newline_stays_inside_its_comment():
    fx = _fixture()
    evil = "t\nDROP DATABASE prod; --"
    tables = next(q for q in fx["queries"] if "information_schema.TABLES" in q)
    fx["queries"][tables][0][0][1] = evil
    fx["queries"][placement_mysql.Q_SPACES][0][0][0] = f"shop/{evil}"
    sql = placement_mysql.render_sql(_plan(fx, capacity=3 << 20))
    assert "\\x0aDROP DATABASE" in sql
    assert all(s.startswith(("SET SESSION", "CREATE TABLESPACE", "ALTER TABLE"))
               for s in _statements(sql))


# -- (2) the emitted SQL against MySQL's recorded statements --------------------------------
_TOKEN = re.compile(r"`(?:[^`]|``)*`|'(?:[^'\\]|\\.|'')*'|\d+|[A-Za-z_#][\w#$]*|[=,.;()]")
_WORDS = {"CREATE", "TABLESPACE", "ADD", "DATAFILE", "ENGINE", "INNODB", "ALTER", "TABLE",
          "ALGORITHM", "COPY", "RENAME", "TO", "SET", "SESSION", "GLOBAL", "ROW_FORMAT",
          "DYNAMIC", "DROP", "COLUMN", "INDEX", "DATA", "DIRECTORY", "ON", "OFF"}


def _shape(stmt: str) -> list[str]:
    """Keywords upper-cased; names (quoted, bare, schema-qualified) ID; strings STR; settings'
    values (numbers, ON, OFF) VALUE."""
    out: list[str] = []
    for t in _TOKEN.findall(stmt):
        if t.startswith("`") or (t[0].isalpha() or t[0] in "_#") and t.upper() not in _WORDS:
            if out[-2:-1] == ["ID"] and out[-1] == ".":
                out.pop()
                continue  # db.table is one name
            out.append("ID")
        elif t.startswith("'"):
            out.append("STR")
        elif t.isdigit() or t.upper() in ("ON", "OFF"):
            out.append("VALUE")
        else:
            out.append(t.upper())
    return out


def _clauses(shape: list[str]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """``ALTER TABLE ID`` and its comma-separated options; any other statement whole."""
    if shape[:3] == ["ALTER", "TABLE", "ID"]:
        opts, cur, depth = [], [], 0
        for t in shape[3:] + [","]:
            depth += (t == "(") - (t == ")")
            if t == "," and depth == 0:
                if cur:
                    opts.append(tuple(cur))
                cur = []
            else:
                cur.append(t)
        return ("ALTER", "TABLE", "ID"), opts
    return tuple(shape), []


def _recorded() -> tuple[set, set, str]:
    text = (DATA / "mysql_recorded.txt").read_text(encoding="utf-8")
    heads, options = set(), set()
    for line in text.splitlines():
        if re.match(r"(CREATE TABLESPACE|ALTER TABLE|SET (SESSION|GLOBAL))\b", line):
            head, opts = _clauses(_shape(line.rstrip(";")))
            heads.add(head)
            options.update(opts)
    return heads, options, text


def _statements(sql: str) -> list[str]:
    body = "\n".join(line for line in sql.splitlines() if not line.startswith("-- "))
    return [s.strip().removesuffix(";") for s in body.split(";\n") if s.strip().rstrip(";")]


def test_every_emitted_statement_has_the_form_mysql_recorded():
    heads, options, text = _recorded()
    fx = _fixture()
    fx["queries"][placement_mysql.Q_SPACES][0][1] = [
        "shop/cold", "pmem_fast", "General", f"{FAST}/pmem_fast.ibd", 16777216]
    plans = [_plan(_fixture(), 3 << 20), _plan(fx, 3 << 20, existing="pmem_fast")]
    emitted = [st for p in plans for st in _statements(placement_mysql.render_sql(p))]
    for stmt in emitted:
        head, opts = _clauses(_shape(stmt))
        assert head in heads, (stmt, head)
        for opt in opts:
            assert opt in options, (stmt, opt)
    # both ways and the tablespace itself were emitted, so each form above was checked
    assert any(st.startswith("CREATE TABLESPACE") for st in emitted)
    assert any("TABLESPACE=`pmem_fast`" in st for st in emitted)
    assert any("TABLESPACE=`innodb_file_per_table`" in st for st in emitted)
    # what each form stands on in the recorded output, beyond its shape
    assert "TABLESPACE=`innodb_file_per_table`, RENAME TO" in text  # the way back, by name
    assert "CREATE TABLESPACE s1_remote ADD DATAFILE 'MYSQL_TMP_DIR/s1.ibd.ibd';" in text
    assert "# restart:--innodb-directories=MYSQL_TMP_DIR" in text  # absolute path: known dir
    assert "System Variable lock_wait_timeout Scope Global, Session" in text


def test_the_shape_check_can_fail():
    heads, options, _ = _recorded()
    head, opts = _clauses(_shape("ALTER TABLE `a`.`b` TABLESPACE `x` ONLINE"))
    assert head in heads and not all(o in options for o in opts)
    assert _clauses(_shape("CREATE TABLESPACE `x` DATA DIRECTORY '/fast'"))[0] not in heads


# -- (3) bad input ---------------------------------------------------------------------------
def test_a_fast_path_outside_innodb_directories_or_under_the_datadir_is_refused():
    s = _fixture()["server"]["settings"]
    assert placement_mysql.known_directory(f"{KNOWN}/pmem", s, DATADIR) == KNOWN
    with pytest.raises(UsageError, match=r"not in innodb_directories \(/srv/ts\)") as e:
        placement_mysql.known_directory("/mnt/pmem0", s, DATADIR)
    assert 'innodb_directories="/srv/ts;/mnt/pmem0"' in e.value.hint and "restart" in e.value.hint
    assert "\n" not in str(e.value)
    with pytest.raises(UsageError, match="inside the data directory"):
        placement_mysql.known_directory(f"{DATADIR}/fast", s, DATADIR)
    with pytest.raises(UsageError, match=r"\(empty\)"):
        placement_mysql.known_directory("/mnt/pmem0", s | {"innodb_directories": ""}, DATADIR)


def test_tablespace_names_innodb_refuses_are_refused_first():
    for bad in ("innodb_fast", "a/b", ""):
        with pytest.raises(UsageError, match="InnoDB refuses"):
            placement_mysql.check_tablespace_name(bad)
    placement_mysql.check_tablespace_name("InnoDB_Fast")  # the prefix check is case-sensitive


@pytest.fixture
def dirs():
    """A data directory on disk (the slow tier) and a known directory with an empty fast
    subdirectory, each on the medium the test names."""
    made = []

    def make(fast_on: str):
        data = Path(tempfile.mkdtemp(prefix="pmem-advisor-mysql-data-", dir=os.getcwd()))
        known = Path(tempfile.mkdtemp(prefix="pmem-advisor-mysql-known-", dir=fast_on))
        made.extend([data, known])
        (known / "fast").mkdir()
        return str(data), str(known), str(known / "fast")

    yield make
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


def _replay_cli(monkeypatch, fx: dict) -> None:
    """The CLI against the recorded server: read_server answers its settings, the module's
    connection the recorded queries."""
    from pmem_advisor.instances import live

    monkeypatch.setattr(live, "read_server", lambda dsn, engine: _server(fx))
    monkeypatch.setattr(placement_mariadb, "_connect", lambda dsn: Replay(fx))


DSN = "mysql://root@127.0.0.1:3307/shop"  # never dialled: the replay answers


def test_a_tmpfs_fast_tier_is_refused_for_data(monkeypatch, dirs, run_cli):
    data, known, fast = dirs("/dev/shm")
    _replay_cli(monkeypatch, _fixture(data, known, fast))
    code, out, err = run_cli("place", "mysql", "--dsn", DSN, "--fast", fast)
    assert code == 2 and out == "" and "refused for data" in err, err
    assert len(err.strip().splitlines()) <= 2  # the reason and its hint


def test_the_cli_refuses_a_fast_path_innodb_does_not_know(monkeypatch, dirs, run_cli):
    data, known, fast = dirs("/dev/shm")
    fx = _fixture(data, "/nonexistent/elsewhere", fast)
    _replay_cli(monkeypatch, fx)
    code, out, err = run_cli("place", "mysql", "--dsn", DSN, "--fast", fast, "--allow-unsafe")
    assert code == 2 and out == "" and "not in innodb_directories" in err, err


def test_the_cli_plans_on_the_recorded_server_with_allow_unsafe(monkeypatch, dirs, run_cli):
    data, known, fast = dirs("/dev/shm")
    fx = _fixture(data, known, fast)
    _replay_cli(monkeypatch, fx)
    code, out, err = run_cli("place", "mysql", "--dsn", DSN, "--fast", f"{fast}:3M",
                             "--allow-unsafe", "--format", "sql")
    assert code == 0, err
    assert f"CREATE TABLESPACE `pmem_fast` ADD DATAFILE '{fast}/pmem_fast.ibd'" in out
    assert "ALTER TABLE `shop`.`hot` TABLESPACE=`pmem_fast`, ALGORITHM=COPY;" in out
    assert "UNSAFE" in out and "UNSAFE" in err and "since the server started" in err


def test_the_json_plan_validates_against_its_schema(monkeypatch, dirs, run_cli):
    from pmem_advisor import schemas

    data, known, fast = dirs("/dev/shm")
    _replay_cli(monkeypatch, _fixture(data, known, fast))
    code, out, err = run_cli("place", "mysql", "--dsn", DSN, "--fast", f"{fast}:3M",
                             "--allow-unsafe", "--format", "json", "--tablespace", "fast1")
    assert code == 0, err
    doc = json.loads(out)
    assert schemas.validate(doc) == "pmem-advisor.place/1"
    assert doc["engine"] == "mysql" and doc["tablespace"] == "fast1" and doc["unsafe"]


def _mariadb_service() -> dict:
    from pmem_advisor.instances.live import read_server

    try:
        return read_server("mysql://root@127.0.0.1:3306/", "mysql")
    except Exception as e:  # noqa: BLE001 - no service here: skip with its reason
        pytest.skip(f"no MariaDB service at 127.0.0.1:3306: {e}")


@pytest.mark.server
def test_a_mariadb_server_answering_is_sent_to_place_mariadb(run_cli):
    server = _mariadb_service()
    assert server["flavour"] == "mariadb"
    code, out, err = run_cli("place", "mysql", "--dsn", "mysql://root@127.0.0.1:3306/",
                             "--fast", "/srv/nowhere")
    assert code == 2 and out == "", err
    assert "this is MariaDB" in err and "use place mariadb" in err and len(err.splitlines()) == 1


# -- (4) the shared queries on MariaDB (MariaDB's acceptance only) ---------------------------
@pytest.mark.server
def test_mariadb_accepts_the_queries_mysql_shares_with_it():
    _mariadb_service()
    import pymysql

    conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="")
    try:
        cur = conn.cursor()
        db, tables = placement_mariadb._tables(cur)
        assert db is None and all(len(r) == 4 for r in tables)
        assert all(len(r) == 6 for r in placement_mariadb._files(cur))
        assert isinstance(placement_mariadb._row_io(cur), dict)
        placement_mariadb._instrument_on(cur)
        status = dict(placement_mariadb._rows(cur, placement_mysql.Q_STATUS))
        assert set(status) == {"Uptime", "Innodb_log_writes"}, status
        assert float(status["Uptime"]) > 0
    finally:
        conn.close()
