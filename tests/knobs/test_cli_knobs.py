import json


def test_knobs_json(run_cli):
    code, out, _ = run_cli("knobs", "postgres", "--version", "15", "--json")
    assert code == 0
    rows = json.loads(out)
    names = {r["name"] for r in rows}
    assert {"shared_buffers", "wal_compression"} <= names and "io_method" not in names
    assert all({"name", "type", "default", "scope", "safety"} <= set(r) for r in rows)
    code, out, _ = run_cli("knobs", "mysql", "--flavour", "mysql", "--version", "8.0", "--json")
    assert code == 0 and any(r["name"] == "innodb_redo_log_capacity" for r in json.loads(out))


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
