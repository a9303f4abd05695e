"""Issue 17 item 6: DSNs and storage URLs are parsed by the drivers' parsers and printed only
redacted, also when malformed; a DSN can come from a file or the environment.

Before the fix `postgresql:/u:PW@host/db` was echoed whole (check.redact needed `://`) and a
password with an '@' was partly printed; there was no --dsn-file or PMEM_ADVISOR_DSN."""

from __future__ import annotations

import os

import pytest

from pmem_advisor.connection import parse_dsn, redact_dsn, resolve_dsn
from pmem_advisor.errors import EXIT_USAGE, InputError

SECRET = "S3cr3tPW"

CASES = [
    f"postgresql://u:{SECRET}@host/db",
    f"postgresql:/u:{SECRET}@host/db",  # one slash: not a URI to anyone
    f"postgresql://u:{SECRET}@[::1/db",  # unterminated IPv6 host
    f"postgresql://u:{SECRET}@x@host/db",  # raw '@' in the password
    f"postgresql://u:ab@{SECRET}@host/db",
    f"host=/run/postgresql user=u password={SECRET} dbname=db",
    f"host=/run/postgresql password='{SECRET} x' dbname=db",
    f"host=h password={SECRET}",
    f"postgresql://h/db?password={SECRET}",
    f"mysql://root:{SECRET}@127.0.0.1:3306/db",
    f"mysql://root:{SECRET}@[::1/db",
    f"mariadb+pymysql://root:{SECRET}@h/db?unix_socket=/run/mysqld.sock",
    f"u:{SECRET}@host",
    f"postgresql//u:{SECRET}@host",
]


@pytest.mark.parametrize("dsn", CASES)
def test_the_password_never_appears_in_the_redacted_text_or_in_a_parse_error(dsn):
    assert SECRET not in redact_dsn(dsn)
    assert "***" in redact_dsn(dsn)
    try:
        parse_dsn(dsn)
    except InputError as e:
        assert SECRET not in str(e) and SECRET[:4] not in str(e)
        assert "\n" not in str(e)
        assert e.exit_code == EXIT_USAGE


def test_a_malformed_ipv6_uri_is_an_input_error_not_a_crash():
    with pytest.raises(InputError, match=r"postgresql://u:\*\*\*@\[::1/db"):
        parse_dsn("postgresql://u:p@[::1/db")


def test_a_raw_at_in_the_password_is_refused_with_the_fix():
    with pytest.raises(InputError, match="%40"):
        parse_dsn("postgresql://u:p@ss@h/db")
    assert parse_dsn("postgresql://u:p%40ss@h/db")["password"] == "p@ss"


def test_parsing_uses_libpq_and_sqlalchemy_semantics():
    d = parse_dsn("postgresql://alice@/bench?host=/run/postgresql&port=5433")
    assert d == {"user": "alice", "dbname": "bench", "host": "/run/postgresql", "port": "5433"}
    assert parse_dsn("service=prod")["service"] == "prod"  # a pg_service.conf entry
    m = parse_dsn("mysql://root:pw@db1:3307/shop?unix_socket=/run/mysqld/mysqld.sock")
    assert m["port"] == 3307 and m["unix_socket"] == "/run/mysqld/mysqld.sock"


def test_a_storage_url_is_redacted_by_the_tuner_too():
    from pmem_advisor.tuner.storage import redact

    for url in (f"postgresql://u:{SECRET}@h/db", f"mysql://u:{SECRET}@[::1/db",
                f"postgresql:/u:{SECRET}@h/db", f"postgresql://u:a@{SECRET}@h/db"):
        assert SECRET not in redact(url)


def test_dsn_file_env_and_command_line(tmp_path, monkeypatch):
    f = tmp_path / "dsn"
    f.write_text(f"# prod\npostgresql://u:{SECRET}@h/db\n")
    f.chmod(0o600)
    assert resolve_dsn(dsn_file=f) == f"postgresql://u:{SECRET}@h/db"
    f.chmod(0o644)
    with pytest.raises(InputError, match="chmod 600") as e:
        resolve_dsn(dsn_file=f)
    assert SECRET not in str(e.value)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputError, match="not a regular file"):
        resolve_dsn(dsn_file=tmp_path / "fifo")
    with pytest.raises(InputError, match="either"):
        resolve_dsn(dsn="host=x", dsn_file=f)
    monkeypatch.setenv("PMEM_ADVISOR_DSN", "host=/run/postgresql")
    assert resolve_dsn() == "host=/run/postgresql"
    notes: list[str] = []
    assert resolve_dsn(dsn=f"host=h password={SECRET}", notes=notes).startswith("host=h")
    assert notes and "/proc" in notes[0] and SECRET not in notes[0]
    monkeypatch.delenv("PMEM_ADVISOR_DSN")
    assert resolve_dsn() is None
