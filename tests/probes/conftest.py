"""Fixtures for the probe tests: fake machines built from tests/probes/machines/."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.probes.machine_builder import build


@pytest.fixture
def machine(tmp_path):
    """Build a named fake machine in a fresh temp dir and return its root."""

    def _build(name: str) -> Path:
        return build(name, tmp_path / name)

    return _build
