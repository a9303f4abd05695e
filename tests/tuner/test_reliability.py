"""Issue 17 items 7, 8, 12 on the tuner side, with the synthetic evaluator (fast): SIGTERM
unwinds like Ctrl-C, a killed worker's trial is failed at once, several workers do exactly the
trials asked and run each baseline once, the study records why a run ended, the time budget
covers the re-measurement."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from optuna.trial import TrialState

from pmem_advisor.tuner.results import summarize
from pmem_advisor.tuner.session import END_ATTR, _SigTerm, record_end, run_ends, run_recorded
from pmem_advisor.tuner.storage import open_storage
from pmem_advisor.tuner.study import (
    INTERRUPTED_ATTR,
    RETRY_ATTR,
    SURPLUS_ATTR,
    counted,
    load_existing,
    measured,
    open_study,
)
from pmem_advisor.tuner.tuner import Observer, TuneOptions, Tuner
from tests.conftest import REPO
from tests.faults.conftest import wait_for  # one deadline-bound wait for every test
from tests.tuner.conftest import META, make_space
from tests.tuner.synthetic import SyntheticEvaluator
from tests.tuner.test_shared_study import pg_storage_url  # noqa: F401 - fixture


def _worker(url: str, name: str, trials: int, delay: float, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.tuner.worker", url, name, str(trials),
                             str(delay), *extra], cwd=REPO, stderr=subprocess.PIPE, text=True)


def _running_trial(storage, name: str):
    def pred():
        try:
            s = load_existing(storage, name)
        except Exception:  # noqa: BLE001 - not created yet
            return None
        return next((t for t in s.get_trials() if t.state == TrialState.RUNNING
                     and "config" in t.user_attrs), None)
    return pred


@pytest.mark.parametrize("sig, code, reason", [(signal.SIGTERM, 143, "terminated"),
                                               (signal.SIGINT, 130, "interrupted")])
def test_signal_fails_the_trial_and_records_why(tmp_path, sig, code, reason):
    """Item 7: SIGTERM left the trial RUNNING with no message; now it unwinds like Ctrl-C."""
    url = f"sqlite:///{tmp_path / 'study.db'}"
    storage = open_storage(url)
    open_study(storage, "s", META, make_space(), resume=False)
    p = _worker(url, "s", 5, 30)
    wait_for(_running_trial(storage, "s"), 60, "a trial mid-run")
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    study = load_existing(storage, "s")
    t0 = study.get_trials()[0]
    assert t0.state == TrialState.FAIL and t0.user_attrs[INTERRUPTED_ATTR]
    assert not [t for t in study.get_trials() if t.state == TrialState.RUNNING]
    assert study.user_attrs[END_ATTR]["reason"] == reason
    # Resumable: the interrupted baseline is queued again.
    assert "default" in [t.user_attrs.get("role") for t in study.get_trials()
                         if t.state == TrialState.WAITING]


def test_killed_workers_trial_is_failed_at_once(tmp_path):
    """Item 7: after SIGKILL the next start fails the dead worker's trial without waiting for
    the heartbeat's grace period, and runs it again."""
    url = f"sqlite:///{tmp_path / 'study.db'}"
    storage = open_storage(url)
    open_study(storage, "s", META, make_space(), resume=False)
    p = _worker(url, "s", 3, 30)
    stale = wait_for(_running_trial(storage, "s"), 60, "a trial mid-run")
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    second = _worker(url, "s", 3, 0)
    _, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    trials = load_existing(storage, "s").get_trials()
    dead = trials[stale.number]
    assert dead.state == TrialState.FAIL and "died" in dead.user_attrs[INTERRUPTED_ATTR]
    retried = [t for t in trials if t.user_attrs.get(RETRY_ATTR) == stale.number]
    assert retried and measured(retried[0]) is not None
    assert retried[0].params == dead.params
    assert sum(counted(t) for t in trials) == 3


def _shared_run(url: str, tmp_path, trials: int, extra: tuple[str, ...] = ()):
    go = tmp_path / "go"
    procs = [_worker(url, "shared", trials, 0.3, *extra, "--go", str(go)) for _ in range(2)]
    time.sleep(0)  # both are importing; the go file releases them together
    go.write_text("go")
    codes = []
    for p in procs:
        _, err = p.communicate(timeout=240)
        codes.append((p.returncode, err))
    return codes


@pytest.mark.server
@pytest.mark.parametrize("new", [False, True], ids=["resume", "both-new"])
def test_two_workers_do_exactly_the_trials_asked(pg_storage_url, tmp_path, new):  # noqa: F811
    """Item 8: --trials 4 ran 5 trials with two workers; two workers started at once without
    --resume both ran the baselines."""
    trials = 6
    storage = open_storage(pg_storage_url)
    if not new:
        open_study(storage, "shared", META, make_space(), resume=False)
    codes = _shared_run(pg_storage_url, tmp_path, trials, ("--new",) if new else ())
    ok = [c for c, _ in codes if c == 0]
    assert ok and all(c in (0, 2) for c, _ in codes), codes  # 2: "exists, pass --resume"
    study = load_existing(storage, "shared")
    ts = study.get_trials()
    assert sum(counted(t) for t in ts) == trials
    roles = Counter(t.user_attrs.get("role") for t in ts if counted(t))
    assert roles["default"] == 1 and roles["rules"] == 1
    assert not [t for t in ts if t.state == TrialState.RUNNING]
    # A discarded ask says why and is neither counted nor a failure.
    for t in ts:
        if t.user_attrs.get(SURPLUS_ATTR):
            assert t.state == TrialState.FAIL and "failure" not in t.user_attrs
    assert len(run_ends(study)) == len(ok)


