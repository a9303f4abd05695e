"""pgbench's command line: one load-generator thread per client."""

from __future__ import annotations

import pytest

from pmem_advisor.connection import ConnInfo
from pmem_advisor.engines.postgres import pgbench


class _Started(Exception):
    pass


def _threads_of_run(monkeypatch, workload, clients: int) -> str:
    seen: list[list[str]] = []

    def fake_stream(argv, **_):
        seen.append(list(argv))
        raise _Started

    monkeypatch.setattr(pgbench, "stream", fake_stream)
    monkeypatch.setattr(pgbench, "pgbench_binary", lambda conn: "pgbench")
    monkeypatch.setattr(workload, "loaded_scale", lambda conn: 4)
    conn = ConnInfo(engine="postgres", flavour="postgresql", version="18.6", user="u", dbname="d",
                    host="127.0.0.1", port=5432)
    with pytest.raises(_Started):
        workload._run_once(conn, clients=clients, duration=5, warmup=1)
    argv = seen[0]
    return argv[argv.index("-j") + 1]


@pytest.mark.parametrize("clients", [1, 4, 8])
def test_every_client_gets_its_own_thread(monkeypatch, clients):
    """Threads serving several connections made runs of one config settle on levels a quarter
    apart for 20-40 s on the 2-CPU VMs (benchmarks/data/noise/demo-threads.json)."""
    assert _threads_of_run(monkeypatch, pgbench.PgbenchTpcb(), clients) == str(clients)


def test_the_cpu_count_threads_stay_available_for_the_noise_measurements(monkeypatch):
    w = pgbench.PgbenchTpcb()
    w.thread_per_client = False
    monkeypatch.setattr(pgbench.os, "cpu_count", lambda: 2)
    assert _threads_of_run(monkeypatch, w, 8) == "2"
