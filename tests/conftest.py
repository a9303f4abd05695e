"""Shared test fixtures. Tests mirror the source tree (tests/probes, tests/knobs, ...)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]

# The machine is shared and often loaded: how fast Hypothesis draws its inputs says nothing
# about the code under test (too_slow failed test_emit's round trip on a busy machine), nor
# does a slow example (deadline). Every property test runs under this profile.
settings.register_profile("shared-machine", suppress_health_check=[HealthCheck.too_slow],
                          deadline=None)
settings.load_profile("shared-machine")
SHARED = REPO.parent / "shared"


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
