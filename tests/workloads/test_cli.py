"""`pmem-advisor workload list|run`: listing, usage errors, and one real run as JSON."""

from __future__ import annotations

import json

import pytest


def test_list_json(run_cli):
    code, out, _ = run_cli("workload", "list", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)["workloads"]}
    assert rows["pgbench-tpcb"]["engines"] == ["postgres"]
    assert rows["tpcc"]["options"] == ["density"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["mysql", "--workload", "pgbench-tpcb"], "runs on postgres"),
        (["oracle", "--workload", "tpcc"], "engine must be"),
        (["postgres", "--workload", "tpcx"], "did you mean tpcc"),
        (["postgres", "--workload", "tpcc", "--option", "density"], "KEY=VALUE"),
        (["postgres", "--workload", "sql-file"], "needs a file"),
        (["postgres", "--workload", "ycsb-a", "--config", "/nonexistent.conf"], "cannot read"),
    ],
)
def test_run_usage_errors(run_cli, args, message):
    code, _, err = run_cli("workload", "run", *args)
    assert code == 2
    assert message in err and "Traceback" not in err


@pytest.mark.server
def test_run_json_on_managed_postgres_in_shm(run_cli, workload_sandbox, tmp_path):
    data_dir = f"/dev/shm/pmem-advisor-wl-test-{tmp_path.name}"
    code, out, err = run_cli("workload", "run", "postgres", "--workload", "ycsb-b",
                             "--clients", "2", "--duration", "1", "--warmup", "1",
                             "--data-dir", data_dir, "--json")
    assert code == 0, err
    data = json.loads(out)
    for key in ("engine", "flavour", "version", "workload", "clients", "throughput_tps",
                "latency_ms", "errors", "duration_s"):
        assert key in data
    assert data["engine"] == "postgres" and data["workload"] == "ycsb-b"
    assert data["schema"] == "pmem-advisor.workload-run/1"
    assert data["throughput_tps"] > 0 and data["latency_ms"]["p99"] > 0
    assert "stands in for persistent memory" in err
    import os

    assert not os.path.exists(data_dir)


@pytest.mark.server
def test_run_with_a_refused_config_shows_the_servers_reason(run_cli, workload_sandbox, tmp_path):
    conf = tmp_path / "bad.cnf"
    conf.write_text("[mysqld]\ninnodb_buffer_pool_size = banana\n")
    code, _, err = run_cli("workload", "run", "mysql", "--workload", "ycsb-c",
                           "--config", str(conf), "--duration", "1")
    assert code == 3
    assert "banana" in err or "innodb_buffer_pool_size" in err
