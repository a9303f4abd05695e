"""The guest tests: skipped, with the reason, where qemu or the kernel cannot be installed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "qemu_guest.py"


def _load():
    spec = importlib.util.spec_from_file_location("qemu_guest", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["qemu_guest"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def guest():
    """The qemu_guest module, its packages installed (as root) or the test skipped."""
    module = _load()
    try:
        module.ensure_packages(install=True)
    except module.GuestUnavailable as e:
        pytest.skip(f"no guest: {e.reason}")
    return module
