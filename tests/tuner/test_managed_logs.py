"""A trial whose config resizes the redo log measures it in steady state: the evaluator
stops the server, writes the fresh log once and starts again before the workload runs."""

from __future__ import annotations

import os
from types import SimpleNamespace

from pmem_advisor.tuner.evaluator import TrialConfig
from pmem_advisor.tuner.managed import ManagedEvaluator


class FakeInstance:
    """Starts 'resize' the redo log the way InnoDB does: a fresh preallocated file."""

    def __init__(self, tmp_path):
        self.log = tmp_path / "ib_logfile0"
        self.log.write_bytes(b"x" * 4096)
        self.events: list[str] = []
        self.running = False
        self.conninfo = None

    def log_files(self):
        return [self.log]

    def start(self, text: str) -> None:
        self.events.append("start")
        if "innodb_log_file_size" in text and self.log.stat().st_size == 4096:
            fd = os.open(self.log, os.O_RDWR)
            os.posix_fallocate(fd, 0, 1 << 20)
            os.close(fd)
        self.running = True

    def stop(self) -> None:
        self.events.append("stop")
        self.running = False

    def is_running(self) -> bool:
        return self.running


def _evaluator(inst, monkeypatch, written):
    workload = SimpleNamespace(run=lambda conn, **kw: SimpleNamespace(
        throughput_tps=100.0, latency_ms={"p50": 1, "p95": 2, "p99": 3}, errors=0,
        duration_s=1.0, workload="w", clients=1))
    binary = SimpleNamespace(engine="mysql", flavour="mariadb", version="10.11")
    ev = ManagedEvaluator(binary, workload, scale=1, clients=1, duration=1)
    monkeypatch.setattr(ev, "_prepare", lambda config: inst)
    monkeypatch.setattr(ev, "config_text", lambda config: "\n".join(
        f"{k} = {v}" for k, v in config.params.items()))
    monkeypatch.setattr("pmem_advisor.instances.precondition.materialize",
                        lambda p: written.append(str(p)) or 0)
    return ev


def test_a_resized_log_is_written_once_before_measuring(tmp_path, monkeypatch):
    inst, written = FakeInstance(tmp_path), []
    ev = _evaluator(inst, monkeypatch, written)
    m = ev.evaluate(TrialConfig(params={"innodb_log_file_size": 1 << 20}))
    assert m.ok and written == [str(inst.log)]
    assert inst.events == ["start", "stop", "start", "stop"]  # settle, then the trial's stop


def test_an_unchanged_log_costs_nothing(tmp_path, monkeypatch):
    inst, written = FakeInstance(tmp_path), []
    ev = _evaluator(inst, monkeypatch, written)
    assert ev.evaluate(TrialConfig(params={"innodb_io_capacity": 400})).ok
    assert written == [] and inst.events == ["start", "stop"]
