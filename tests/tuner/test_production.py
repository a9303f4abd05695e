"""Issue 12: the tuned file is sized for production, not for the benchmark; the data is as
large as the memory being tuned; the live display says phase, elapsed and ETA. Issue 17 item 11:
a tune that measured nothing exits 3 and writes no config; an unwritable --out is exit 3."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pmem_advisor.errors import UsageError
from pmem_advisor.tuner.evaluator import Evaluator, Measurement, TrialConfig
from pmem_advisor.tuner.session import choose_scale, parse_duration
from pmem_advisor.tuner.target import RESERVED_CONNECTIONS, production_target
from pmem_advisor.workloads.registry import get_workload
from tests.sandbox import require_root

MB, GB = 1 << 20, 1 << 30


# -- production target -------------------------------------------------------------------------
def test_connections_come_from_the_target_not_the_clients():
    t = production_target("postgres", clients=4, connections=200, memory_bytes=8 * GB)
    assert (t.connections, t.memory_bytes) == (200, 8 * GB)
    assert "--connections" in t.connections_source and t.memory_source == "--memory"
    d = production_target("postgres", clients=4, default_connections=300)
    assert d.connections is None and "rules' default" in d.connections_source  # 300 by the rules
    assert d.memory_bytes > 0 and d.memory_source


def test_connections_below_clients_is_refused_with_the_fix():
    with pytest.raises(UsageError, match="--connections 16 or more"):
        production_target("postgres", clients=16, connections=8)


def test_clients_above_the_default_raise_the_target():
    t = production_target("postgres", clients=500, default_connections=300)
    assert t.connections == 500 and "--connections" in t.connections_source


@pytest.mark.server
def test_live_server_connections_via_dsn():
    sock = "/var/run/postgresql"
    if not os.path.exists(f"{sock}/.s.PGSQL.5432") or not shutil.which("psql"):
        pytest.skip("no local PostgreSQL service on /var/run/postgresql")
    live = subprocess.run(["psql", "-h", sock, "-U", "postgres", "-Atc", "show max_connections"],
                          capture_output=True, text=True, timeout=30)
    if live.returncode != 0:
        pytest.skip("the local PostgreSQL service refuses user postgres without a password")
    t = production_target("postgres", clients=2, dsn=f"host={sock} user=postgres dbname=postgres")
    assert t.connections == int(live.stdout) - RESERVED_CONNECTIONS
    assert "live server" in t.connections_source


def test_trial_gets_benchmark_connections_but_not_the_tuned_config():
    from pmem_advisor.tuner.managed import ManagedEvaluator

    class Binary:
        engine, flavour, version, bindir = "postgres", "postgresql", "18.1", "/nonexistent"

    ev = ManagedEvaluator(Binary(), get_workload("pgbench-tpcb"), scale=1, clients=200,
                          duration=1)
    cfg = TrialConfig(params={"max_connections": 100, "shared_buffers": 1024})
    assert ev.bench_params(cfg.params)["max_connections"] == 210  # what the benchmark needs
    assert cfg.params["max_connections"] == 100  # the production value stays in the config
    assert ev.bench_params({"max_connections": 400})["max_connections"] == 400


# -- representative data --------------------------------------------------------------------------
def test_default_scale_follows_the_buffer_being_sized():
    wl = get_workload("pgbench-tpcb")
    scale, notes, warns = choose_scale(wl, scale=None, clients=4, buffer_name="shared_buffers",
                                       buffer_bytes=6 * GB, free_bytes=None)
    assert scale == 384 and wl.data_bytes(scale) >= 6 * GB  # 16 MB per scale unit
    assert "shared_buffers" in notes[0] and not warns


def test_sysbench_scale_in_rows():
    wl = get_workload("sysbench-oltp-write-only")
    scale, _, _ = choose_scale(wl, scale=None, clients=4, buffer_name="innodb_buffer_pool_size",
                               buffer_bytes=2 * GB, free_bytes=None)
    assert wl.data_bytes(scale) >= 2 * GB > wl.data_bytes(scale - 1)


def test_small_given_scale_is_warned_with_the_fix():
    wl = get_workload("pgbench-tpcb")
    scale, _, warns = choose_scale(wl, scale=1, clients=4, buffer_name="shared_buffers",
                                   buffer_bytes=1 * GB, free_bytes=None)
    assert scale == 1
    text = " ".join(warns)
    assert "smaller than shared_buffers" in text and "--scale 64" in text
    assert "scale 1 < --clients 4" in text and "row-lock contention" in text


def test_data_capped_by_free_disk():
    wl = get_workload("pgbench-tpcb")
    scale, _, warns = choose_scale(wl, scale=None, clients=1, buffer_name="shared_buffers",
                                   buffer_bytes=6 * GB, free_bytes=1 * GB)
    assert wl.data_bytes(scale) * 2.5 <= 1 * GB and "free" in warns[0]


# -- time budget --------------------------------------------------------------------------------
@pytest.mark.parametrize("text, seconds", [("90s", 90), ("30m", 1800), ("2h", 7200),
                                           ("120", 120), ("1.5h", 5400)])
def test_time_budget_units(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text, words", [("5", "did you mean 5m"), ("0s", "positive"),
                                         ("nan", "bad --time-budget"), ("-5m", "bad")])
def test_time_budget_refused(text, words):
    with pytest.raises(UsageError, match=words):
        parse_duration(text)


# -- the live display ---------------------------------------------------------------------------
def test_status_line_phase_elapsed_eta():
    from rich.console import Console

    from pmem_advisor.report.progress import LiveProgress
    from tests.tuner.conftest import make_space

    now = [100.0]
    p = LiveProgress(Console(file=open(os.devnull, "w")), make_space(), 10, "throughput",
                     now=lambda: now[0])
    try:
        p.estimate(600.0, 0, 10)
        p.trial_started(0, "default", TrialConfig())
        p.run_phase("restore")
        now[0] += 3
        assert "restore 3s" in p.status_text() and "ETA 9m57s" in p.status_text()
        p.run_phase("warm-up", 5, then="measure")
        now[0] += 2
        assert "warm-up 2s/5s" in p.status_text()
        now[0] += 10
        text = p.status_text()
        assert "measure 7s" in text and "elapsed 15s" in text and "trial 0 (1/10)" in text
        p.phase("re-measure: defaults round 1/5")
        assert p.status_text().startswith("re-measure")
    finally:
        p.close()


# -- exit codes ---------------------------------------------------------------------------------
class _Refusing(Evaluator):
    """Every trial fails the way --clients 100000 made every trial fail."""

    engine, flavour, version = "postgres", "postgresql", "18"

    def __init__(self, *a, **kw) -> None:
        self.on_phase = None

    def evaluate(self, config: TrialConfig) -> Measurement:
        return Measurement(ok=False, failure="FATAL: sorry, too many clients already")


BASE = ["tune", "postgres", "--workload", "pgbench-tpcb", "--trials", "2", "--duration", "1",
        "--warmup", "0", "--repeats", "0", "--scale", "4"]


def test_no_successful_trial_is_exit_3_and_no_config(run_cli, tmp_path, monkeypatch):
    """Item 11: exit 0 with nothing measured before."""
    import pmem_advisor.tuner.managed as managed

    monkeypatch.setattr(managed, "ManagedEvaluator", _Refusing)
    code, _, err = run_cli(*BASE, "--out", str(tmp_path))
    assert code == 3, err
    last = err.strip().splitlines()[-1]
    assert "no trial was measured" in last and "too many clients" in last
    assert not list(tmp_path.glob("*.tuned.*")) and not (tmp_path / "my.tuned.cnf").exists()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["config_file"] is None


def test_out_below_a_file_is_bad_input(run_cli, tmp_path):
    """--out whose parent is a file: refused before any server starts (exit 2, one line
    naming it, by the descriptor walk every written path goes through); the file stays."""
    f = tmp_path / "file"
    f.write_text("keep me")
    code, _, err = run_cli(*BASE, "--out", str(f / "sub"))
    assert code == 2 and f"{f} is not a directory" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert f.read_text() == "keep me"


def _mount_tmpfs(path: Path, options: str) -> bool:
    path.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                          capture_output=True).returncode == 0


# mode=0700: a directory others can write is refused before anything is written (fileio)
@pytest.mark.parametrize("options, fill", [("ro,size=1m,mode=0700", False),
                                           ("size=64k,mode=0700", True)],
                         ids=["read-only", "full"])
def test_unwritable_out_is_exit_3(run_cli, tmp_path, options, fill):
    """Item 10: a full or read-only --out was exit 70."""
    require_root("mounting a small tmpfs")
    if not shutil.which("mount"):
        pytest.skip("no mount(8) to mount a small tmpfs")
    out = tmp_path / "out"
    if not _mount_tmpfs(out, options):
        pytest.skip("cannot mount tmpfs here")
    try:
        if fill:
            fd = os.open(out / "filler", os.O_WRONLY | os.O_CREAT)
            try:
                with pytest.raises(OSError):
                    while True:
                        os.write(fd, b"x" * 4096)
            finally:
                os.close(fd)
        code, _, err = run_cli(*BASE, "--out", str(out))
        assert code == 3, err
        assert "cannot write to --out" in err and len(err.strip().splitlines()) == 1
    finally:
        subprocess.run(["umount", "-l", str(out)], check=False)


# -- memory fit of searched configs --------------------------------------------------------------
def test_memory_gate_uses_production_connections():
    from pmem_advisor.tuner.session import memory_gate

    gate = memory_gate("postgres", "postgresql", "18.6", None, {"max_connections": 300},
                       16 * GB)
    assert gate({"shared_buffers": 131072, "work_mem": 4096}) is None  # 1 GB + 300 x ~25 MB
    why = gate({"shared_buffers": 131072, "work_mem": 64 * 1024})  # 300 x 64 MB x 4 > 16 GB
    assert why and "300 connections" in why and "16GB production budget" in why


def test_unfit_search_trial_is_not_run(study_factory):
    from optuna.trial import TrialState

    from pmem_advisor.tuner.samplers import make_sampler
    from pmem_advisor.tuner.study import FAILURE_ATTR
    from pmem_advisor.tuner.tuner import OVER_BUDGET_ATTR, TuneOptions, Tuner
    from tests.tuner.conftest import make_space
    from tests.tuner.synthetic import SyntheticEvaluator

    # A seeded random sampler and a gate its draws cross (trial 7: 112,653 pages): the default
    # sampler starts at the rules' shared_buffers and, with a gate above them, could go 12
    # trials without proposing an unfit config, and the test then had nothing to check.
    gate_at = 100_000
    study, space = study_factory(make_space(),
                                 sampler=make_sampler("random", seed=3, n_trials=12))
    ev = SyntheticEvaluator()

    def gate(params):
        return "too big" if params.get("shared_buffers", 0) > gate_at else None

    Tuner(study, space, ev, TuneOptions(trials=12, repeats=0, memory_gate=gate)).run()
    # a sampled config over the budget is not run: recorded as over budget (the sampler is
    # asked again) or, past the resample limit, as a failure that was never evaluated
    unfit = [t for t in study.get_trials()
             if "too big" in (t.user_attrs.get(OVER_BUDGET_ATTR) or
                              t.user_attrs.get(FAILURE_ATTR, ""))]
    assert unfit and all(t.state == TrialState.FAIL for t in unfit)
    # the baselines (defaults, rules-only) run first; no search config over the gate ran
    assert all(c.params.get("shared_buffers", 0) <= gate_at for c in ev.calls[2:])


class _EndsRun(Evaluator):
    """Measures the first trial, then the run ends the way ``stop`` says."""

    engine, flavour, version = "postgres", "postgresql", "18"
    stop: BaseException = KeyboardInterrupt()

    def __init__(self, *a, **kw) -> None:
        self.on_phase, self.calls = None, 0

    def evaluate(self, config: TrialConfig) -> Measurement:
        self.calls += 1
        if self.calls > 1:
            raise type(self).stop
        return Measurement(ok=True, throughput_tps=100.0,
                           latency_ms={"p50": 1.0, "p95": 2.0, "p99": 3.0}, duration_s=1.0)


@pytest.mark.parametrize("stop, code, reason", [
    (KeyboardInterrupt(), 130, "interrupted"),
    (OSError(28, "No space left on device"), 3, "disk-full"),
], ids=["interrupt", "disk-full"])
def test_why_the_run_ended_reaches_the_summary(run_cli, tmp_path, monkeypatch, stop, code,
                                               reason):
    """Item 12: an interrupt or a full disk that ended a run was not said in summary.json."""
    import pmem_advisor.tuner.managed as managed

    monkeypatch.setattr(_EndsRun, "stop", stop)
    monkeypatch.setattr(managed, "ManagedEvaluator", _EndsRun)
    rc, _, err = run_cli(*BASE, "--trials", "3", "--out", str(tmp_path))
    assert rc == code, err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["run_end"]["reason"] == reason


def test_scratch_survives_our_own_reaper_and_goes_on_close(tmp_path):
    """Item 7: the golden copy and load-generator logs live in one recorded scratch root; the
    reaper every create_instance runs must not take it from the live run (it did: exit 70)."""
    from pmem_advisor.instances import registry
    from pmem_advisor.tuner.managed import ManagedEvaluator

    class Binary:
        engine, flavour, version, bindir = "postgres", "postgresql", "18.1", "/nonexistent"

    ev = ManagedEvaluator(Binary(), get_workload("pgbench-tpcb"), scale=1, clients=1,
                          duration=1, workdir=tmp_path)
    ev._make_scratch()
    rec_id = ev._scratch_record.id
    assert rec_id in [r.id for r in registry.load_all()]
    registry.reap_stale()
    assert (ev.scratch / "logs").is_dir() and ev.workload.scratch_dir == str(ev.scratch / "logs")
    ev.close()
    assert not ev.scratch.exists() and rec_id not in [r.id for r in registry.load_all()]
