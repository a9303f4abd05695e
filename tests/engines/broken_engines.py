"""Engine classes that break the contract (tests/engines/test_registry.py loads them by name
from a test YAML): each must be one line at load naming the engine and its file."""

from __future__ import annotations

from pmem_advisor.engines.base import Engine


class NotAnEngine:
    """A class, but not an Engine."""


class NoEmit(Engine):
    """Leaves out the contract's abstract ``emit`` and ``parse_config``."""
