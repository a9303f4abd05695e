"""Sizes people type on the command line and in init-time settings."""

from __future__ import annotations

import pytest

from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.units import parse_bytes


def test_parse_bytes_reads_what_people_type_and_names_the_option_on_error():
    assert parse_bytes("24G", "--memory") == 24 << 30
    assert parse_bytes("512MB", "--memory") == 512 << 20
    assert parse_bytes("1.5TiB", "--memory") == 3 << 39
    assert parse_bytes(4096, "x") == parse_bytes("4096", "x") == 4096
    with pytest.raises(UsageError, match="--memory: 'lots' is not a size"):
        parse_bytes("lots", "--memory")
