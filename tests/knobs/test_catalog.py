import pytest

from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.knobs import catalog as cat
from pmem_advisor.knobs.catalog import KnobNotInVersion, load_catalog
from pmem_advisor.knobs.insight_knobs import INSIGHT_KNOBS

TARGETS = [("postgres", "postgresql", v) for v in ("13", "14", "15", "16", "17", "18")] + [
    ("mysql", "mysql", "8.0.36"), ("mysql", "mysql", "8.4"),
    ("mysql", "mariadb", "10.11.19"), ("mysql", "mariadb", "11.4"),
]


@pytest.mark.parametrize("engine,flavour,version", TARGETS)
def test_catalogs_load_and_are_sized(engine, flavour, version):
    c = load_catalog(engine, flavour, version)
    assert 40 <= len(c) <= 70
    for k in c:
        assert k.scope in ("session", "reload", "restart", "reinit", "compile")
        assert k.doc_url.startswith("https://")
        assert k.parse(k.render(k.default)) == k.default or k.same(
            k.parse(k.render(k.default)), k.default)


def test_every_insight_knob_is_catalogued():
    for flavour, names in INSIGHT_KNOBS.items():
        engine = "postgres" if flavour == "postgresql" else "mysql"
        c = load_catalog(engine, flavour)
        for n in names:
            assert n in c, f"{flavour} misses {n}"


def test_unknown_knob_suggests():
    c = load_catalog("postgres", version="18")
    with pytest.raises(UnknownKnobError) as e:
        c.get("shared_bufers")
    assert "shared_buffers" in str(e.value)


def test_knob_missing_in_version_names_version():
    c = load_catalog("postgres", version="15")
    with pytest.raises(KnobNotInVersion, match=r"PostgreSQL 15.*from 18"):
        c.get("io_method")
    c = load_catalog("mysql", "mysql", "8.0.28")
    with pytest.raises(KnobNotInVersion, match="8.0.28"):
        c.get("innodb_redo_log_capacity")


def test_version_changes_apply():
    assert load_catalog("postgres", version="13").get("checkpoint_completion_target").default == 0.5
    assert load_catalog("postgres", version="14").get("checkpoint_completion_target").default == 0.9
    old = load_catalog("postgres", version="14").get("wal_compression")
    new = load_catalog("postgres", version="15").get("wal_compression")
    assert old.type == "bool" and new.type == "enum" and "zstd" in new.values
    dw = load_catalog("mysql", "mysql", "8.0.36").get("innodb_doublewrite")
    assert dw.is_risky("DETECT_ONLY") and not dw.is_risky("ON")
    assert load_catalog("mysql", "mariadb", "11.4").get("innodb_doublewrite").values == (
        "OFF", "ON", "fast")


def test_unsupported_version_and_flavour():
    with pytest.raises(UsageError, match="supported: 13"):
        load_catalog("postgres", version="12")
    with pytest.raises(UsageError, match="8.2"):
        load_catalog("mysql", "mysql", "8.2.0")
    assert load_catalog("mysql", "mariadb", "11.8.3").flavour == "mariadb"  # 11.4+
    with pytest.raises(UsageError):
        load_catalog("postgres", "mariadb")
    with pytest.raises(UsageError):
        load_catalog("oracle")


def test_pg_units_parse_and_render():
    c = load_catalog("postgres", version="18")
    sb = c.get("shared_buffers")
    assert sb.parse("128MB") == 16384 and sb.render(16384) == "128MB"
    assert sb.parse("16384") == 16384
    assert c.get("checkpoint_timeout").parse("1h") == 3600
    assert c.get("checkpoint_timeout").render(900) == "15min"
    assert c.get("wal_buffers").parse("100kB") == 12  # rint, like the server
    assert c.get("wal_buffers").render(-1) == "-1"
    assert c.get("fsync").parse("of") is False and c.get("fsync").parse("TRUE") is True
    with pytest.raises(UsageError, match="units"):
        sb.parse("128 parsecs")
    with pytest.raises(UsageError, match="allowed range 128kB"):
        sb.parse("8kB")
    with pytest.raises(UsageError):
        c.get("fsync").parse("o")  # ambiguous prefix of on/off


