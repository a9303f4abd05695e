"""Interim throughput: per-second samples of a running load generator, the steady state in them.

Load generators report throughput while they run (pgbench ``--progress``, sysbench
``--report-interval``). This module turns those reports into one list of samples (one value
per interval, in the workload's unit per second) and finds where the run became steady:

- ``stream`` runs the tool, hands every sample to a callback as it arrives, and stops the tool
  early when the callback says so (a trial clearly below the best so far need not finish);
- ``steady_start`` is the MSER rule (Marginal Standard Error Rule, White 1997; MSER-5 in
  Hoad, Robinson & Davies 2010 is the warm-up detector they rank best): the truncation point
  ``d`` minimising the squared standard error of the mean of the samples after it,
  ``sum((y_i - mean_d)^2) / (n - d)^2``. A minimum beyond half the run means the run never
  settled (the rule's own rejection criterion): too short to detect a steady state, and
  ``steady_window`` falls back to the fixed warm-up and says so;
- ``steady_window`` is the measurement: the mean of the samples after the warm-up, which for
  equal intervals equals transactions / seconds over that window. The detector's cut only
  ever lengthens the given warm-up: measured here (benchmarks/data/noise/), a cut earlier
  than the fixed warm-up did not lower the spread on pgbench and raised it on InnoDB writes,
  whose first seconds run fast until the flushing catches up (MSER called them steady); a
  run still settling after the fixed warm-up is the case the detector catches.
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pmem_advisor.errors import EnvironmentProblem

# The fewest samples after the cut that make a mean worth reporting as steady.
MIN_STEADY_SAMPLES = 5

# pgbench: "progress: 5.0 s, 1234.5 tps, lat 3.210 ms stddev 1.234, 0 failed"
PGBENCH_PROGRESS = re.compile(r"^progress:\s*([0-9.]+)\s*s,\s*([0-9.]+)\s*tps")
# sysbench: "[ 5s ] thds: 8 tps: 1234.56 qps: 24691.20 (r/w/o: ...) lat (ms,99%): ..."
SYSBENCH_REPORT = re.compile(r"^\[\s*([0-9.]+)s\s*\]\s*thds:\s*\d+\s+tps:\s*([0-9.]+)")


def parse_sample(line: str) -> tuple[float, float] | None:
    """(seconds since the start, throughput) from one report line of pgbench or sysbench."""
    for rx in (PGBENCH_PROGRESS, SYSBENCH_REPORT):
        m = rx.match(line.strip())
        if m:
            return float(m.group(1)), float(m.group(2))
    return None


def parse_samples(text: str) -> list[float]:
    """Every interim throughput value in a tool's output, in order."""
    return [s[1] for s in (parse_sample(ln) for ln in text.splitlines()) if s is not None]


# ------------------------------------------------------------------------------ steady state
def steady_start(samples: Sequence[float], *, max_cut: int | None = None,
                 min_after: int = MIN_STEADY_SAMPLES) -> int | None:
    """MSER truncation point: how many leading samples are warm-up. Every cut leaving at
    least ``min_after`` samples is scored; a best cut beyond half the run (or beyond
    ``max_cut``) means the run had not settled, and so does a run of fewer than
    ``2 * min_after`` samples: None, too short to tell."""
    y = [float(v) for v in samples]
    n = len(y)
    if n < 2 * min_after:
        return None
    best, best_d = float("inf"), 0
    for d in range(n - min_after + 1):
        tail = y[d:]
        mean = statistics.fmean(tail)
        score = sum((v - mean) ** 2 for v in tail) / (len(tail) ** 2)
        if score < best:
            best, best_d = score, d
    limit = n // 2 if max_cut is None else min(n // 2, max(0, max_cut))
    return best_d if best_d <= limit else None


@dataclass
class Window:
    """The measured part of a run: mean throughput after the warm-up cut."""

    tps: float | None
    cut: int  # samples (seconds) dropped as warm-up
    detected: bool  # True: the cut came from the detector; False: the fixed warm-up
    samples: int  # samples averaged
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"tps": self.tps, "warmup_cut_s": self.cut, "steady_detected": self.detected,
                "measured_samples": self.samples, "note": self.note}


