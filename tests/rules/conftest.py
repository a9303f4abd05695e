"""Fixtures of the rules tests."""

from __future__ import annotations

import json

import pytest

from tests.rules.machines import make_profile


@pytest.fixture
def profile_file(tmp_path):
    """Write a probe profile of tests/rules/machines.py (a preset name or spec) to a file."""
    def write(spec="pmem"):
        p = tmp_path / "probe.json"
        p.write_text(json.dumps(make_profile(spec)))
        return str(p)
    return write