def test_mysql_values():
    c = load_catalog("mysql", "mariadb", "10.11.19")
    bp = c.get("innodb-buffer-pool-size")  # dash and underscore are the same
    assert bp.parse("1G") == 1 << 30 and bp.render(1 << 30) == "1G"
    with pytest.raises(UsageError):  # my_getopt knows on/off/true/false/1/0 only (issue 49)
        c.get("innodb_doublewrite").parse("yes")
    assert c.get("innodb_flush_method").parse("o_direct") == "O_DIRECT"
    with pytest.raises(UsageError, match="not an integer"):
        c.get("innodb_io_capacity").parse("1.5")
    with pytest.raises(UsageError, match="one of"):
        c.get("innodb_flush_method").parse("turbo")


def test_safety_classes():
    pg = load_catalog("postgres")
    assert pg.get("full_page_writes").safety == "durability-risk"
    assert pg.get("synchronous_commit").is_risky("off")
    assert not pg.get("synchronous_commit").is_risky("on")
    my = load_catalog("mysql", "mysql", "8.4")
    assert my.get("innodb_flush_method").is_risky("O_DIRECT_NO_FSYNC")
    assert my.get("innodb_flush_log_at_trx_commit").is_risky(2)
    assert pg.get("shared_buffers").safety == "safe"


def test_schema_rejects_bad_data(tmp_path, monkeypatch):
    bad = tmp_path / "postgresql.yaml"
    bad.write_text("engine: postgres\nflavour: postgresql\ntitle: X\nseries: ['18']\n"
                   "knobs:\n - {name: x, category: memory, type: int, default: 1,"
                   " scope: forever, description: a description, doc: 'https://x'}\n")
    (tmp_path / "catalog.schema.json").write_text((cat.DATA / "catalog.schema.json").read_text())
    monkeypatch.setattr(cat, "DATA", tmp_path)
    cat.clear_caches()
    try:  # a catalog outside the shipped folder is checked when it is loaded
        with pytest.raises(cat.CatalogDataError, match="scope"):
            load_catalog("postgres")
    finally:
        monkeypatch.undo()
        cat.clear_caches()


def test_full_catalog_layers_curated_over_server_facts():
    c = load_catalog("postgres", version="18")
    every = {k.name: k for k in c.all()}
    assert len(every) > 350 and 40 <= len(c) <= 70  # iteration stays the curated set
    assert {k.name for k in c} <= set(every)
    sb, lmds = c.get("shared_buffers"), c.get("log_min_duration_statement")
    assert sb.curated and sb.tunable and sb.safety == "safe" and sb.source == "manual"
    assert not lmds.curated and not lmds.tunable and lmds.safety == "unknown"
    assert lmds.type == "duration" and lmds.unit == "ms" and lmds.default == -1
    assert lmds.parse("250ms") == 250 and lmds.render(1500) == "1500ms"
    assert "log_min_duration_statement" not in c.names()
    assert c.generated_from == "pg_settings of PostgreSQL 18.6"
    # a curated knob that trades durability keeps its class (the overlay wins)
    assert c.get("fsync").safety == "durability-risk"
    # internal settings are known but not writable in a config file
    assert not c.get("block_size").config_file


def test_every_postgres_major_has_its_own_server_list():
    for major in ("13", "14", "15", "16", "17", "18"):
        c = load_catalog("postgres", version=major)
        assert c.generated_from.startswith(f"pg_settings of PostgreSQL {major}.") and c.complete
    c16 = load_catalog("postgres", version="16")
    assert "log_min_duration_statement" in c16
    assert "io_method" not in c16  # 18 only
    assert "summarize_wal" in load_catalog("postgres", version="17")
    assert "client_connection_check_interval" in load_catalog("postgres", version="14")


def test_mariadb_full_catalog():
    c = load_catalog("mysql", "mariadb", "10.11")
    k = c.get("long-query-time")  # '-' and '_' are the same on MySQL/MariaDB
    assert k.type == "real" and not k.curated
    assert c.get("slow_query_log").parse("ON") is True
    big = c.get("max_binlog_cache_size")
    # 2**64-1 stays exact (no float), then down to the block as mysqld rounds it (issue 49)
    assert big.parse(str(big.max)) == big.max // big.block_size * big.block_size
    assert not c.get("hostname").config_file


def test_pg_integer_text_is_read_like_strtol():
    c = load_catalog("postgres", version="15")
    assert c.get("log_file_mode").parse("0600") == 0o600
    assert c.get("unix_socket_permissions").parse("0x1ff") == 0o777
    with pytest.raises(UsageError):
        c.get("log_file_mode").parse("0800")
