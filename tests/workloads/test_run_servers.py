"""Every workload at tiny scale on managed PostgreSQL 18 (embedded), 15 (Debian) and MariaDB
10.11: non-zero throughput and sane latencies; SIGKILL of the server during a run."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from pmem_advisor.errors import EnvironmentProblem
from pmem_advisor.workloads.registry import get_workload, list_workloads
from tests.faults.conftest import wait_for

pytestmark = pytest.mark.server

# Tiny data: each load takes about a second; sysbench runs whole seconds.
TINY = {
    "tpcc": {"density": 0.01},
}
SCALE = {"sysbench-oltp-read-write": 1, "olap-tpch-lite": 1}
# A warm-up runs the same code in every workload of a tool: one per tool family keeps it
# proven; the others run without one, which also proves a run too short for any per-second
# report still says how long it measured.
WARMED = {"pgbench-tpcb", "sysbench-oltp-read-write", "tpcc", "ycsb-a", "olap-tpch-lite",
          "sql-file"}


def _options(name: str, tmp_path, engine: str) -> dict:
    if name == "pgbench-custom":
        script = tmp_path / "select.pgbench"
        script.write_text("\\set aid random(1, 100000 * :scale)\n"
                          "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n")
        return {"script": str(script)}
    if name == "sql-file":
        setup = tmp_path / "setup.sql"
        setup.write_text("DROP TABLE IF EXISTS kv;\nCREATE TABLE kv (k INT PRIMARY KEY, v INT);\n"
                         "INSERT INTO kv VALUES (1, 1), (2, 2), (3, 3);\n")
        script = tmp_path / "replay.sql"
        script.write_text("SELECT v FROM kv WHERE k = 2;\n-- a comment; with a semicolon\n"
                          "UPDATE kv SET v = v + 1 WHERE k = 3;\n")
        return {"script": str(script), "setup": str(setup)}
    return dict(TINY.get(name, {}))


@pytest.mark.parametrize("name", list_workloads())
def test_workload_runs(server, name, tmp_path):
    conn = server.conninfo
    wl = get_workload(name, **_options(name, tmp_path, conn.engine))
    if conn.engine not in wl.engines:
        pytest.skip(f"{name} does not run on {conn.engine}")
    wl.load(conn, SCALE.get(name, 1))
    # a fresh object, as the tuner uses after a golden restore: the scale comes from the data
    fresh = get_workload(name, **{k: v for k, v in wl.options.items()
                                  if k in ("script", "setup")})
    result = fresh.run(conn, clients=2, duration=1, warmup=1 if name in WARMED else 0)
    assert result.workload == name and result.engine == conn.engine
    assert result.throughput_tps > 0
    lat = result.latency_ms
    assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"] < 5000, lat
    assert 0.5 <= result.duration_s <= 10
    assert result.errors >= 0
    if name == "tpcc":
        assert fresh.options["density"] == TINY["tpcc"]["density"]  # restored from the data
    server.raise_if_dead()


def _load_generator_running() -> bool:
    """pgbench or sysbench started by this process is up."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        try:
            if child.name() in ("pgbench", "sysbench"):
                return True
        except psutil.Error:
            continue
    return False


def _kill_during_run(server, name: str, opts: dict) -> EnvironmentProblem:
    conn = server.conninfo
    wl = get_workload(name, **opts)
    wl.load(conn, 1)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            wl.run(conn, clients=2, duration=20, warmup=0)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            failure.append(e)

    t = threading.Thread(target=run)
    t.start()
    # Kill once the load generator is running (not after a guessed delay: on a loaded
    # machine 1.5 s was sometimes before the run began, sometimes after it failed).
    wait_for(lambda: _load_generator_running() or not t.is_alive(), 60,
              "the load generator to start")
    os.kill(server.pid, signal.SIGKILL)
    t.join(timeout=60)
    assert not t.is_alive(), "the run did not notice that the server died"
    assert failure and isinstance(failure[0], EnvironmentProblem), failure
    return failure[0]


@pytest.mark.parametrize("name", ["pgbench-tpcb", "ycsb-a"])
def test_sigkill_during_run_fails_clearly_and_next_run_works(server, name):
    if name.startswith("pgbench") and server.conninfo.engine != "postgres":
        pytest.skip("pgbench is PostgreSQL only")
    if server.binary.source == "debian" and name == "ycsb-a":
        pytest.skip("one kill per PostgreSQL server is enough")
    err = _kill_during_run(server, name, {})
    assert "failed" in err.message and len(err.message.splitlines()) == 1
    # SIGKILL is asynchronous: the server is gone once the kernel has reaped it.
    wait_for(lambda: not server.is_running(), 30, "the killed server to be gone")
    # the next trial: restart (crash recovery) and run again on the same data
    server.start("")
    result = get_workload(name).run(server.conninfo, clients=1, duration=1)
    assert result.throughput_tps > 0
