"""Every flavour/version x placement the issue names: recommend stays safe and fits.

PostgreSQL 13-18, MySQL 8.0.20/8.0.36/8.4, MariaDB 10.11/11.4.1/11.4 x data and WAL on PMEM,
WAL only, data only, SSD, tmpfs, and a NUMA-bound server. For each: no durability risk without
--allow-unsafe, every knob exists in that version's catalog and its value is legal there, the
worst-case memory fits the budget (the bound node's when bound), and the emitted config states
the worst case.
"""

from __future__ import annotations

import pytest

from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.rules import build_facts, recommend
from pmem_advisor.rules.memory import BUDGET_SHARE, worst_case
from tests.rules.machines import make_profile

TARGETS = [("postgres", "postgresql", v) for v in ("13", "14", "15", "16", "17", "18")] + [
    ("mysql", "mysql", "8.0.20"), ("mysql", "mysql", "8.0.36"), ("mysql", "mysql", "8.4"),
    ("mysql", "mariadb", "10.11"), ("mysql", "mariadb", "11.4.1"), ("mysql", "mariadb", "11.4")]
PLACEMENTS = {
    "data+wal on pmem": ("pmem", {"data_dir": "/mnt/pmem0/db"}),
    "wal only on pmem": ("pmem", {"data_dir": "/srv/db", "wal_dir": "/mnt/pmem0/wal"}),
    "data on pmem, wal on ssd": ("pmem", {"data_dir": "/mnt/pmem0/db", "wal_dir": "/srv/wal"}),
    "ssd": ("ssd", {"data_dir": "/srv/db"}),
    "tmpfs": ({"preset": "ssd", "memory_gb": 16}, {"data_dir": "/dev/shm/db"}),
    "spanning sockets": ("pmem", {"data_dir": "/mnt/pmem0/db", "cpus": 48}),
    "olap on pmem": ("pmem", {"data_dir": "/mnt/pmem0/db", "workload": "olap"}),
}


@pytest.mark.parametrize("engine,flavour,version", TARGETS,
                         ids=[f"{f}-{v}" for _, f, v in TARGETS])
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_recommend_is_safe_legal_and_fits(engine, flavour, version, placement):
    machine, args = PLACEMENTS[placement]
    f = build_facts(make_profile(machine), engine=engine, flavour=flavour, version=version,
                    **args)
    rec = recommend(f)
    catalog = load_catalog(engine, flavour, version)
    for s in rec.settings:
        knob = catalog.get(s.name)  # raises when the version lacks the knob
        assert knob.coerce(s.value) is not None
        assert not knob.is_risky(s.value), (s.name, s.text)
        assert not s.unsafe
    est = worst_case(engine, {s.name: s.value for s in rec.settings}, flavour=flavour,
                     version=version, catalog=catalog, host_cpus=rec.facts.cpus)
    # within BUDGET_SHARE of the budget: the rest is for the OS, page cache and monitoring
    assert est.total_bytes <= rec.facts.memory_bytes * BUDGET_SHARE
    if any("--membind" in s.command for s in rec.os_steps):
        node = rec.facts.bound_node
        node_mem = next(n["memory_bytes"] for n in f.numa if n["node"] == node)
        assert rec.facts.memory_bytes <= node_mem
    assert any("worst case" in n for n in rec.header_notes())
    if flavour == "mariadb" and version == "11.4.1":
        assert all(w.text != "fast" for w in rec.withheld)
