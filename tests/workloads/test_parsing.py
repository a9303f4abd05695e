"""Parsing of real load-generator outputs (captured from sysbench 1.0.20, pgbench 15) and the
pure helpers: percentiles, SQL splitting, the registry, data generation SQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmem_advisor.engines.postgres.pgbench import parse_pgbench_summary, parse_transaction_logs
from pmem_advisor.errors import EnvironmentProblem, InputError, UsageError
from pmem_advisor.workloads.base import (
    percentiles_from_histogram,
    percentiles_from_samples,
    tool_error,
)
from pmem_advisor.workloads.olap import generation_sql, load_queries
from pmem_advisor.workloads.registry import get_workload, list_workloads
from pmem_advisor.workloads.sqlsplit import read_statements, split_statements
from pmem_advisor.workloads.sysbench import connection_args, parse_sysbench_output
from tests.workloads.conftest import DATA


def _read(name: str) -> str:
    return (DATA / name).read_text()


def test_sysbench_final_report_after_checkpoint():
    text = _read("sysbench_pg15_rw_checkpoint.txt")
    r = parse_sysbench_output(text)
    # the checkpoint report (warm-up) comes first; the final one covers the window after it
    assert text.count("SQL statistics:") == 2
    assert r["transactions"] == 675 and r["tps"] == pytest.approx(336.29)
    assert r["ignored_errors"] == 8
    assert r["total_time_s"] == pytest.approx(3.0046)
    assert r["latency"]["pct"] == pytest.approx(17.01)
    hist_total = sum(c for _, c in r["histogram"])
    assert abs(hist_total - r["transactions"]) <= 0.01 * r["transactions"]
    pct = percentiles_from_histogram(r["histogram"])
    assert pct["p50"] <= pct["p95"] <= pct["p99"]
    assert pct["p99"] == pytest.approx(r["latency"]["pct"], rel=0.05)


def test_sysbench_report_without_checkpoint():
    r = parse_sysbench_output(_read("sysbench_mariadb_point_select.txt"))
    assert r["transactions"] > 0 and r["tps"] > 0 and r["qps"] == r["tps"]
    assert sum(c for _, c in r["histogram"]) == pytest.approx(r["transactions"], rel=0.01)


def test_sysbench_without_statistics_is_an_error():
    with pytest.raises(EnvironmentProblem, match="no statistics"):
        parse_sysbench_output(_read("sysbench_mysql_connect_error.out"))


def test_tool_error_keeps_the_servers_words():
    msg = tool_error(_read("sysbench_mysql_connect_error.out"), "")
    assert "unable to connect" in msg and "Can't connect to local server" in msg
    msg = tool_error(_read("sysbench_pg_missing_table.out"), "")
    assert 'ERROR:  relation "sbtest' in msg and "does not exist" in msg
    msg = tool_error(_read("pgbench15_bad_db.out"), _read("pgbench15_bad_db.err"))
    assert 'database "nonexistent_db_x" does not exist' in msg
    assert tool_error("", "") == "no output"


def test_pgbench_summary():
    s = parse_pgbench_summary(_read("pgbench15_tpcb.out"))
    assert s["transactions"] == 306 and s["failed"] == 0
    assert s["tps"] == pytest.approx(308.115831)
    assert s["latency_avg_ms"] == pytest.approx(6.491)
    assert s["duration_s"] == 1
    with pytest.raises(EnvironmentProblem):
        parse_pgbench_summary(_read("pgbench15_bad_db.err"))


def test_pgbench_summary_of_older_versions():
    text = ("number of transactions actually processed: 10\n"
            "tps = 9.5 (including connections establishing)\n"
            "tps = 10.1 (excluding connections establishing)\n")
    assert parse_pgbench_summary(text)["tps"] == pytest.approx(10.1)


def test_pgbench_transaction_log(tmp_path):
    lines = _read("pgbench15_txn_log_sample.log").splitlines()
    us = sorted(int(ln.split()[2]) for ln in lines)
    log = tmp_path / "txn.1"
    log.write_text("\n".join(lines + ["0 999 failed 0 1795357997 1", "garbage"]) + "\n")
    r = parse_transaction_logs([log])
    assert r["logged"] == len(lines) and r["failed"] == 1
    # nearest-rank over 10 us buckets
    assert r["latency_ms"]["p50"] == pytest.approx(us[(len(us) + 1) // 2 - 1] / 1000, abs=0.01)
    assert r["latency_ms"]["p99"] == pytest.approx(us[-4] / 1000, abs=0.05)


def test_percentiles():
    assert percentiles_from_samples(list(range(1, 101))) == {"p50": 50, "p95": 95, "p99": 99}
    assert percentiles_from_histogram([]) == {"p50": None, "p95": None, "p99": None}
    assert percentiles_from_histogram([(2.0, 1), (1.0, 99)])["p99"] == 1.0


def test_split_statements():
    text = """
    -- leading comment; with semicolon
    INSERT INTO t VALUES ('a;b', "c;d");  /* block; comment */
    CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;
    SELECT 'it''s';
    # mysql comment;
    SELECT 2
    """
    stmts = split_statements(text)
    assert stmts[0] == "INSERT INTO t VALUES ('a;b', \"c;d\")"
    assert stmts[1].endswith("$body$ SELECT 1; $body$ LANGUAGE sql")
    assert stmts[2] == "SELECT 'it''s'"
    assert stmts[3] == "SELECT 2"
    assert len(stmts) == 4


def test_read_statements_refuses_empty_and_missing(tmp_path):
    empty = tmp_path / "e.sql"
    empty.write_text("-- nothing\n;;\n")
    with pytest.raises(InputError, match="no statements"):
        read_statements(empty)
    with pytest.raises(InputError, match="cannot read"):
        read_statements(tmp_path / "missing.sql")


def test_registry():
    names = list_workloads()
    for n in ("pgbench-tpcb", "pgbench-custom", "sysbench-oltp-read-write",
              "sysbench-oltp-write-only", "sysbench-oltp-read-only",
              "sysbench-oltp-point-select", "tpcc", "ycsb-a", "ycsb-b", "ycsb-c", "ycsb-f",
              "olap-tpch-lite", "sql-file"):
        assert n in names
    with pytest.raises(UsageError, match="ycsb-a"):
        get_workload("ycsb-aa")
    with pytest.raises(UsageError, match="no option"):
        get_workload("tpcc", warehouses=3)
    with pytest.raises(UsageError, match="needs a script"):
        get_workload("pgbench-custom")
    with pytest.raises(UsageError, match="does not exist"):
        get_workload("pgbench-custom", script="/nonexistent/x.sql")
    assert get_workload("pgbench-tpcb").engines == ("postgres",)
    assert get_workload("ycsb-c").write_heavy is False


def test_tpcc_density_shrinks_cardinalities():
    args = get_workload("tpcc", density=0.01).script_args(3)
    assert args == ["--warehouses=3", "--items=1000", "--customers=30"]
    assert get_workload("tpcc").script_args(1)[1:] == ["--items=100000", "--customers=3000"]
    with pytest.raises(UsageError):
        get_workload("tpcc", density=2).script_args(1)


def test_olap_generation_sql_per_engine():
    pg = " ".join(generation_sql("postgres", 2))
    my = " ".join(generation_sql("mysql", 2))
    assert "DATE_ADD" in my and "DATE_ADD" not in pg and "ENGINE=InnoDB" in my
    assert "olap_nums WHERE n < 30000" in pg  # 15000 orders per scale unit
    assert set(load_queries()) >= {"q1", "q3", "q5", "q6"}


def test_sysbench_connection_args():
    from pmem_advisor.connection import ConnInfo

    pg = ConnInfo("postgres", "postgresql", "18.6", "postgres", "bench",
                  socket_dir="/tmp/s", port=5544)
    assert "--pgsql-host=/tmp/s" in connection_args(pg)
    assert "--pgsql-port=5544" in connection_args(pg)
    my = ConnInfo("mysql", "mariadb", "10.11", "root", "bench", socket_path="/tmp/m.sock",
                  password="pw")
    args = connection_args(my)
    assert "--mysql-socket=/tmp/m.sock" in args and "--mysql-password=pw" in args


def test_lua_scripts_are_installed_with_the_package():
    from pmem_advisor.workloads.sysbench import LUA_DIR

    for name in ("tpcc", "ycsb", "sql_file", "pmem_common"):
        assert (Path(LUA_DIR) / f"{name}.lua").is_file()
