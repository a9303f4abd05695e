"""Engine: conflicts by priority with the loser recorded, safety beats speed, catalog units."""

from __future__ import annotations

import pytest

from pmem_advisor.rules import build_facts, check, recommend
from pmem_advisor.rules.model import (
    PRIORITY_SAFETY,
    PRIORITY_SPEED,
    Bytes,
    OsStep,
    Rule,
    Set,
)
from tests.rules.machines import make_profile


def facts(**kw):
    kw.setdefault("engine", "postgres")
    return build_facts(make_profile(kw.pop("machine", "pmem")), **kw)


def test_paper_rule_beats_baseline_and_loser_is_recorded():
    rec = recommend(facts(data_dir="/mnt/pmem0/pg", version="16"))
    assert rec.setting("wal_compression").text == "off"
    assert rec.setting("wal_compression").rule == "PM012"
    lost = [c for c in rec.conflicts if c.subject == "wal_compression"]
    assert lost and lost[0].loser == "PG-BASE" and lost[0].winner == "PM012"


def test_ssd_keeps_pgtune_and_searches_wal_compression():
    rec = recommend(facts(machine="ssd", data_dir="/srv/pg", version="16"))
    # 8 CPUs: pglz (the build's lz4 is unknown); the tuner searches off/pglz/lz4
    assert rec.setting("wal_compression").text == "pglz"
    assert "pgtune" not in rec.setting("wal_compression").reason
    assert rec.bounds["wal_compression"] == ["off", "pglz", "lz4"]
    assert rec.setting("random_page_cost").text == "1.1"


def test_unsafe_is_withheld_without_allow_unsafe():
    rec = recommend(facts(engine="mysql", flavour="mysql", version="8.0",
                          data_dir="/mnt/pmem0/my"))
    assert rec.setting("innodb_doublewrite").text == "ON"
    withheld = {w.name: w for w in rec.withheld}
    assert withheld["innodb_doublewrite"].text == "OFF"
    assert "+20%" in withheld["innodb_doublewrite"].reason
    # the catalog classes O_DIRECT_NO_FSYNC as a durability risk
    assert withheld["innodb_flush_method"].text == "O_DIRECT_NO_FSYNC"
    assert rec.setting("innodb_flush_method").text == "O_DIRECT"


def test_allow_unsafe_applies_with_a_loud_reason():
    rec = recommend(facts(engine="mysql", flavour="mysql", version="8.0",
                          data_dir="/mnt/pmem0/my", allow_unsafe=True))
    s = rec.setting("innodb_doublewrite")
    assert s.text == "OFF" and s.unsafe
    assert s.reason.startswith("UNSAFE") and "Expected gain: up to +20%" in s.reason
    assert not rec.withheld


class _Fast(Rule):
    id, insights, priority, engines = "T-FAST", ("X",), PRIORITY_SPEED, ("postgres",)

    def condition(self, f):
        return True

    def effects(self, f):
        return [Set("full_page_writes", "off", "speed")]


class _Safe(_Fast):
    id, priority = "T-SAFE", PRIORITY_SAFETY

    def effects(self, f):
        return [Set("full_page_writes", "on", "safety")]


def test_catalog_risky_value_is_withheld_even_when_rule_does_not_say_so():
    rec = recommend(facts(), rules=(_Fast(),))
    assert rec.setting("full_page_writes") is None
    assert rec.withheld[0].name == "full_page_writes"


def test_priority_decides_and_records_the_loser():
    rec = recommend(facts(allow_unsafe=True), rules=(_Fast(), _Safe()))
    assert rec.setting("full_page_writes").rule == "T-SAFE"
    assert rec.conflicts[0].loser == "T-FAST"


def test_os_step_conflict_pin_vs_interleave():
    rec = recommend(facts(data_dir="/mnt/pmem0/pg", cpus=48))
    numa = [s for s in rec.os_steps if s.key == "numa-policy"]
    assert len(numa) == 1 and "--interleave=0-1" in numa[0].command  # the CPU nodes
    assert "PM004" not in rec.fired  # a server spanning sockets is never pinned to one
    pinned = recommend(facts(data_dir="/mnt/pmem1/pg", cpus=8))
    assert any("--cpunodebind=1 --membind=1" in s.command for s in pinned.os_steps)


class _Redo(Rule):
    id, insights, priority, engines = "T-REDO", ("X",), PRIORITY_SPEED, ("mysql",)

    def condition(self, f):
        return True

    def effects(self, f):
        return [Set("innodb_redo_log_capacity", Bytes(1 << 30), "MySQL 8.0.30+ only")]


def test_knobs_missing_in_the_version_are_dropped_with_a_note():
    rec = recommend(facts(engine="mysql", flavour="mariadb", version="10.11",
                          data_dir="/mnt/pmem0/my", clients=8), rules=(_Redo(),))
    assert rec.setting("innodb_redo_log_capacity") is None
    assert any("innodb_redo_log_capacity" in n and "T-REDO" in n for n in rec.notes)


def test_values_are_in_base_units_and_bounds_feed_the_tuner():
    rec = recommend(facts(data_dir="/mnt/pmem0/pg", version="18", memory_bytes=50 << 30))
    assert rec.setting("shared_buffers").value == (20 << 30) // 8192  # 8kB pages
    assert rec.bounds["max_wal_size"] == (1024, 65536)  # MB
    assert rec.priors["max_wal_size"] == 16384
    assert "max_wal_size" in rec.important and "shared_buffers" in rec.important


def test_emulated_pmem_is_said():
    rec = recommend(facts(machine="ssd", data_dir="/dev/shm/pg"))
    assert rec.emulated and rec.to_json()["emulated_pmem"]
    assert any(f.rule == "PM010" for f in rec.findings)


def test_check_host_only_and_config():
    host = check(build_facts(make_profile({"preset": "pmem", "pmem_mode": "memory"}),
                             engine=None))
    assert [f.rule for f in host if f.severity == "warn"] == ["PM001"]
    found = check(facts(data_dir="/mnt/pmem0/pg"), {"full_page_writes": "off",
                                                    "wal_compression": "on"})
    assert {(f.rule, f.severity) for f in found} >= {("PM015", "fail"), ("PM012", "warn")}


def test_bad_profile_schema_is_one_line_input_error():
    from pmem_advisor.errors import InputError

    with pytest.raises(InputError, match="schema is 'pmem-advisor.probe/0'"):
        build_facts({"schema": "pmem-advisor.probe/0"}, engine="postgres")


class _Pool(_Fast):
    """A rule whose OS step depends on the final work_mem (after the memory fit)."""
    id, priority = "T-POOL", PRIORITY_SPEED

    def effects(self, f):
        return [OsStep("echo early", "from the rule's own view", key="t-pool")]

    def finalize(self, facts, settings):
        return [OsStep(f"echo {settings['work_mem'].text}", "from the final settings",
                       key="t-pool")]


def test_finalize_sees_the_fitted_settings():
    from pmem_advisor.rules.registry import all_rules

    rec = recommend(facts(machine="ssd", data_dir="/srv/pg", version="18"),
                    rules=(*all_rules(), _Pool()))
    steps = [s.command for s in rec.os_steps if s.rule == "T-POOL"]
    assert steps == [f"echo {rec.setting('work_mem').text}"]
