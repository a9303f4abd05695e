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


@pytest.fixture(autouse=True)
def private_medium_cache(tmp_path_factory, monkeypatch):
    """Live probes keep measurements in a per-session cache, never the machine's own."""
    from pmem_advisor import fileio
    from pmem_advisor.instances import privileges

    monkeypatch.setattr(privileges, "CACHE_ROOT", tmp_path_factory.getbasetemp() / "cache")
    monkeypatch.setattr(fileio, "CACHE_ROOT", tmp_path_factory.getbasetemp() / "cache")
