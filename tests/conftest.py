"""Shared test fixtures. Tests mirror the source tree (tests/probes, tests/knobs, ...)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The suite runs on a loaded 2-core machine too (CI beside other work, background jobs): a
# property test is judged by what it finds, never by how fast the machine drew its inputs.
settings.register_profile(
    "loaded-machine", deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("loaded-machine")

REPO = Path(__file__).resolve().parents[1]

SHARED = REPO.parent / "shared"


def pytest_configure(config) -> None:
    """Started as a background job or under nohup, the suite has SIGINT ignored, and an
    ignored signal is inherited across exec: every CLI, worker and server a test starts (and
    then interrupts) would ignore Ctrl-C. Python's own handler here makes exec reset it to the
    default in every child, so the suite behaves as it does in the foreground."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_runtest_setup(item) -> None:
    """``@pytest.mark.needs_root("why")``: skipped as an ordinary user with "needs root: why"."""
    for mark in item.iter_markers("needs_root"):
        from tests.sandbox import require_root

        require_root(mark.args[0] if mark.args else "it runs as root only")


@pytest.fixture(scope="session", autouse=True)
def sandbox() -> Path:
    """Every managed instance of the run lives under one base; nothing may remain after."""
    from tests.sandbox import server_sandbox

    with server_sandbox() as base:
        yield base


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture
def run_cli(capsys):
    """Run the CLI in-process; returns (exit_code, stdout, stderr)."""
    from pmem_advisor.cli.main import main

    def _run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return _run


def is_root() -> bool:
    return os.geteuid() == 0


@pytest.fixture(scope="session")
def other_user():
    """Runs things as ``nobody`` (see tests/sandbox.py OtherUser), or skips saying why."""
    from tests.sandbox import OtherUser

    user = OtherUser()
    yield user
    user.close()


@pytest.fixture(scope="session")
def cli_as_other_user(other_user):
    """``run(*python_args, cwd=..., env=...)``: this checkout's pmem_advisor run by the other
    user's system Python from a staged copy (works where the checkout is private)."""
    staged = other_user.stage_imports("pmem_advisor", "pmem_advisor.cli.main",
                                      "pmem_advisor.cli.manpage",
                                      distribution="pmem-advisor")

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None):
        return other_user.run([other_user.python, "-s", *args], pythonpath=(staged,), cwd=cwd,
                              env=env)

    return run
