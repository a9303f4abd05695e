"""recommend on ordinary hardware matches pgtune except where a line says why.

pgtune (pgtune.leopard.in.ua, current) for PostgreSQL 18, Linux, OLTP, 24 GB RAM, 2 CPUs, SSD,
300 connections gives the values in PGTUNE below (its formulas: shared_buffers RAM/4,
effective_cache_size 3/4 RAM, maintenance_work_mem RAM/16, wal_buffers 3% of shared_buffers up
to 16 MB, work_mem (RAM - shared_buffers) / ((connections + 8 workers) x 3), OLTP WAL 2-8 GB).
"""

from __future__ import annotations

from pmem_advisor.rules import build_facts, recommend
from tests.rules.machines import make_profile

PGTUNE = {
    "max_connections": "300",
    "shared_buffers": "6GB",
    "effective_cache_size": "18GB",
    "maintenance_work_mem": "1536MB",
    "checkpoint_completion_target": "0.9",
    "wal_buffers": "16MB",
    "default_statistics_target": "100",
    "random_page_cost": "1.1",
    "effective_io_concurrency": "200",
    "work_mem": "20426kB",
    "min_wal_size": "2GB",
    "max_wal_size": "8GB",
}


def rec_24g(**kw):
    prof = make_profile({"preset": "ssd", "memory_gb": 24, "cores": 2, "threads": 2})
    return recommend(build_facts(prof, engine="postgres", version="18", workload="oltp",
                                 data_dir="/srv/pg", **kw))


def test_matches_pgtune_or_says_why():
    rec = rec_24g()
    for name, want in PGTUNE.items():
        s = rec.setting(name)
        assert s is not None, name
        if s.text != want:  # a deliberate difference names its reason on the line
            assert "worst case" in s.reason or "not a pgtune" in s.reason, (name, s)
    # the one deliberate difference here: work_mem fits the worst case in 24 GiB
    assert rec.setting("work_mem").text != PGTUNE["work_mem"]
    assert rec.memory.total_bytes <= 24 << 30


def test_lines_beyond_pgtune_say_why():
    rec = rec_24g()
    assert rec.setting("jit").text == "off" and "OLTP" in rec.setting("jit").reason
    wc = rec.setting("wal_compression")
    assert wc.text == "off" and "16% CPU" in wc.reason  # 2 CPUs: compression costs more
    assert "pgtune" not in wc.reason
    for s in rec.settings:  # a PG-BASE line beyond pgtune's list never claims to be pgtune's
        if s.rule == "PG-BASE" and s.name not in PGTUNE:
            assert not s.reason.startswith("pgtune:"), s
    assert "not pgtune's" in rec.setting("autovacuum_work_mem").reason


def test_lz4_when_the_build_has_it_and_cpus_allow():
    prof = make_profile({"preset": "ssd", "memory_gb": 24, "cores": 8, "threads": 8})
    f = build_facts(prof, engine="postgres", version="18", data_dir="/srv/pg",
                    features={"lz4"})
    assert recommend(f).setting("wal_compression").text == "lz4"
    f = build_facts(prof, engine="postgres", version="14", data_dir="/srv/pg")
    assert recommend(f).setting("wal_compression").text == "on"
