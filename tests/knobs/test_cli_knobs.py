import json


def test_knobs_json(run_cli):
    code, out, _ = run_cli("knobs", "postgres", "--version", "15", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "pmem-advisor.knobs/1"
    assert doc["target"] == {"engine": "postgres", "flavour": "postgresql", "version": "15"}
    rows = doc["knobs"]
    names = {r["name"] for r in rows}
    assert {"shared_buffers", "wal_compression"} <= names and "io_method" not in names
    assert "io_method" in doc["absent"]
    assert all({"name", "type", "default", "scope", "safety"} <= set(r) for r in rows)
    # the full catalog: server-only knobs are listed, marked not curated / not tunable
    lmds = next(r for r in rows if r["name"] == "log_min_duration_statement")
    assert (lmds["curated"], lmds["tunable"], lmds["safety"]) == (False, False, "unknown")
    assert lmds["source"].startswith("pg_settings of PostgreSQL 15.")
    code, out, _ = run_cli("knobs", "postgres", "--version", "15", "--curated", "--json")
    assert {r["curated"] for r in json.loads(out)["knobs"]} == {True}
    code, out, _ = run_cli("knobs", "mysql", "--flavour", "mysql", "--version", "8.0", "--json")
    assert code == 0
    assert any(r["name"] == "innodb_redo_log_capacity" for r in json.loads(out)["knobs"])


def test_config_render_server_only_knob(run_cli):
    """issue 14: a knob beyond the curated ones (from pg_settings) renders in its units."""
    code, out, err = run_cli("config", "render", "postgres",
                             "--set", "log_min_duration_statement=250ms")
    assert code == 0, err
    assert "log_min_duration_statement = 250ms" in out
    code, _, err = run_cli("config", "render", "postgres",
                           "--set", "log_min_duration_statement=250 parsecs")
    assert code == 2 and "log_min_duration_statement" in err
    code, out, err = run_cli("config", "render", "mysql", "--flavour", "mariadb", "--version",
                             "10.11", "--set", "long_query_time=0.5")
    assert code == 0 and "long_query_time = 0.5" in out, err


def test_config_render_parse(run_cli, tmp_path):
    out_file = tmp_path / "pg.conf"
    code, _, err = run_cli("config", "render", "postgres", "--version", "15",
                           "--set", "shared_buffers=1GB", "--set", "wal_compression=lz4",
                           "--out", str(out_file))
    assert code == 0, err
    code, out, _ = run_cli("config", "parse", str(out_file), "--json")
    data = json.loads(out)
    assert {s["name"]: s["value"] for s in data["settings"]} == {
        "shared_buffers": "1GB", "wal_compression": "lz4"}
    assert data["settings"][0]["line"] > 1


def test_config_bad_input_exit_2(run_cli, tmp_path):
    code, _, err = run_cli("config", "render", "postgres", "--set", "shared_bufers=1GB")
    assert code == 2 and "shared_buffers" in err
    code, _, err = run_cli("config", "render", "mysql", "--flavour", "mariadb",
                           "--set", "innodb_write_io_threads=500")
    assert code == 2 and "allowed range" in err
    bad = tmp_path / "bad.conf"
    bad.write_text("shared_buffers = = 1\n")
    code, _, err = run_cli("config", "parse", str(bad))
    assert code == 2 and "bad.conf:1" in err
    code, _, err = run_cli("config", "validate", str(bad), "postgres")
    assert code == 2 and "bad.conf:1" in err
