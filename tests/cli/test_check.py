"""`pmem-advisor check` end to end: dangerous configs fail, bad input is one line with its exit
code, JUnit for CI, captured machines, and the running PostgreSQL/MariaDB services (skipped
with a reason when absent)."""

from __future__ import annotations

import json
import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pmem_advisor.errors import EXIT_ENVIRONMENT, EXIT_FINDINGS, EXIT_USAGE
from tests.rules.machines import make_profile

GOLDEN = Path(__file__).resolve().parents[1] / "probes" / "golden"
PG_SOCKET = "/var/run/postgresql/.s.PGSQL.5432"
PG_DSN = "postgresql:///postgres?host=/var/run/postgresql&user=postgres"
MY_SOCKET = "/run/mysqld/mysqld.sock"
MY_DSN = f"socket={MY_SOCKET} user=root"


@pytest.fixture
def ssd_profile(tmp_path) -> str:
    p = tmp_path / "ssd.json"
    p.write_text(json.dumps(make_profile("ssd")))
    return str(p)


def _conf(tmp_path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _findings(out: str) -> list[dict]:
    return json.loads(out)["findings"]


# ---------------------------------------------------------------- dangerous settings fail
def test_the_four_settings_that_passed_before_now_fail(run_cli, ssd_profile, tmp_path):
    pg = _conf(tmp_path, "postgresql.conf", "fsync = off\nfull_page_writes = off\n")
    code, out, _ = run_cli("check", "--profile", ssd_profile, "--db", "postgres", "--version",
                           "16", "--config", pg, "--format", "json")
    assert code == EXIT_FINDINGS
    fails = {f["subject"] for f in _findings(out) if f["severity"] == "fail"}
    assert {"fsync", "full_page_writes"} <= fails
    my = _conf(tmp_path, "my.cnf",
               "[mysqld]\ninnodb_flush_log_at_trx_commit = 0\nsync_binlog = 0\n")
    code, out, _ = run_cli("check", "--profile", ssd_profile, "--db", "mysql", "--version",
                           "8.0", "--config", my, "--format", "json")
    assert code == EXIT_FINDINGS
    fails = {f["subject"] for f in _findings(out) if f["severity"] == "fail"}
    assert {"innodb_flush_log_at_trx_commit", "sync_binlog"} <= fails


@pytest.mark.parametrize("db,version,line", [
    ("postgres", "16", "fsync = off"),
    ("postgres", "16", "full_page_writes = off"),
    ("postgres", "16", "synchronous_commit = off"),
    ("postgres", "16", "data_sync_retry = on"),
    ("mysql", "8.4", "[mysqld]\ninnodb_flush_log_at_trx_commit = 2"),
    ("mysql", "8.4", "[mysqld]\ninnodb_doublewrite = DETECT_ONLY"),
    ("mysql", "8.4", "[mysqld]\ninnodb_flush_method = O_DIRECT_NO_FSYNC"),
    ("mariadb", "11.4", "[mysqld]\ninnodb_doublewrite = fast"),
    ("mariadb", "10.11", "[mysqld]\ninnodb_flush_method = O_DIRECT_NO_FSYNC"),
    ("mariadb", "10.11", "[mysqld]\ninnodb_doublewrite = 0"),
])
def test_each_dangerous_setting_fails_and_allow_unsafe_keeps_it_visible(
        run_cli, ssd_profile, tmp_path, db, version, line):
    conf = _conf(tmp_path, "conf", line + "\n")
    args = ("check", "--profile", ssd_profile, "--db", db, "--version", version, "--config",
            conf, "--format", "json")
    code, out, _ = run_cli(*args)
    assert code == EXIT_FINDINGS
    ours = [f for f in _findings(out) if f["rule"] == "CK001"]
    assert [f["severity"] for f in ours] == ["fail"], ours
    code, out, _ = run_cli(*args, "--allow-unsafe")
    assert code == 0
    assert [f["severity"] for f in _findings(out) if f["rule"] == "CK001"] == ["warn"]


def test_a_durability_problem_on_pmem_is_reported_once(run_cli, tmp_path):
    prof = _conf(tmp_path, "p.json", json.dumps(make_profile("pmem")))
    conf = _conf(tmp_path, "postgresql.conf", "full_page_writes = off\n")
    code, out, _ = run_cli("check", "--profile", prof, "--db", "postgres", "--version", "16",
                           "--config", conf, "--data-dir", "/mnt/pmem0/pg", "--format", "json")
    assert code == EXIT_FINDINGS
    about = [f for f in _findings(out) if f["subject"] == "full_page_writes"]
    assert len(about) == 1 and about[0]["severity"] == "fail", about


@pytest.mark.parametrize("db,version,line,range_text", [
    ("postgres", "16", "max_connections = -5", "1 .. 262143"),
    ("postgres", "16", "shared_buffers = 128XB", "not a valid size"),
    ("mysql", "8.4", "[mysqld]\ninnodb_flush_log_at_trx_commit = 7", "0 .. 2"),
    ("mariadb", "10.11", "[mysqld]\ninnodb_flush_log_at_trx_commit = 7", "0 .. 3"),
])
def test_values_outside_the_catalog_fail_naming_the_range(run_cli, ssd_profile, tmp_path, db,
                                                          version, line, range_text):
    conf = _conf(tmp_path, "conf", line + "\n")
    code, out, _ = run_cli("check", "--profile", ssd_profile, "--db", db, "--version", version,
                           "--config", conf, "--format", "json")
    assert code == EXIT_FINDINGS
    bad = [f for f in _findings(out) if f["rule"] == "CK002"]
    assert bad and bad[0]["severity"] == "fail" and range_text in bad[0]["message"], bad


# ---------------------------------------------------------------- bad input
def test_unknown_knobs_are_reported_not_a_crash(run_cli, ssd_profile, tmp_path):
    conf = _conf(tmp_path, "postgresql.conf",
                 "pg_stat_statements.max = 1000\nno_such_setting_at_all = 3\n")
    code, out, _ = run_cli("check", "--profile", ssd_profile, "--db", "postgres", "--version",
                           "16", "--config", conf, "--format", "json")
    assert code == 1  # PostgreSQL 16's own list lacks it: the server would not start
    found = {f["subject"]: f for f in _findings(out) if f["rule"] == "CK002"}
    assert "pg_stat_statements.max" in found["unchecked knobs"]["message"]
    assert found["no_such_setting_at_all"]["severity"] == "fail"


@pytest.mark.parametrize("db,version,text,needle", [
    ("postgres", "13", "wal_keep_segments = 64", "removed in PostgreSQL 13 (use wal_keep_size"),
    ("postgres", "14", "operator_precedence_warning = off", "removed in PostgreSQL 14"),
    ("postgres", "15", "stats_temp_directory = 'pg_stat_tmp'", "removed in PostgreSQL 15"),
    ("postgres", "16", "vacuum_defer_cleanup_age = 0", "removed in PostgreSQL 16"),
    ("postgres", "17", "old_snapshot_threshold = -1", "removed in PostgreSQL 17"),
    ("postgres", "18", "shared_bufers = 1GB", "did you mean shared_buffers"),
    ("postgres", "13", "shared_bufers = 1GB", "did you mean shared_buffers"),
    ("mysql", "8.0", "query_cache_size = 0", "removed in MySQL 8.0.3"),
    ("mysql", "8.4", "expire_logs_days = 7", "binlog_expire_logs_seconds"),
    ("mysql", "8.0", "thread_cach_size = 8", "did you mean thread_cache_size"),
    ("mariadb", "10.11", "max_conections = 200", "did you mean max_connections"),
    ("mariadb", "11.4", "innodb_defragment = 1", "removed in MariaDB 11.1"),
])
def test_removed_and_misspelt_options_fail(run_cli, ssd_profile, tmp_path, db, version, text,
                                           needle):
    conf = (_conf(tmp_path, "postgresql.conf", text + "\n") if db == "postgres" else
            _conf(tmp_path, "my.cnf", f"[mysqld]\n{text}\n"))
    code, out, _ = run_cli("check", "--profile", ssd_profile, "--db", db, "--version",
                           version, "--config", conf, "--format", "json")
    assert code == 1
    assert any(f["rule"] == "CK002" and f["severity"] == "fail" and needle in f["message"]
               for f in _findings(out))


@pytest.mark.parametrize("flavour,version,text", [
    ("mysql", "8.0", "thread_cache_size = 64\ntable_definition_cache = 2000\n"
                     "table_open_cache = 4000\nskip-name-resolve\n"),
    ("mysql", "8.4", "thread_cache_size = 64\ntable_definition_cache = 2000\n"),
    ("mariadb", "10.11", "thread_cache_size = 64\nquery_cache_size = 0\n"
                         "innodb_buffer_pool_instances = 4\n"),
    ("mariadb", "11.4", "thread_cache_size = 64\ntable_definition_cache = 2000\n"),
])
def test_valid_options_of_each_version_pass_ck002(run_cli, ssd_profile, tmp_path, flavour,
                                                  version, text):
    conf = _conf(tmp_path, "my.cnf", "[mysqld]\n" + text)
    code, out, _ = run_cli("check", "--profile", ssd_profile, "--db", flavour, "--version",
                           version, "--config", conf, "--format", "json")
    assert not [f for f in _findings(out) if f["rule"] == "CK002" and f["severity"] == "fail"]


def test_an_unknown_target_version_is_exit_2_listing_the_supported(run_cli, ssd_profile,
                                                                    tmp_path):
    conf = _conf(tmp_path, "postgresql.conf", "shared_buffers = 1GB\n")
    code, out, err = run_cli("check", "--profile", ssd_profile, "--db", "postgres",
                             "--version", "99", "--config", conf)
    assert code == 2 and out == "" and "supported: 13, 14, 15, 16, 17, 18" in err


@pytest.mark.parametrize("make_args,needle", [
    (lambda t: ["--db", "postgres", "--config", _conf(t, "my.cnf", "[mysqld]\nx=1\n")],
     "MySQL/MariaDB option file"),
    (lambda t: ["--db", "mysql", "--config", _conf(t, "pg.conf", "shared_buffers = 1GB\n")],
     "looks like a postgresql.conf"),
    (lambda t: ["--db", "mysql", "--version", "8.0", "--config",
                _conf(t, "maria.cnf", "[mariadb]\ninnodb_doublewrite = fast\n")],
     "groups a mysql 8.0 server does not read"),
    (lambda t: ["--config", str(_binary(t))], "binary data"),
    (lambda t: ["--config", str(t / "missing.conf")], "no such file"),
    (lambda t: ["--config", str(t)], "a directory"),
    (lambda t: ["--config", _fifo(t)], "not a regular file"),
    (lambda t: ["--config", "/dev/zero"], "not a regular file"),
    (lambda t: ["--db", "postgres", "--data-dir", "/nonexistent/pgdata"], "no such directory"),
    (lambda t: ["--diff"], "give --dsn"),
    (lambda t: ["--memory", "24"], "--memory 24G"),
    (lambda t: ["--profile", str(GOLDEN / "this-vm.json"), "--memory", "99999T"], "RAM"),
    (lambda t: ["--format", "xml"], "--format"),
])
def test_bad_input_is_one_line_and_exit_2(run_cli, tmp_path, make_args, needle):
    code, out, err = run_cli("check", *make_args(tmp_path))
    assert code == EXIT_USAGE, (out, err)
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err, err


def _fifo(tmp_path: Path) -> str:
    p = tmp_path / "fifo.conf"
    os.mkfifo(p)
    return str(p)


def _binary(tmp_path: Path) -> Path:
    p = tmp_path / "blob.conf"
    p.write_bytes(b"fsync = off\n\x00\x01\x02")
    return p


# ---------------------------------------------------------------- DSNs
def test_unreachable_server_is_exit_3_without_the_password(run_cli, ssd_profile):
    code, _, err = run_cli("check", "--profile", ssd_profile, "--dsn",
                           "host=/nonexistent user=postgres password=s3cr3tpw dbname=x")
    # one error line, after the note that the password in argv is visible (shown even though
    # the connection failed)
    assert code == EXIT_ENVIRONMENT and "s3cr3tpw" not in err
    assert [line.split(":")[0] for line in err.splitlines()] == ["note", "pmem-advisor"]
    code, _, err = run_cli("check", "--profile", ssd_profile, "--dsn",
                           "mysql://root:s3cr3tpw@127.0.0.1:1/x")
    assert code == EXIT_ENVIRONMENT and "s3cr3tpw" not in err


def test_malformed_dsn_is_exit_2_redacted(run_cli, ssd_profile):
    code, _, err = run_cli("check", "--profile", ssd_profile, "--dsn",
                           "postgresql://u:s3cr3tpw@[::1/db")
    assert code == EXIT_USAGE and "s3cr3tpw" not in err and "Traceback" not in err


def test_dsn_from_file_and_environment(run_cli, ssd_profile, tmp_path, monkeypatch):
    f = tmp_path / "dsn"
    f.write_text("host=/nonexistent user=postgres password=f1lesecret dbname=x\n")
    f.chmod(0o600)
    code, _, err = run_cli("check", "--profile", ssd_profile, "--dsn-file", str(f))
    assert code == EXIT_ENVIRONMENT and "/nonexistent" in err and "f1lesecret" not in err
    f.chmod(0o644)
    code, _, err = run_cli("check", "--profile", ssd_profile, "--dsn-file", str(f))
    assert code == EXIT_USAGE and "group or others" in err
    monkeypatch.setenv("PMEM_ADVISOR_DSN", "host=/nonexistent-env user=postgres dbname=x")
    code, _, err = run_cli("check", "--profile", ssd_profile)
    assert code == EXIT_ENVIRONMENT and "/nonexistent-env" in err


# ---------------------------------------------------------------- JUnit
def test_junit_has_testsuites_counts_timestamp_and_visible_warnings(run_cli, ssd_profile,
                                                                    tmp_path):
    conf = _conf(tmp_path, "my.cnf", "[mysqld]\nlog_bin = mariadb-bin\nsync_binlog = 100\n"
                 "innodb_doublewrite = OFF\n")
    code, out, _ = run_cli("check", "--profile", ssd_profile, "--db", "mariadb", "--version",
                           "10.11", "--config", conf, "--format", "junit")
    assert code == EXIT_FINDINGS
    root = ET.fromstring(out.split("?>", 1)[1])
    assert root.tag == "testsuites" and root.get("timestamp")
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert int(root.get("tests")) == len(cases) == int(suite.get("tests"))
    failures = [c for c in cases if c.find("failure") is not None]
    assert int(root.get("failures")) == len(failures) >= 1
    warn = [c for c in cases if c.get("name").startswith("[warn]")]
    assert warn and "up to 99 committed" in warn[0].find("system-out").text
    code, out, _ = run_cli("check", "--profile", ssd_profile, "--format", "junit")
    assert code == 0 and ET.fromstring(out.split("?>", 1)[1]).get("failures") == "0"


# ---------------------------------------------------------------- captured machines
@pytest.mark.parametrize("machine,args,rule,severity,code", [
    ("sector-btt", ["--db", "postgres", "--version", "16", "--data-dir", "/mnt/btt/pg"],
     "CK011", "fail", EXIT_FINDINGS),
    ("sector-btt", ["--db", "mariadb", "--version", "10.11", "--data-dir", "/mnt/btt/mysql"],
     "CK011", "info", 0),
    ("legacy-memmap", ["--db", "postgres", "--version", "16", "--data-dir", "/pmem/pgdata"],
     "CK003", "fail", EXIT_FINDINGS),
    ("legacy-memmap", [], "CK003", "warn", 0),
    ("interleaved-2s-fsdax", ["--db", "postgres", "--version", "16", "--data-dir",
                              "/mnt/pmem0/pgdata", "--wal-dir", "/mnt/pmem1/wal"],
     "CK010", "warn", 0),
    ("noninterleaved-2s", ["--db", "postgres", "--version", "16", "--data-dir",
                           "/mnt/pmem6/data"], "CK011", "fail", EXIT_FINDINGS),
    ("this-vm", ["--db", "postgres", "--version", "16", "--data-dir", "/dev/shm/pg"],
     "CK003", "fail", EXIT_FINDINGS),
])
def test_captured_machines(run_cli, machine, args, rule, severity, code):
    got, out, _ = run_cli("check", "--profile", str(GOLDEN / f"{machine}.json"), *args,
                          "--format", "json")
    assert got == code
    assert any(f["rule"] == rule and f["severity"] == severity for f in _findings(out)), out


def test_every_captured_machine_checks_without_error(run_cli):
    from pmem_advisor.schemas import validate

    for path in sorted(GOLDEN.glob("*.json")):
        code, out, err = run_cli("check", "--profile", str(path), "--format", "json")
        assert code in (0, EXIT_FINDINGS), (path.name, err)
        doc = json.loads(out)
        assert validate(doc) == "pmem-advisor.check/1"
        assert {"source", "diff", "budget", "memory", "notes", "emulated_pmem"} <= set(doc)


# ---------------------------------------------------------------- running services
def _wait_for(condition, what: str, deadline_s: float = 20.0):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.skipif(not os.path.exists(PG_SOCKET), reason="no PostgreSQL service on this machine")
def test_running_postgres_status_and_diff(run_cli):
    import psycopg

    conninfo = "host=/var/run/postgresql user=postgres dbname=postgres"
    with psycopg.connect(conninfo, autocommit=True) as conn:  # a sort that spills to disk
        conn.execute("SET work_mem = '64kB'")
        conn.execute("SELECT g FROM generate_series(1, 100000) g ORDER BY g DESC").fetchall()

    def temp_files():
        with psycopg.connect(conninfo, autocommit=True) as conn:
            return conn.execute("SELECT sum(temp_files) FROM pg_stat_database").fetchone()[0]
    _wait_for(temp_files, "pg_stat_database.temp_files")
    code, out, err = run_cli("check", "--dsn", PG_DSN, "--diff", "--format", "json")
    assert code in (0, EXIT_FINDINGS), err
    data = json.loads(out)
    from pmem_advisor.schemas import validate

    assert validate(data) == "pmem-advisor.check/1"
    assert data["source"] == "server" and data["target"]["flavour"] == "postgresql"
    spills = [f for f in data["findings"] if f["rule"] == "CK007" and f["subject"] == "temp files"]
    assert spills and "temporary files" in spills[0]["message"], data["findings"]
    assert data["memory"]["total_bytes"] > 0 and data["budget"]
    assert isinstance(data["diff"], list) and data["diff"], "recommend differs from defaults"
    row = data["diff"][0]
    assert row["statement"].startswith(f"ALTER SYSTEM SET {row['name']} = ")
    assert all(r["then"] == "restart the server" for r in data["diff"] if r["restart"])


def _mariadb_status() -> dict:
    from pmem_advisor.mysql_driver import connect

    conn = connect(unix_socket=MY_SOCKET, user="root")
    try:
        cur = conn.cursor()
        cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN ('Connections', "
                    "'Aborted_connects')")
        return {str(k): int(v) for k, v in cur.fetchall()}
    finally:
        conn.close()


@pytest.mark.skipif(not os.path.exists(MY_SOCKET), reason="no MariaDB service on this machine")
def test_running_mariadb_status_and_diff(run_cli):
    import math
    import socket

    # clients that hang up during the handshake: Aborted_connects above MySQLTuner's 3%
    before = _mariadb_status()
    conns, aborted = before["Connections"], before["Aborted_connects"]
    n = max(1, 100 - conns, math.ceil((0.04 * conns - aborted) / 0.96))
    assert n < 50_000, "the service has too many connections to tip the ratio in a test"
    for _ in range(n):
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(MY_SOCKET)
            s.recv(1024)  # the server's greeting; then leave without logging in
    _wait_for(lambda: _mariadb_status()["Aborted_connects"] >= aborted + n, "Aborted_connects")
    code, out, err = run_cli("check", "--dsn", MY_DSN, "--diff", "--format", "json")
    assert code in (0, EXIT_FINDINGS), err
    data = json.loads(out)
    assert data["target"]["flavour"] == "mariadb"
    assert any(f["rule"] == "CK008" and f["subject"] == "aborted connects"
               for f in data["findings"]), data["findings"]
    assert data["diff"], "recommend differs from the defaults"
    for r in data["diff"]:
        assert "my.cnf" in r["then"]
        assert (r["statement"] or "").startswith("SET GLOBAL ") or r["restart"]


def test_db_flavour_mismatch_with_the_running_server_is_exit_2(run_cli):
    code, _, err = run_cli("check", "--dsn", f"mysql://root@localhost/?unix_socket={MY_SOCKET}",
                           "--db", "postgres")
    assert code == EXIT_USAGE and "mysql DSN but --db is postgres" in err
    code, _, err = run_cli("check", "--dsn", PG_DSN, "--db", "mariadb")
    assert code == EXIT_USAGE and err.count("\n") == 1


@pytest.mark.skipif(not os.path.exists(PG_SOCKET), reason="no PostgreSQL service on this machine")
def test_read_server_names_the_postmaster_not_our_backend():
    from pmem_advisor.instances.live import read_server

    s = read_server(PG_DSN, "postgres")
    assert s["pid"] and os.path.exists(f"/proc/{s['pid']}")  # alive after we disconnected
    assert os.path.isabs(s["data_dir"]) and s["status"]["uptime_s"] > 0


@pytest.mark.parametrize("machine,args,config,rule,severity", [
    ("sector-btt", ["--db", "postgres", "--version", "16", "--data-dir", "/mnt/btt/pg"], None,
     "CK011", "fail"),
    ("container-v2", ["--db", "postgres", "--version", "16", "--data-dir",
                      "/var/lib/postgresql/data"],
     "shared_buffers = 5GB\nwork_mem = 64MB\nmax_connections = 200\n", "CK004", "fail"),
])
def test_captured_trees_with_root(run_cli, tmp_path, machine, args, config, rule, severity):
    from tests.probes.machine_builder import build

    root = build(machine, tmp_path / machine)
    extra = ["--config", _conf(tmp_path, "postgresql.conf", config)] if config else []
    code, out, err = run_cli("check", "--root", str(root), *args, *extra, "--format", "json")
    assert code == EXIT_FINDINGS, err
    found = [f for f in _findings(out) if f["rule"] == rule]
    assert found and found[0]["severity"] == severity, out
    if rule == "CK004":  # the cgroup's 4 GiB, not the host's 252 GiB, is the budget
        assert "cgroup memory.max" in found[0]["message"]


@pytest.mark.parametrize("db,version,name", [("postgres", "18", "postgresql.conf"),
                                             ("mariadb", "10.11", "my.cnf")])
def test_what_recommend_writes_passes_check(run_cli, ssd_profile, tmp_path, db, version, name):
    """Deployable outputs: a recommended config has no failure and fits the memory budget
    with the headroom CK004 wants (one BUDGET_SHARE for both)."""
    out_file = tmp_path / name
    code, _, err = run_cli("recommend", db, "--profile", ssd_profile, "--version", version,
                           "--data-dir", "/var/lib/db", "--out", str(out_file))
    assert code == 0, err
    code, out, err = run_cli("check", "--profile", ssd_profile, "--db", db, "--version", version,
                             "--data-dir", "/var/lib/db", "--config", str(out_file),
                             "--format", "json")
    found = _findings(out)
    assert code == 0, found
    assert not [f for f in found if f["severity"] == "fail" or f["rule"] in ("CK002", "CK004")]


# ---------------------------------------------------------------- --db names the flavour
def test_db_mysql_without_version_targets_mysql_not_the_installed_mariadb(run_cli, ssd_profile,
                                                                           tmp_path):
    conf = _conf(tmp_path, "my8.cnf",
                 "[mysqld]\ninnodb_redo_log_capacity = 2G\ninnodb_dedicated_server = ON\n")
    code, out, err = run_cli("check", "--profile", ssd_profile, "--db", "mysql", "--config",
                             conf, "--format", "json")
    assert [f for f in _findings(out) if f["rule"] == "CK002"] == [], out
    assert json.loads(out)["target"]["flavour"] == "mysql" and code == 0
    assert "target: MySQL 8.4, the newest" in err or "target: mysql 8" in err, err
    code, out, _ = run_cli("check", "--profile", ssd_profile, "--db", "mariadb", "--config",
                           conf, "--format", "json")
    assert code == EXIT_FINDINGS and json.loads(out)["target"]["flavour"] == "mariadb"


def test_log_bin_with_a_base_name_passes(run_cli, ssd_profile, tmp_path):
    conf = _conf(tmp_path, "t.cnf", "[mysqld]\nlog_bin = mysql-bin\n")
    code, out, _ = run_cli("check", "--profile", ssd_profile, "--db", "mariadb", "--version",
                           "10.11", "--config", conf, "--format", "json")
    assert code == 0 and [f for f in _findings(out) if f["rule"] == "CK002"] == [], out


def test_json_is_an_alias_of_format_json(run_cli, ssd_profile, tmp_path):
    conf = _conf(tmp_path, "postgresql.conf", "max_connections = -5\n")
    code, out, _ = run_cli("check", "--profile", ssd_profile, "--db", "postgres", "--version",
                           "16", "--config", conf, "--json")
    assert code == EXIT_FINDINGS and json.loads(out)["schema"] == "pmem-advisor.check/1"
    assert [f for f in _findings(out) if f["rule"] == "CK002"], out
    code, _, err = run_cli("check", "--profile", ssd_profile, "--json", "--format", "junit")
    assert code == EXIT_USAGE and "contradict" in err


def test_hdd_settings_on_a_measured_ssd_warn_saying_what_was_measured(run_cli, tmp_path):
    prof = make_profile("ssd")
    note = "medium: ssd (measured 0.048 ms random 4 KB read, 3412 write IOPS (fio))"
    prof["paths"] = [{"path": "/srv/pg", "mountpoint": "/", "fstype": "ext4", "medium": "ssd",
                      "medium_source": "measured", "medium_note": note,
                      "measured": {"read_iops": 17358, "write_iops": 3412}}]
    p = tmp_path / "p.json"
    p.write_text(json.dumps(prof))
    conf = _conf(tmp_path, "hdd.conf", "random_page_cost = 4\neffective_io_concurrency = 2\n")
    code, out, _ = run_cli("check", "--profile", str(p), "--config", conf, "--db", "postgres",
                           "--version", "18", "--data-dir", "/srv/pg", "--json")
    found = {f["subject"]: f for f in _findings(out) if f["rule"] == "CK016"}
    assert code == 0 and set(found) == {"random_page_cost", "effective_io_concurrency"}, out
    assert all(f["severity"] == "warn" and note in f["message"] for f in found.values())
    code, out, _ = run_cli("check", "--profile", str(p), "--db", "postgres", "--version", "18",
                           "--data-dir", "/srv/pg", "--json", "--config",
                           _conf(tmp_path, "ssd.conf", "random_page_cost = 1.1\n"))
    assert code == 0 and not [f for f in _findings(out) if f["rule"] == "CK016"], out
