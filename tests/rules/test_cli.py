"""recommend/check CLI: JSON shapes, exit codes, bad input, running servers (when present)."""

from __future__ import annotations

import json
import os

import pytest

from pmem_advisor.errors import EXIT_ENVIRONMENT, EXIT_FINDINGS, EXIT_USAGE

PG_DSN = "host=/var/run/postgresql user=postgres dbname=postgres"
MY_SOCK = "/run/mysqld/mysqld.sock"


def test_recommend_json_shape(run_cli, profile_file):
    code, out, _ = run_cli("recommend", "postgres", "--profile", profile_file(), "--version",
                           "16", "--data-dir", "/mnt/pmem0/pg", "--clients", "32", "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) >= {"settings", "withheld", "os_steps", "findings"}
    s = {x["name"]: x for x in data["settings"]}
    assert set(s["wal_compression"]) >= {"name", "value", "default", "rule", "insights", "reason"}
    assert s["wal_compression"]["value"] == "off" and s["wal_compression"]["insights"] == ["K23-5"]
    assert all(set(o) == {"rule", "insights", "command", "reason", "destructive"}
               for o in data["os_steps"])


def test_recommend_writes_a_config_with_reasons(run_cli, profile_file, tmp_path):
    out_file = tmp_path / "my.cnf"
    code, _, _ = run_cli("recommend", "mysql", "--profile", profile_file(), "--version", "10.11",
                         "--data-dir", "/mnt/pmem0/my", "--out", str(out_file))
    assert code == 0
    text = out_file.read_text()
    assert "[mysqld]" in text and "innodb_doublewrite" in text and "PM016" in text
    assert "withheld innodb_doublewrite = OFF" in text


def test_recommend_bad_schema_is_exit_2(run_cli, tmp_path):
    p = tmp_path / "old.json"
    p.write_text(json.dumps({"schema": "pmem-advisor.probe/0"}))
    code, _, err = run_cli("recommend", "postgres", "--profile", str(p))
    assert code == EXIT_USAGE and err.count("\n") == 1 and "probe/0" in err


def test_check_exit_codes_and_formats(run_cli, profile_file):
    prof = profile_file({"preset": "pmem", "pmem_mode": "memory"})
    code, out, _ = run_cli("check", "--profile", prof, "--format", "json")
    assert code == 0  # a warning does not fail at --fail-on fail
    assert json.loads(out)["findings"][0]["rule"] == "PM001"
    assert set(json.loads(out)["findings"][0]) == {"rule", "insights", "severity", "subject",
                                                     "message", "fix", "file", "line"}
    code, out, _ = run_cli("check", "--profile", prof, "--fail-on", "warn", "--format", "junit")
    assert code == EXIT_FINDINGS and "<failure" in out and out.startswith("<?xml")


def test_check_config_file(run_cli, profile_file, tmp_path):
    conf = tmp_path / "postgresql.conf"
    conf.write_text("full_page_writes = off\nwal_compression = on\n")
    code, out, _ = run_cli("check", "--profile", profile_file(), "--db", "postgres",
                           "--config", str(conf), "--data-dir", "/mnt/pmem0/pg")
    # CK001 (CHECK's durability gate) supersedes PM015 for full_page_writes=off
    assert code == EXIT_FINDINGS and ("CK001" in out or "PM015" in out) and "PM012" in out


def test_check_config_the_parser_rejects(run_cli, profile_file, tmp_path):
    conf = tmp_path / "postgresql.conf"
    conf.write_text("shared_buffers = 'unterminated\n")
    code, _, err = run_cli("check", "--profile", profile_file(), "--db", "postgres",
                           "--config", str(conf))
    assert code == EXIT_USAGE and err.count("\n") == 1


def test_check_unreachable_dsn_hides_the_password(run_cli, profile_file):
    code, _, err = run_cli("check", "--profile", profile_file(), "--dsn",
                           "host=/nonexistent user=postgres password=s3cr3t dbname=x")
    # an unreachable server is an environment problem (exit 3), never a traceback; the note
    # that the password is visible in argv comes first, also when the connection fails
    lines = err.splitlines()
    assert code == EXIT_ENVIRONMENT and "s3cr3t" not in err and len(lines) == 2
    assert "visible to every local user" in lines[0] and "error:" in lines[1]
    code, _, err = run_cli("check", "--profile", profile_file(), "--dsn",
                           "mysql://root:s3cr3t@127.0.0.1:1/x")
    assert code == EXIT_ENVIRONMENT and "s3cr3t" not in err


@pytest.mark.skipif(not os.path.exists("/var/run/postgresql/.s.PGSQL.5432"),
                    reason="no PostgreSQL service on this machine")
def test_check_dsn_running_postgres(run_cli):
    code, out, _ = run_cli("check", "--dsn", PG_DSN, "--format", "json")
    assert code in (0, EXIT_FINDINGS)
    assert isinstance(json.loads(out)["findings"], list)


@pytest.mark.skipif(not os.path.exists(MY_SOCK), reason="no MariaDB service on this machine")
def test_check_dsn_running_mariadb(run_cli):
    code, out, _ = run_cli("check", "--dsn", f"socket={MY_SOCK} user=root", "--format", "json")
    assert code in (0, EXIT_FINDINGS)
    assert isinstance(json.loads(out)["findings"], list)


def test_read_server_maps_data_directory(tmp_path):
    if not os.path.exists("/var/run/postgresql/.s.PGSQL.5432"):
        pytest.skip("no PostgreSQL service on this machine")
    from pmem_advisor.instances.live import read_server

    s = read_server(PG_DSN, "postgres")
    assert os.path.isabs(s["data_dir"]) and s["wal_dir"].startswith("/")
    assert s["settings"]["full_page_writes"] in ("on", "off")
