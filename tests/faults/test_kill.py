"""Signals to the CLI and to its server at a phase found by a condition; then the reaper.

SIGKILL gives the run no chance to clean up: the next run's reaper (here `instances reap`)
must stop its server and remove its directories. SIGTERM/SIGINT must clean up at once.
"""

from __future__ import annotations

import json
import os
import signal

import psutil
import pytest

from tests.faults.conftest import wait_for
from tests.sandbox import find_server

pytestmark = pytest.mark.server

RUN = ("workload", "run", "postgres", "-w", "pgbench-tpcb", "--scale", "1", "--clients", "2",
       "--warmup", "0", "--duration", "30", "--server-version")


@pytest.fixture(scope="module")
def pg():
    return find_server("postgres", "debian").version.split(".")[0]


def _phase(base, cli, phase: str) -> None:
    """Wait until the run is at ``phase``: start (the server is up), load, measure."""
    if phase == "start":
        wait_for(lambda: base.server_pid() or cli.proc.poll() is not None, 120,
                 "the server pid in the instance record")
    else:
        line = {"load": "loading", "measure": "running"}[phase]
        wait_for(lambda: cli.saw(line) or cli.proc.poll() is not None, 120, f"'{line}'")
    assert cli.proc.poll() is None, cli.stderr


@pytest.mark.parametrize("sig,phase", [(signal.SIGKILL, "start"), (signal.SIGTERM, "load"),
                                       (signal.SIGINT, "measure")])
def test_a_killed_workload_run_leaves_nothing_behind(base, pg, sig, phase):
    cli = base.cli(*RUN, pg)
    _phase(base, cli, phase)
    server = base.server_pid()
    cli.proc.send_signal(sig)
    code = cli.finish()
    if sig == signal.SIGKILL:
        assert code == -signal.SIGKILL
        assert server and psutil.pid_exists(server)  # nobody stopped it: the reaper must
        rc, out, err = base.call("instances", "reap", "--json")
        assert rc == 0, err
        assert json.loads(out)["reaped"]  # the dead run's record was reaped
    else:
        assert code in (-sig, 128 + sig, 130), (code, cli.stderr)
    if server:
        wait_for(lambda: not psutil.pid_exists(server)
                 or psutil.Process(server).status() == psutil.STATUS_ZOMBIE, 30,
                 "the server to be gone")
    base.assert_clean()


def test_a_server_killed_mid_measurement_is_exit_3_and_cleaned_up(base, pg):
    cli = base.cli(*RUN, pg)
    _phase(base, cli, "measure")
    os.kill(base.server_pid(), signal.SIGKILL)
    code = cli.finish()
    assert code == 3, cli.stderr
    assert "Traceback" not in cli.stderr
    base.assert_clean()


def test_a_sigkilled_tune_leaves_its_scratch_to_the_reaper(base, pg, tmp_path):
    """Item 7: the golden copy and log dirs of a SIGKILLed tuner are in a scratch record that
    the next reaper removes (failed before: they stayed in $TMPDIR forever)."""
    out = tmp_path / "tune-out"
    cli = base.cli("tune", "postgres", "-w", "pgbench-tpcb", "--server-version", pg,
                   "--trials", "3",
                   "--duration", "30", "--warmup", "0", "--scale", "1", "--clients", "2",
                   "--out", str(out))
    scratch = wait_for(lambda: [r for r in base.records() if r.get("kind") == "scratch"]
                       or cli.proc.poll() is not None, 180, "the tuner's scratch record")
    assert cli.proc.poll() is None, cli.stderr
    dirs = scratch[0]["remove"]
    _phase(base, cli, "start")
    cli.proc.send_signal(signal.SIGKILL)
    assert cli.finish() == -signal.SIGKILL
    assert all(os.path.isdir(d) for d in dirs)
    rc, _, err = base.call("instances", "reap")
    assert rc == 0, err
    assert not any(os.path.exists(d) for d in dirs)
    base.assert_clean()
