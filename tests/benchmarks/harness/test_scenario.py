"""Scenario files: every shipped one passes the schema; bad ones fail with one line naming
the field."""

from __future__ import annotations

import pytest

from benchmarks.harness import scenario
from pmem_advisor.errors import UsageError
from tests.benchmarks.synthetic import scenario_dict


def test_every_shipped_scenario_is_valid_and_named_after_its_file():
    found = scenario.load_all()
    assert {"pg18-tpcb-disk", "pg18-tpcc-disk", "mariadb1011-oltp-write-only-disk",
            "mariadb1011-tpcc-disk", "pg18-tpcb-shm"} <= set(found)
    shm = [s for s in found.values() if s.medium == "shm"]
    assert shm and all(s.emulated_pmem and "PMEM" in s.title() for s in shm)
    for s in found.values():
        assert s.memory_bytes >= 256 << 20


def test_a_scenario_as_recorded_in_a_provenance_reads_back():
    """The collector stores ``to_dict()``; the bench validates it again to ask today's rules
    (an unwritten seed_direction once failed that, and the bench fell back silently)."""
    for s in scenario.load_all().values():
        assert scenario.validate(s.to_dict()) == s


@pytest.mark.parametrize("change, where", [
    ({"medium": "nvme"}, "medium"),
    ({"clients": 0}, "clients"),
    ({"memory_budget": "lots"}, "memory_budget"),
    ({"colour": "red"}, "colour"),
    ({"path": "relative/dir"}, "path"),
])
def test_bad_scenarios_say_which_field(change, where):
    with pytest.raises(UsageError, match=where):
        scenario.validate(scenario_dict(**change))


def test_a_missing_field_is_named():
    data = scenario_dict()
    del data["duration_s"]
    with pytest.raises(UsageError, match="duration_s"):
        scenario.validate(data)


def test_unknown_scenario_lists_the_known_ones():
    with pytest.raises(UsageError, match="pg18-tpcb-disk"):
        scenario.get("no-such-scenario")


def test_durability_off_settings_per_flavour():
    assert scenario.durability_off("postgresql")["fsync"] is False
    assert scenario.durability_off("mariadb")["innodb_flush_log_at_trx_commit"] == 0
    assert scenario.durability_off("mysql") == {}


def test_duckdb_ceiling_is_a_value_the_catalog_withholds():
    from pmem_advisor.engines.registry import get_engine

    off = scenario.durability_off("duckdb")
    assert off == {"fsync_mode": "NONE"}
    knob = get_engine("duckdb").catalog().get("fsync_mode")
    assert knob.is_risky("NONE") and not knob.is_risky(knob.default)
