"""Fixtures for the engine tests: a test-only engine registered for one test."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

FAKE_DATA = Path(__file__).resolve().parent / "fake_engine_data"


@pytest.fixture
def fake_engine():
    """The test-only engine 'fake' (fake_engine.py, fake_engine_data/) in the registry."""
    from pmem_advisor.engines import registry

    registry.add_data_dir(FAKE_DATA)
    try:
        yield registry.get_engine("fake")
    finally:
        registry.remove_data_dir(FAKE_DATA)


@pytest.fixture
def fake_binary(tmp_path, monkeypatch):
    """A ``fakedb-server`` on PATH: exits 0 for a config without 'threads = 99', else 1."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "fakedb-server"
    exe.write_text("#!/bin/sh\nif grep -q '^threads = 99' \"$1\"; then\n"
                   "  echo 'threads: 99 exceeds the cores' >&2; exit 1\nfi\nexit 0\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    return exe


@pytest.fixture
def bad_engine_dir(tmp_path):
    """Register a folder for engine YAML files a test writes; removed afterwards."""
    from pmem_advisor.engines import registry

    folder = tmp_path / "engines"
    folder.mkdir()
    registry.add_data_dir(folder)
    try:
        yield folder
    finally:
        registry.remove_data_dir(folder)
