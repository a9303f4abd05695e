"""Real tunes on managed servers: embedded PostgreSQL 18 and MariaDB, data on /dev/shm."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import psutil
import pytest
from optuna.trial import TrialState

from pmem_advisor.tuner.study import measured
from pmem_advisor.tuner.verdict import is_verdict
from tests.conftest import REPO

pytestmark = pytest.mark.server

def servers_using(path: Path) -> list[int]:
    """Processes whose command line names ``path`` (a managed server left running)."""
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if any(str(path) in a for a in (p.info["cmdline"] or [])):
            found.append(p.info["pid"])
    return found


def _started_with(engine: str, config_text: str) -> bool:
    from pmem_advisor.instances import create_instance, pick_server

    with create_instance(pick_server(engine)) as inst:
        inst.initialize()
        inst.start(config_text)
        return inst.is_running()


def _tiny_tune(run_cli, engine, workload, data, out, *extra):
    code, _, err = run_cli("tune", engine, "--workload", workload, "--trials", "3",
                           "--duration", "2", "--warmup", "0.5", "--repeats", "1",
                           "--clients", "2", "--scale", "2", "--seed", "1",
                           # a small target: sized for this host's whole RAM, each trial
                           # would fault in a 14 GiB buffer pool (minutes of kernel time)
                           "--memory", "2G",
                           "--data-dir", str(data),
                           "--out", str(out), *extra)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trials_completed"] + summary["trials_failed"] == 3
    assert summary["baselines"]["default"]["throughput_tps"] > 0
    assert summary["baselines"]["rules"]["throughput_tps"] > 0
    assert summary["best"]["throughput_tps"] > 0
    assert "/dev/shm is tmpfs" in err  # the emulation note
    assert not servers_using(data)
    return summary, err


@pytest.mark.slow
def test_tiny_tune_postgres(run_cli, shm_dir, tmp_path):
    s, err = _tiny_tune(run_cli, "postgres", "pgbench-tpcb", shm_dir, tmp_path)
    assert s["flavour"] == "postgresql" and s["version"].startswith("18")
    conf = Path(s["config_file"]).read_text()
    assert "# note: verdict:" in conf  # the one emitter puts the header in its notes
    # production max_connections (the rules' for OLTP without --connections, fitted to the
    # 2 GiB target), not the benchmark's --clients 2 + 10
    target = re.search(r"production target: max_connections (\d+) in the tuned file",
                       " ".join(err.split()))
    conns = re.search(r"^max_connections = '?(\d+)", conf, re.MULTILINE)
    assert target and conns and int(conns.group(1)) == int(target.group(1)) != 2 + 10, conf
    assert _started_with("postgres", conf)  # the emitted config starts the real server
    assert (tmp_path / "report.html").stat().st_size > 1000


# The tune path is the evaluator's: PostgreSQL proves it end to end in make test; MariaDB's parts
# are each in make test too (its workloads: tests/workloads/test_run_servers.py; its emitted
# my.cnf started by the server: tests/knobs/test_server_roundtrip.py), so this second engine's
# run of the whole (about 50 s) is in test-all (issue 56).
@pytest.mark.slow
@pytest.mark.long
def test_tiny_tune_mariadb(run_cli, shm_dir, tmp_path):
    s, _ = _tiny_tune(run_cli, "mysql", "sysbench-oltp-write-only", shm_dir, tmp_path)
    assert s["flavour"] == "mariadb"
    conf = Path(s["config_file"]).read_text()
    assert "[mysqld]" in conf and _started_with("mysql", conf)


def _study(out: Path):
    from pmem_advisor.tuner.storage import open_storage
    from pmem_advisor.tuner.study import load_existing

    return load_existing(open_storage(f"sqlite:///{out / 'study.db'}"), None)


def _measuring(out: Path) -> list[int]:
    """The numbers of the trials being measured (RUNNING with their config stored), read from
    the study file read-only: opening it as an Optuna storage would create its schema, and
    that races the tuner's own creation of it on the run's first seconds."""
    db = out / "study.db"
    if not db.exists():
        return []
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as con:
            rows = con.execute(
                "SELECT t.number FROM trials t JOIN trial_user_attributes a"
                " ON a.trial_id = t.trial_id WHERE t.state = 'RUNNING' AND a.key = 'config'"
            ).fetchall()
    except sqlite3.OperationalError:  # no tables yet, or a write holds the file
        return []
    return [n for (n,) in rows]


def _wait_running(out: Path, number: int, proc: subprocess.Popen, log: Path,
                  also=lambda: True, timeout: float = 240) -> None:
    """Until trial ``number`` or a later one is being measured and ``also()`` holds: a
    condition, not a guessed delay. A run that ended before that fails at once with what it
    printed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (exit {proc.returncode}) before trial "
                                 f"{number} ran: {log.read_text()[-3000:]}")
        if any(n >= number for n in _measuring(out)) and also():
            return
        time.sleep(0.2)
    raise AssertionError(f"trial {number} never ran: {log.read_text()[-3000:]}")


