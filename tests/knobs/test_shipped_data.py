"""The shipped knob catalogs pass their schema (issue 55).

A run reads knobs/data/<flavour>.yaml without the schema check (it cost more CPU than the
rest of ``check FILE``), so this is where a shipped catalog that breaks the schema fails.
A catalog from another folder is still checked when it is loaded (the second test)."""

from __future__ import annotations

import pytest

from pmem_advisor.knobs import catalog


def _shipped_catalogs():
    return sorted(p for p in catalog.DATA.glob("*.yaml"))


def test_every_shipped_catalog_passes_the_schema():
    paths = _shipped_catalogs()
    assert {p.stem for p in paths} >= {"postgresql", "mysql", "mariadb", "duckdb"}
    for path in paths:
        assert catalog.shipped(path)
        with open(path, encoding="utf-8") as f:
            data = catalog.load_yaml(f)
        catalog.validate_catalog(data, path)  # raises CatalogDataError naming the file
        assert data["flavour"] == path.stem


def test_a_catalog_from_another_folder_is_checked_when_loaded(tmp_path):
    folder = tmp_path / "knobs"
    folder.mkdir()
    (folder / "nosuchflavour.yaml").write_text("flavour: nosuchflavour\nknobs: 3\n")
    catalog.EXTRA_CATALOG_DIRS.append(folder)
    try:
        catalog.clear_caches()
        assert not catalog.shipped(folder / "nosuchflavour.yaml")
        with pytest.raises(catalog.CatalogDataError, match="nosuchflavour.yaml"):
            catalog.knob_names("nosuchflavour")
    finally:
        catalog.EXTRA_CATALOG_DIRS.remove(folder)
        catalog.clear_caches()


def test_the_fast_loader_reads_what_the_safe_one_reads():
    import yaml

    path = catalog.DATA / "postgresql.yaml"
    text = path.read_text(encoding="utf-8")
    assert catalog.load_yaml(text) == yaml.safe_load(text)
