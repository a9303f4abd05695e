"""Interim throughput: parsing the tools' progress lines, the steady-state detector, the
fallback to the fixed warm-up, and a streamed run stopped early."""

from __future__ import annotations

import sys

import pytest

from pmem_advisor.errors import EnvironmentProblem
from pmem_advisor.workloads.interim import (
    parse_sample,
    parse_samples,
    steady_start,
    steady_window,
    stream,
)
from tests.sandbox import reaped, signal_after_fork

PGBENCH = """starting vacuum...end.
progress: 1.0 s, 812.9 tps, lat 4.901 ms stddev 2.112, 0 failed
progress: 2.0 s, 1530.2 tps, lat 2.610 ms stddev 0.901, 0 failed
"""
SYSBENCH = """[ 1s ] thds: 8 tps: 1203.77 qps: 7237.58 (r/w/o: 0.00/4822.06/2415.53) lat (ms,99%): 21.50 err/s: 0.00 reconn/s: 0.00
[ 2s ] thds: 8 tps: 1450.02 qps: 8700.12 (r/w/o: 0.00/5800.08/2900.04) lat (ms,99%): 14.73 err/s: 0.00 reconn/s: 0.00
"""  # noqa: E501


def test_progress_lines_of_both_tools():
    assert parse_samples(PGBENCH) == [812.9, 1530.2]
    assert parse_samples(SYSBENCH) == [1203.77, 1450.02]
    assert parse_sample("transaction type: <builtin: TPC-B (sort of)>") is None


def test_detector_cuts_the_ramp():
    ramp = [200, 600, 900]
    flat = [1000, 1010, 990, 1006, 994, 1008, 992, 1003, 997, 1009, 991, 1005, 995, 1010]
    cut = steady_start(ramp + flat)
    assert cut is not None and 3 <= cut <= 4, cut
    w = steady_window(ramp + flat, fixed_warmup=2)
    assert w.detected and w.cut == cut and w.tps == pytest.approx(1000, rel=0.01)


def test_detector_never_shortens_the_given_warmup():
    flat = [1000 + (7 * i % 5) for i in range(20)]
    assert steady_start(flat) is not None
    w = steady_window(flat, fixed_warmup=5)
    assert w.detected and w.cut == 5


def test_detector_lengthens_the_warmup_of_a_slow_ramp():
    ramp = [100.0, 300.0, 500.0, 700.0, 850.0, 950.0]
    flat = [1000, 1010, 990, 1006, 994, 1008, 992, 1003, 997, 1009, 991, 1005, 995, 1010,
            1000, 996]
    w = steady_window(ramp + flat, fixed_warmup=2)
    assert w.detected and 5 <= w.cut <= 7 and w.tps == pytest.approx(1000, rel=0.01)


def test_too_short_a_run_uses_the_fixed_warmup_and_says_so():
    w = steady_window([100, 500, 900, 1000, 1000, 1000], fixed_warmup=2)
    assert not w.detected and w.cut == 2
    assert "too short to detect a steady state" in w.note
    assert w.tps == pytest.approx(975)


def test_a_run_still_ramping_at_mid_run_is_not_called_steady():
    rising = [100.0 * i for i in range(1, 21)]
    assert steady_start(rising) is None
    assert not steady_window(rising, fixed_warmup=4).detected


def test_fixed_mode_ignores_the_detector():
    w = steady_window([200, 600, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000],
                      fixed_warmup=1, detect=False)
    assert not w.detected and w.cut == 1 and w.note is None


def _script(lines: int, delay: float = 0.05, code: int = 0) -> list[str]:
    body = (f"import sys, time\nfor i in range({lines}):\n"
            f"    print(f'[ {{i+1}}s ] thds: 8 tps: {{1000 + i}}.00 qps: 1', flush=True)\n"
            f"    time.sleep({delay})\nsys.exit({code})\n")
    return [sys.executable, "-c", body]


def test_stream_collects_every_sample():
    run = stream(_script(6), what="fake", timeout=30)
    assert run.samples == [1000.0 + i for i in range(6)] and not run.stopped_early


def test_stream_stops_the_tool_when_told():
    seen: list[int] = []

    def stop_at_three(samples: list[float]) -> bool:
        seen.append(len(samples))
        return len(samples) >= 3

    run = stream(_script(200, delay=0.05), what="fake", timeout=60, on_sample=stop_at_three)
    assert run.stopped_early and len(run.samples) == 3 and seen == [1, 2, 3]


def test_stream_failure_is_one_error():
    with pytest.raises(EnvironmentProblem, match="fake failed"):
        stream(_script(1, code=3), what="fake", timeout=30)


def test_a_ctrl_c_while_the_stream_starts_leaves_no_thread_to_wait_for(monkeypatch):
    """A KeyboardInterrupt that lands while the watchdog starts: the tool is killed and no
    thread is left that the interpreter would wait for at exit (it held a Ctrl-C'd CLI for
    the whole run's timeout)."""
    import threading

    started: list = []

    class InterruptedTimer(threading.Timer):
        def start(self) -> None:
            super().start()
            started.append(self)
            raise KeyboardInterrupt

    monkeypatch.setattr(threading, "Timer", InterruptedTimer)
    with pytest.raises(KeyboardInterrupt):
        stream(_script(200, delay=0.05), what="fake", timeout=60)
    proc = started[0].args[0]
    assert proc.wait(timeout=30) < 0  # killed, not left to run
    waited_for = [t for t in threading.enumerate()
                  if t.is_alive() and not t.daemon and t is not threading.main_thread()]
    assert not waited_for


def test_a_ctrl_c_while_the_tool_starts_leaves_it_neither_running_nor_unreaped():
    """The interrupt lands while ``subprocess.Popen`` starts the load generator (after the
    fork): the tool must be killed and waited for, not left writing its logs into a scratch
    directory the cleanup is removing."""
    with signal_after_fork(sys.executable) as started, pytest.raises(KeyboardInterrupt):
        stream(_script(200, delay=0.05), what="fake", timeout=60)
    assert started and reaped(started[0])