def _start(cmd: list[str], log: Path, env: dict) -> subprocess.Popen:
    with open(log, "w") as err_file:
        return subprocess.Popen(cmd, cwd=REPO, stderr=err_file, env=env)


@pytest.mark.slow
def test_kill_mid_trial_then_resume(shm_dir, tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "pmem_advisor.cli.main", "tune", "postgres", "--workload",
           "pgbench-tpcb", "--trials", "4", "--duration", "3", "--warmup", "0", "--repeats", "0",
           "--clients", "2", "--scale", "2", "--memory", "2G", "--data-dir", str(shm_dir),
           "--out", str(out), "--heartbeat", "1"]
    scratch = tmp_path / "tmp"  # the tuner's scratch root (golden copy, pgbench logs)
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    # Ctrl-C mid-trial: exit 130, no server left, the study keeps its finished trials.
    log = tmp_path / "interrupted-run.stderr"
    p = _start(cmd, log, env)
    _wait_running(out, 1, p, log)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=120)
    err = log.read_text()
    assert p.returncode == 130, err
    assert "--resume" in err and not servers_using(shm_dir)
    done = [t.number for t in _study(out).get_trials() if measured(t) is not None]
    assert done == [0]
    # SIGTERM mid-trial (issue 17 item 7): like Ctrl-C, exit 143, the trial failed with why.
    log = tmp_path / "terminated-run.stderr"
    p = _start([*cmd, "--resume"], log, env)
    _wait_running(out, 1, p, log)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=120)
    err = log.read_text()
    assert p.returncode == 143, err
    assert "--resume" in err and not servers_using(shm_dir)
    assert not list(scratch.glob("pmem-advisor-tune-*"))  # golden copy and logs removed
    study = _study(out)
    assert any("SIGTERM" in str(t.user_attrs.get("interrupted", "")) for t in study.get_trials())
    assert study.user_attrs["pmem_advisor.end"]["reason"] == "terminated"
    # SIGKILL mid-trial of the resumed run: its server and scratch outlive it until the next
    # run reaps them.
    log = tmp_path / "killed-run.stderr"
    p = _start([*cmd, "--resume"], log, env)
    _wait_running(out, 2, p, log, lambda: list(scratch.glob("pmem-advisor-tune-*/golden")))
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert list(scratch.glob("pmem-advisor-tune-*"))
    # No wait for the heartbeat's grace period: the next run on this host fails the dead
    # worker's trial at once (its pid is gone) and reaps its server and scratch.
    r = subprocess.run([*cmd, "--resume"], cwd=REPO, capture_output=True, text=True,
                       timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    assert not servers_using(shm_dir)
    assert not list(scratch.glob("pmem-advisor-tune-*"))
    trials = _study(out).get_trials()
    complete = [t for t in trials if measured(t) is not None and not is_verdict(t)]
    assert [t.number for t in complete][:1] == done  # nothing completed was lost
    assert len(complete) >= 4 - sum(1 for t in trials if t.user_attrs.get("failure"))
    assert {t.user_attrs["role"] for t in complete} >= {"default", "rules"}
    assert not [t for t in trials if t.state == TrialState.RUNNING]


@pytest.mark.slow
def test_repeats_zero_emits_the_rules_config_not_re_measured(run_cli, shm_dir, tmp_path):
    code, _, err = run_cli("tune", "postgres", "--workload", "pgbench-tpcb", "--trials", "3",
                           "--duration", "2", "--warmup", "0", "--repeats", "0",
                           "--clients", "2", "--scale", "2", "--seed", "1",
                           "--data-dir", str(shm_dir), "--out", str(tmp_path))
    assert code == 0, err
    summary = json.loads((tmp_path / "summary.json").read_text())
    v = summary["verdict"]
    assert v["kind"] == "not-re-measured" and v["emit"] == "rules"
    assert v["text"].startswith("not re-measured (--repeats 0): keeping rules")
    assert summary["best"]["role"] == "rules"
    conf = Path(summary["config_file"]).read_text()
    assert "not re-measured" in conf
    assert "not re-measured (--repeats 0)" in (tmp_path / "report.md").read_text()
