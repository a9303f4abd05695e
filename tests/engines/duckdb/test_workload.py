"""DuckDB's workloads: the data-size estimate `tune` sizes its default scale by."""

from __future__ import annotations

import pytest

pytest.importorskip("duckdb", reason="PyPI duckdb is not installed (extra: duckdb)")

from pmem_advisor.engines.duckdb import workload as duck_workloads  # noqa: E402
from pmem_advisor.engines.duckdb.baseline import limit_for_budget  # noqa: E402
from pmem_advisor.tuner.session import choose_scale  # noqa: E402

MB = 1 << 20


def test_size_estimate_matches_the_file_duckdb_writes(tmp_path):
    """The estimate per scale unit is what a loaded file measures (scale 20: 115 MB on
    2.0.1), not scale 1's 11.5 MB of mostly fixed blocks, which doubled it."""
    wl = duck_workloads.DuckOlapTpchLite()
    path = tmp_path / "size.duckdb"
    con = duck_workloads.open_db(str(path), ["SET threads = 1"])
    try:
        duck_workloads.load(con, 20)
    finally:
        con.close()
    size = path.stat().st_size
    assert 0.85 * size <= wl.data_bytes(20) <= 1.15 * size, (size, wl.data_bytes(20))


def test_default_scale_outgrows_the_memory_limit_it_tunes():
    """tune's default scale makes a file larger than the budget's memory_limit (681 MiB at
    1 GiB): ~340 MB at scale 60 (measured) fitted it whole under the old 12 MB per unit."""
    wl = duck_workloads.DuckOlapTpchLite()
    limit = limit_for_budget(1 << 30, 2)
    assert limit == 681 * MB
    scale, notes, _ = choose_scale(wl, scale=None, clients=2, buffer_name="memory_limit",
                                   buffer_bytes=limit, free_bytes=None)
    assert scale >= 120 and wl.data_bytes(scale) >= limit
    assert wl.data_bytes(60) == pytest.approx(340e6, rel=0.05)  # the measured scale-60 file
    assert "memory_limit" in notes[0]
