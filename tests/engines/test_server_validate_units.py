"""`config validate` shows what the server took in the units a person reads: pg_settings
reports effective_cache_size in 8kB pages (786432), the table says 6GB."""

from __future__ import annotations

import pytest

from pmem_advisor.engines.server_validate import _with_unit
from pmem_advisor.knobs.catalog import load_catalog


@pytest.mark.parametrize("engine,flavour,version,name,reported,shown", [
    ("postgres", "postgresql", "15", "effective_cache_size", "786432", "6GB"),
    ("postgres", "postgresql", "15", "work_mem", "65536", "64MB"),
    ("postgres", "postgresql", "15", "checkpoint_timeout", "900", "15min"),
    ("mysql", "mariadb", "10.11", "innodb_buffer_pool_size", "8589934592", "8G"),
])
def test_reported_values_carry_their_unit(engine, flavour, version, name, reported, shown):
    knob = load_catalog(engine, flavour, version).get(name)
    assert _with_unit(knob, reported) == shown


def test_a_value_without_a_unit_stays_as_it_is():
    knob = load_catalog("postgres", "postgresql", "15").get("max_connections")
    assert _with_unit(knob, "300") == "300"
    assert _with_unit(None, "whatever") == "whatever"
