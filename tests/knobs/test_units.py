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


def test_mysql_numbers_stay_exact():
    from pmem_advisor.knobs.units import my_number

    assert my_number("18446744073709551615") == 2**64 - 1  # a float would round it up
    assert my_number("128M") == 128 * 2**20 and isinstance(my_number("128M"), int)
    assert my_number("0.5") == 0.5 and my_number("1e3") == 1000.0
    assert my_number("12x") is None


def test_pg_integer_text_octal_and_hex():
    from pmem_advisor.knobs.units import pg_number

    assert pg_number("0600", integer=True) == (384.0, "")
    assert pg_number("0600") == (600.0, "")  # a real setting reads it as decimal (strtod)
    assert pg_number("0x10", integer=True) == (16.0, "")
    assert pg_number("089", integer=True) is None
    assert pg_number("0", integer=True) == (0.0, "")
