"""Server facts read from the server: the build's lz4/zstd (pg_config --configure beside the
installed server) decide wal_compression = lz4; `recommend mysql` targets MySQL; the
connections max_connections reserves above the clients are said."""

from __future__ import annotations

import json

import pytest

from pmem_advisor.engines.postgres.features import from_pg_configure, postgres_build_features
from tests.sandbox import find_server


def test_configure_flags_to_features():
    text = "'--prefix=/usr' '--with-lz4' '--with-zstd' '--with-llvm' 'CFLAGS=-O2'"
    assert from_pg_configure(text) == {"lz4", "zstd"}
    assert from_pg_configure("'--prefix=/x' '--without-readline'") == frozenset()


def _wal_compression(run_cli, version: str) -> list[str]:
    code, out, err = run_cli("recommend", "postgres", "--version", version, "--format", "tsv")
    assert code == 0, err
    return next(line.split("\t") for line in out.splitlines()
                if line.startswith("wal_compression\t"))


def test_debian_postgresql_15_has_lz4_and_gets_it(run_cli):
    binary = find_server("postgres", "debian", "15")
    assert postgres_build_features(binary.bindir) >= {"lz4"}
    row = _wal_compression(run_cli, "15")
    assert row[1] == "lz4" and "this build has it" in row[3]


def test_embedded_postgresql_18_has_no_lz4_and_does_not_get_it(run_cli):
    binary = find_server("postgres", "embedded", "18")
    assert "lz4" not in (postgres_build_features(binary.bindir) or frozenset())
    row = _wal_compression(run_cli, "18")
    assert row[1] != "lz4" and "no lz4 known in this build" in row[3]


def test_another_hosts_profile_does_not_borrow_this_hosts_build(run_cli, tmp_path):
    from tests.rules.machines import make_profile

    profile = tmp_path / "probe.json"
    profile.write_text(json.dumps(make_profile("ssd")))
    code, out, _ = run_cli("recommend", "postgres", "--profile", str(profile), "--version", "15",
                           "--format", "tsv")
    assert code == 0
    assert "wal_compression\tlz4" not in out


def test_recommend_mysql_targets_mysql_not_the_local_mariadb(run_cli):
    from pmem_advisor.instances import discover_servers

    if any(s.flavour == "mysql" for s in discover_servers("mysql")):
        pytest.skip("a MySQL server is installed here: it would be the target")
    code, out, err = run_cli("recommend", "mysql", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"]["flavour"] == "mysql" and doc["target"]["version"] == "8.4"
    assert "MySQL 8.4" in doc["notes"][0] and "recommend mariadb" in doc["notes"][0]
    code, out, _ = run_cli("recommend", "mariadb", "--format", "json")
    assert json.loads(out)["target"]["flavour"] == "mariadb"
    code, out, _ = run_cli("knobs", "mysql", "--format", "json")
    assert json.loads(out)["target"]["flavour"] == "mysql"


@pytest.mark.parametrize("engine,reserved", [("postgres", "3 superuser_reserved_connections"),
                                             ("mariadb", "10 for monitoring")])
def test_max_connections_says_what_it_reserves(run_cli, engine, reserved):
    code, out, _ = run_cli("recommend", engine, "--clients", "200", "--format", "tsv")
    assert code == 0
    row = next(line.split("\t") for line in out.splitlines()
               if line.startswith("max_connections\t"))
    assert row[1] == "210" and "200 clients (--clients)" in row[3] and reserved in row[3]
    assert "pgtune: baseline" not in row[3]