def steady_window(samples: Sequence[float], fixed_warmup: int, *, interval: float = 1.0,
                  detect: bool = True) -> Window:
    """The measurement of one run from its interim samples: after the detected steady-state
    start when it comes later than ``fixed_warmup`` seconds, else after the fixed warm-up
    (also when detection is off or the run too short to detect anything: said in ``note``)."""
    y = [float(v) for v in samples]
    fixed = min(len(y), max(0, int(round(fixed_warmup / interval))))
    note = None
    if detect:
        cut = steady_start(y)
        if cut is not None:
            cut = max(cut, fixed) if len(y) - fixed >= MIN_STEADY_SAMPLES else cut
            tail = y[cut:]
            return Window(statistics.fmean(tail), cut, True, len(tail))
        note = (f"run too short to detect a steady state ({len(y)} samples): "
                f"fixed warm-up of {fixed_warmup:g} s used")
    tail = y[fixed:] or y
    return Window(statistics.fmean(tail) if tail else None, fixed if y[fixed:] else 0, False,
                  len(tail), note)


# ------------------------------------------------------------------------------ streaming
@dataclass
class Streamed:
    returncode: int
    stdout: str
    stderr: str
    samples: list[float] = field(default_factory=list)
    stopped_early: bool = False


def stream(argv: list[str], *, what: str, timeout: float, on_sample: Callable[
           [list[float]], bool] | None = None, env: dict[str, str] | None = None,
           cwd: str | None = None, report_stream: str = "stdout") -> Streamed:
    """Run a load generator, collecting its interim samples from ``report_stream`` (stdout or
    stderr) as they arrive. ``on_sample(samples_so_far)`` returning True stops the tool with
    SIGINT (then SIGTERM, SIGKILL): the run ends early, recorded as ``stopped_early``. A non-zero
    exit of a run that was not stopped raises with the tool's error, like ``run_tool``."""
    from pmem_advisor.instances.registry import deferred_signals, end_child
    from pmem_advisor.workloads.base import tool_error

    proc: subprocess.Popen | None = None
    try:
        with deferred_signals():  # a Ctrl-C inside Popen would leave the tool running unowned
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, errors="replace", env=env, cwd=cwd, bufsize=1)
    except OSError as e:
        raise EnvironmentProblem(f"{what} could not start: {e.strerror or e}") from e
    except BaseException:
        if proc is not None:
            end_child(proc)
        raise
    reports = proc.stdout if report_stream == "stdout" else proc.stderr
    other = proc.stderr if report_stream == "stdout" else proc.stdout
    other_text: list[str] = []
    lines: list[str] = []
    samples: list[float] = []
    stopped = False
    drain = threading.Thread(target=lambda: other_text.append(other.read()), daemon=True)
    # A daemon: a Ctrl-C that lands while it starts must not leave a thread the interpreter
    # waits for at exit (the whole timeout) after the run was abandoned.
    timer = threading.Timer(timeout, _kill, args=(proc,))
    timer.daemon = True
    try:
        drain.start()
        timer.start()
        for line in reports:
            lines.append(line)
            s = parse_sample(line)
            if s is None or stopped:
                continue
            samples.append(s[1])
            if on_sample is not None and on_sample(list(samples)):
                stopped = True
                _interrupt(proc)
        proc.wait()
    except BaseException:
        end_child(proc)  # killed and waited for: it writes no more logs into the scratch
        raise
    finally:
        timer.cancel()
        if drain.is_alive():
            drain.join(timeout=10)
    timed_out = proc.returncode is not None and proc.returncode < 0 and not stopped and \
        -proc.returncode == signal.SIGKILL
    text = "".join(lines)
    rest = "".join(other_text)
    out, err = (text, rest) if report_stream == "stdout" else (rest, text)
    if timed_out:
        raise EnvironmentProblem(f"{what} did not finish within {timeout:.0f} s")
    if proc.returncode != 0 and not stopped:
        raise EnvironmentProblem(f"{what} failed: {tool_error(out, err)}")
    return Streamed(proc.returncode, out, err, samples, stopped)


def _interrupt(proc: subprocess.Popen) -> None:
    """Stop a tool politely (SIGINT), firmly after 5 s, for good after 10 s."""
    def escalate() -> None:
        for sig, wait in ((signal.SIGINT, 5), (signal.SIGTERM, 5)):
            if proc.poll() is not None:
                return
            try:
                proc.send_signal(sig)
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue
            except OSError:
                return
        _kill(proc)

    threading.Thread(target=escalate, daemon=True).start()


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except OSError:
            pass