def test_workers_ending_together_each_keep_their_end(tmp_path):
    """Two workers finishing at once both record why their run ended (a shared list written
    read-modify-write lost one of them in a clean-clone CI run)."""
    import threading

    import optuna

    url = f"sqlite:///{tmp_path / 'ends.db'}"
    optuna.create_study(study_name="ends", storage=url)
    go = threading.Barrier(2)

    def worker() -> None:
        study = optuna.load_study(study_name="ends", storage=url)
        go.wait()
        for _ in range(10):
            record_end(study, "done", "")

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    study = optuna.load_study(study_name="ends", storage=url)
    assert len(run_ends(study)) == 20
    assert study.user_attrs[END_ATTR]["reason"] == "done"


class FakeClock:
    """Time that moves only when the evaluator measures (1 s per run): the budget test does
    not depend on how loaded the machine is."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class ClockedEvaluator(SyntheticEvaluator):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock

    def evaluate(self, config):
        self.clock.now += 1.0
        return super().evaluate(config)


def test_budget_covers_the_remeasurement(study_factory, space, monkeypatch):
    """Issue 12: the time budget stopped the search only, then the re-measurement ran past
    it; now the search stops early enough for the final runs to fit."""
    import types

    import pmem_advisor.tuner.tuner as tuner_module

    clock = FakeClock()
    monkeypatch.setattr(tuner_module, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    study, space = study_factory(space)
    ev = ClockedEvaluator(clock)
    budget = 30.0
    opts = TuneOptions(trials=1000, repeats=3, top_k=3, time_budget_s=budget,
                       started=clock.now, trial_estimate_s=1.0)
    tuner = Tuner(study, space, ev, opts)
    assert run_recorded(tuner, study, cleanup=ev.close) is None
    assert tuner.stop_reason == "budget"
    assert study.user_attrs[END_ATTR]["reason"] == "budget"
    assert clock.now - opts.started <= budget, len(ev.calls)
    assert len(ev.calls) > 6  # the search did run
    assert tuner.remeasure_runs() > 0


def test_done_is_recorded(study_factory, space):
    study, space = study_factory(space)
    ev = SyntheticEvaluator()
    tuner = Tuner(study, space, ev, TuneOptions(trials=3, repeats=0))
    assert run_recorded(tuner, study, cleanup=ev.close) is None
    assert study.user_attrs[END_ATTR]["reason"] == "done" and ev.closed


class _Signalled(SyntheticEvaluator):
    """Raises what the SIGTERM handler raises, as if the signal came in the middle of a run."""

    def evaluate(self, config):
        super().evaluate(config)
        raise _SigTerm("terminated by SIGTERM")


class _SignalledObserver(Observer):
    """The signal lands while the trial's progress line is printed (before the measurement)."""

    def trial_started(self, number, role, config):
        raise _SigTerm("terminated by SIGTERM")


def _sigterm_in_tell(monkeypatch):
    """The signal lands while the measured result is being stored (after the measurement)."""
    import pmem_advisor.tuner.tuner as tuner_module

    def attrs(m):
        raise _SigTerm("terminated by SIGTERM")

    monkeypatch.setattr(tuner_module, "measurement_attrs", attrs)


@pytest.mark.parametrize("where", ["evaluate", "trial_started", "tell"])
def test_sigterm_anywhere_in_a_trial_fails_it_with_the_reason(study_factory, space,
                                                              monkeypatch, where):
    """Item 7: a real tune SIGTERM'd mid-trial recorded the run's end but left the trial
    RUNNING, absent from summary "failures" and report.md: the signal landed outside the
    measurement's try. Wherever it lands between ask and tell, the trial is FAIL with why."""
    study, space = study_factory(space)
    ev = _Signalled() if where == "evaluate" else SyntheticEvaluator()
    observer = _SignalledObserver() if where == "trial_started" else Observer()
    if where == "tell":
        _sigterm_in_tell(monkeypatch)
    tuner = Tuner(study, space, ev, TuneOptions(trials=3, repeats=0), observer)
    failure = run_recorded(tuner, study, cleanup=ev.close)
    assert isinstance(failure, _SigTerm) and ev.closed
    trials = study.get_trials()
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    t0 = trials[0]
    assert t0.state == TrialState.FAIL and "SIGTERM" in t0.user_attrs[INTERRUPTED_ATTR]
    summary = summarize(study)
    listed = [f for f in summary["failures"] if f["trial"] == t0.number]
    assert listed and "SIGTERM" in listed[0]["reason"], summary["failures"]
    assert study.user_attrs[END_ATTR]["reason"] == "terminated"
    # Resumable: the interrupted baseline is queued again.
    assert [t for t in study.get_trials() if t.state == TrialState.WAITING
            and t.user_attrs.get("role") == "default"]


def test_a_storage_that_goes_away_stops_the_heartbeat_without_a_traceback(monkeypatch):
    """The study file removed under a running tuner (a second `make demo` starting over):
    the heartbeat thread records the error and ends; the worker's next write reports it in
    one line. Before, the thread printed its traceback on stderr."""
    import threading
    import types

    from pmem_advisor.tuner.study import Heartbeat

    class GoneStorage:
        def get_heartbeat_interval(self) -> int:
            return 1

        def record_heartbeat(self, trial_id: int) -> None:
            raise RuntimeError("attempt to write a readonly database")

    uncaught: list = []
    monkeypatch.setattr(threading, "excepthook", uncaught.append)
    beat = Heartbeat(types.SimpleNamespace(_storage=GoneStorage()), 1)
    with beat:
        wait_for(lambda: beat.error is not None, 10, "the heartbeat's error")
    assert "readonly" in str(beat.error)
    assert not uncaught
