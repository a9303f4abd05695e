"""The catalog generator's mapping of server metadata, and the files it shipped."""

import json

import jsonschema

from pmem_advisor.knobs import generate


def test_pg_settings_rows_map_to_catalog_entries():
    e = generate.pg_entry(("log_min_duration_statement", "integer", "ms", "-1", "2147483647",
                           None, "-1", "superuser", "Reporting", "Sets ..."))
    assert (e["type"], e["unit"], e["min"], e["max"], e["scope"]) == (
        "duration", "ms", -1, 2147483647, "session")
    e = generate.pg_entry(("shared_buffers", "integer", "8kB", "16", "1073741823", None,
                           "16384", "postmaster", "Memory", "x"))
    assert (e["type"], e["scope"], e["config_file"]) == ("size", "restart", True)
    e = generate.pg_entry(("block_size", "integer", None, "8192", "8192", None, "8192",
                           "internal", "Preset", "x"))
    assert (e["type"], e["scope"], e["config_file"]) == ("int", "compile", False)
    e = generate.pg_entry(("wal_level", "enum", None, None, None, ["minimal", "replica",
                                                                   "logical"],
                           "replica", "postmaster", "WAL", "x"))
    assert e["values"] == ["minimal", "replica", "logical"]


def test_system_variables_rows_map_to_catalog_entries():
    settable = {"max_binlog_cache_size", "character_set_server"}
    e = generate.my_entry(("MAX_BINLOG_CACHE_SIZE", "BIGINT UNSIGNED", "4096",
                           "18446744073709547520", None, "NO", "18446744073709547520",
                           "GLOBAL", "x", "4096"), settable)
    assert e["max"] == 18446744073709547520 and e["scope"] == "reload" and e["config_file"]
    assert e["block_size"] == 4096 and e["unsigned"]  # my_getopt rounds to it, refuses '-'

    e = generate.my_entry(("CHARACTER_SET_SERVER", "ENUM", None, None, None, "NO", "latin1",
                           "SESSION", "x", None), settable)
    assert e["type"] == "string" and e["scope"] == "session"  # an ENUM without a list
    e = generate.my_entry(("HOSTNAME", "VARCHAR", None, None, None, "YES", None, "GLOBAL",
                           "x", None), settable)
    assert (e["scope"], e["config_file"]) == ("restart", False)


def test_shipped_files_hold_server_facts_only():
    files = sorted(generate.OUT_DIR.glob("*.json"))
    assert {p.name for p in files} >= {"postgresql-15.json", "postgresql-18.json",
                                       "mariadb-10.11.json"}
    schema = generate.SCHEMA
    for path in files:
        text = path.read_text()
        assert "/pmem-advisor/run/" not in text  # no path of the instance that was read
        doc = json.loads(text)
        jsonschema.validate(doc, schema)
        assert doc["format"] == generate.FORMAT and len(doc["knobs"]) > 300
        names = [k["name"] for k in doc["knobs"]]
        assert len(names) == len(set(names)) and names == sorted(names)
