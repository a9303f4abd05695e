"""Two worker processes share one study on the machine's PostgreSQL service (RDB storage).

A killed worker's trial: tests/tuner/test_reliability.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections import Counter

import pytest
from optuna.trial import TrialState

from tests.conftest import REPO

SOCKET = "/var/run/postgresql"


def _psql(sql: str) -> subprocess.CompletedProcess:
    return subprocess.run(["psql", "-h", SOCKET, "-U", "postgres", "-d", "postgres", "-Atc", sql],
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def pg_storage_url():
    if not shutil.which("psql") or not os.path.exists(f"{SOCKET}/.s.PGSQL.5432"):
        pytest.skip("no local PostgreSQL service on /var/run/postgresql")
    if _psql("select 1").returncode != 0:
        pytest.skip("the local PostgreSQL service refuses user postgres without a password")
    db = f"pmem_advisor_test_{uuid.uuid4().hex[:10]}"
    assert _psql(f"CREATE DATABASE {db}").returncode == 0
    try:
        yield f"postgresql+psycopg://postgres@/{db}?host={SOCKET}"
    finally:
        _psql(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


@pytest.mark.server
def test_two_workers_share_one_study(pg_storage_url):
    from pmem_advisor.tuner.storage import open_storage
    from pmem_advisor.tuner.study import counted, load_existing, open_study
    from tests.tuner.conftest import META, make_space

    trials = 10
    storage = open_storage(pg_storage_url)
    open_study(storage, "shared", META, make_space(), resume=False)  # baselines queued once
    cmd = [sys.executable, "-m", "tests.tuner.worker", pg_storage_url, "shared", str(trials),
           "0.4"]
    procs = [subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
    study = load_existing(storage, "shared")
    done = [t for t in study.get_trials() if counted(t)]  # measured or refused by the server
    # The shared budget is exact (issue 17 item 8): no extra in-flight trial.
    assert len(done) == trials
    workers = Counter(t.user_attrs["worker"] for t in done)
    assert len(workers) == 2 and min(workers.values()) >= 2
    roles = Counter(t.user_attrs["role"] for t in study.get_trials())
    assert roles["default"] == 1 and roles["rules"] == 1
    assert not [t for t in study.get_trials() if t.state == TrialState.RUNNING]
