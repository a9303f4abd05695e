"""DuckDB's curated catalog against the installed DuckDB's own duckdb_settings()."""

from __future__ import annotations

import pytest

from pmem_advisor.engines.duckdb.catalog import (
    load_duckdb_catalog,
    parse_shown_size,
    parse_size,
    render_size,
)
from pmem_advisor.engines.duckdb.engine import _same
from pmem_advisor.errors import UsageError

duckdb = pytest.importorskip("duckdb", reason="PyPI duckdb is not installed (extra: duckdb)")

# DuckDB's input_type for each catalog type
INPUT_TYPES = {"bool": {"BOOLEAN"}, "int": {"BIGINT", "UBIGINT", "INTEGER"},
               "size": {"VARCHAR"}, "path": {"VARCHAR"}, "enum": {"VARCHAR"}}


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    """duckdb_settings() of a file database (temp_directory's default depends on the file)."""
    path = tmp_path_factory.mktemp("duck") / "db.duckdb"
    con = duckdb.connect(str(path), config={"autoinstall_known_extensions": False,
                                            "autoload_known_extensions": False})
    rows = con.execute("SELECT name, value, input_type FROM duckdb_settings()").fetchall()
    con.close()
    return str(path), {name: (value, kind) for name, value, kind in rows}


def test_every_knob_exists_with_its_type(settings):
    _, have = settings
    catalog = load_duckdb_catalog()
    assert len(catalog) >= 12
    for knob in catalog:
        assert knob.name in have, f"{knob.name} is not in duckdb_settings() of {duckdb.__version__}"
        assert have[knob.name][1] in INPUT_TYPES[knob.type], (knob.name, have[knob.name])


def test_every_default_matches(settings):
    path, have = settings
    catalog = load_duckdb_catalog()
    for knob in catalog:
        shown = have[knob.name][0]
        if knob.default_text == "<database>.tmp":
            assert shown == path + ".tmp"
        elif knob.default_text == "90% of available disk space":
            assert shown == knob.default_text
        elif knob.type == "size":  # DuckDB prints one decimal of a binary unit ('18.8 GiB')
            assert parse_shown_size(shown) is not None
            assert _same(knob, knob.default, shown), (knob.name, shown, knob.default)
        elif knob.type == "bool":
            assert shown == ("true" if knob.default else "false"), knob.name
        elif knob.type == "int":
            assert int(shown) == knob.default, knob.name
        else:
            assert shown.lower() == str(knob.default).lower(), knob.name


def test_durability_risks_are_marked():
    catalog = load_duckdb_catalog()
    fsync = catalog.get("fsync_mode")
    assert fsync.safety == "durability-risk" and fsync.is_risky("none")
    assert not fsync.is_risky("STANDARD")
    risky = {k.name for k in catalog if k.risky_values}
    assert risky == {"fsync_mode"}


def test_duckdb_sizes():
    assert parse_size("1GB", "x") == 10**9
    assert parse_size("1.5 GiB", "x") == 3 << 29
    assert parse_size("50%", "x", ram=1000) == 500
    assert parse_size("16.0 MiB", "x") == 16 << 20
    assert render_size(16 << 20) == "16MiB" and render_size(1000) == "1000B"
    for bad in ("12", "lots", "1e9", "200%"):
        with pytest.raises(UsageError, match="x:"):
            parse_size(bad, "x")


def test_out_of_range_and_wrong_type_name_the_setting():
    catalog = load_duckdb_catalog()
    with pytest.raises(UsageError, match="^threads: "):
        catalog.get("threads").parse("0")
    with pytest.raises(UsageError, match="^threads: "):
        catalog.get("threads").parse("many")
    with pytest.raises(UsageError, match="^default_block_size: .*power of two"):
        catalog.get("default_block_size").parse("100000")
    with pytest.raises(UsageError, match="^preserve_insertion_order: "):
        catalog.get("preserve_insertion_order").parse("maybe")
    with pytest.raises(UsageError, match="^memory_limit: "):
        catalog.get("memory_limit").parse("1KB")


def test_unsupported_version():
    with pytest.raises(UsageError, match="DuckDB 1.1 is not supported"):
        load_duckdb_catalog("1.1")
