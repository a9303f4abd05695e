"""Issue 17 item 6 for study storage (`tune --storage URL`): the URL is read like `check --dsn`
(connection.parse_dsn), errors opening it never print the password, and `mysql://` gets the
driver we have (issue 14).

Before the fix `--storage 'postgresql://u:S3C@RETPW@127.0.0.1:1/db'` was exit 3 with "failed to
resolve host 'RETPW@127.0.0.1'" (half the password) and `--storage mysql://...` failed with
"No module named 'MySQLdb'" (SQLAlchemy's default MySQL driver, not installed)."""

from __future__ import annotations

import os
import uuid

import pytest

from pmem_advisor import mysql_driver
from pmem_advisor.connection import scrub
from pmem_advisor.errors import EXIT_ENVIRONMENT, EXIT_USAGE, AdvisorError, InputError
from pmem_advisor.tuner.storage import engine_url, open_storage

SPLIT = ("S3C", "RETPW")  # each half of a password with a raw '@'


@pytest.mark.parametrize("url", [
    "postgresql://u:S3C@RETPW@127.0.0.1:1/db",
    "postgresql+psycopg://u:S3C@RETPW@127.0.0.1:1/db",
    "mysql://root:S3C@RETPW@127.0.0.1:1/x",
    "mariadb://root:S3C@RETPW@127.0.0.1:1/x",
])
def test_a_raw_at_in_the_storage_password_is_bad_input_and_redacted(url):
    with pytest.raises(InputError) as info:
        open_storage(url)
    text = f"{info.value} {getattr(info.value, 'hint', '')}"
    assert info.value.exit_code == EXIT_USAGE and "%40" in text
    assert not any(part in text for part in SPLIT), text


@pytest.mark.parametrize("url", [
    "postgresql://u:S3CRETPW@127.0.0.1:1/db",  # nothing listens on port 1
    "mysql://root:S3CRETPW@127.0.0.1:1/x",
])
def test_an_unreachable_storage_is_exit_3_without_the_password(url):
    with pytest.raises(AdvisorError) as info:
        open_storage(url)
    text = f"{info.value} {getattr(info.value, 'hint', '')}"
    assert info.value.exit_code == EXIT_ENVIRONMENT, text
    assert "S3CRETPW" not in text and "***" in text
    assert "MySQLdb" not in text and "No module" not in text  # the driver was mapped


def test_scrub_hides_every_piece_of_a_split_password():
    url = "postgresql://u:S3C@RETPW@127.0.0.1:1/db"
    text = scrub("failed to resolve host 'RETPW@127.0.0.1': Name or service not known", url)
    assert "RETPW" not in text and "127.0.0.1" in text


def test_engine_url_names_the_installed_drivers(monkeypatch):
    assert engine_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert engine_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert engine_url("postgresql+psycopg2://u@h/db") == "postgresql+psycopg2://u@h/db"
    assert engine_url("mysql+pymysql://u@h/db") == "mysql+pymysql://u@h/db"
    assert engine_url("sqlite:////tmp/x/study.db") == "sqlite:////tmp/x/study.db"
    monkeypatch.setenv(mysql_driver.ENV, "pymysql")
    assert engine_url("mysql://root@h:3306/x") == "mysql+pymysql://root@h:3306/x"
    assert engine_url("mariadb://root@h/x") == "mysql+pymysql://root@h/x"
    monkeypatch.delenv(mysql_driver.ENV)
    wanted = {"mysql.connector": "mysqlconnector", "pymysql": "pymysql"}[
        mysql_driver.driver_name()]
    assert engine_url("mysql://root@h/x") == f"mysql+{wanted}://root@h/x"


def test_cli_refuses_the_split_password_before_doing_anything(run_cli, tmp_path):
    code, out, err = run_cli("tune", "postgres", "--workload", "pgbench-tpcb", "--trials", "1",
                             "--storage", "postgresql://u:S3C@RETPW@127.0.0.1:1/db",
                             "--out", str(tmp_path / "t"))
    assert code == EXIT_USAGE and out == "", err
    assert "%40" in err and not any(part in err for part in SPLIT), err
    assert "Traceback" not in err


MARIADB_SOCKET = "/run/mysqld/mysqld.sock"


def test_optuna_study_on_the_machines_mariadb():
    """An attach-to-existing check: `mysql://` storage works end to end on MariaDB."""
    if not os.path.exists(MARIADB_SOCKET):
        pytest.skip(f"no MariaDB server socket at {MARIADB_SOCKET}")
    import optuna

    url = f"mysql://root@localhost/test?unix_socket={MARIADB_SOCKET}"
    try:
        storage = open_storage(url, heartbeat_s=1)
    except AdvisorError as e:
        pytest.skip(f"MariaDB at {MARIADB_SOCKET} is not usable as root: {e}")
    name = f"pmem-advisor-test-{uuid.uuid4().hex[:8]}"
    try:
        study = optuna.create_study(storage=storage, study_name=name)
        study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
        again = optuna.load_study(study_name=name, storage=open_storage(url))
        assert len(again.trials) == 2
    finally:
        try:
            optuna.delete_study(study_name=name, storage=storage)
        except KeyError:
            pass
