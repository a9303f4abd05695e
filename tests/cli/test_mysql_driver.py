"""MySQL's own connector first, PyMySQL as the fallback (issue 14), against real MariaDB."""

import pytest

from pmem_advisor import mysql_driver
from pmem_advisor.connection import mysql_connect_kwargs
from pmem_advisor.errors import EnvironmentProblem, UsageError

HAS_CONNECTOR = mysql_driver._has(mysql_driver.CONNECTOR)


def test_driver_choice_and_override(monkeypatch):
    monkeypatch.delenv(mysql_driver.ENV, raising=False)
    assert mysql_driver.driver_name() == ("mysql.connector" if HAS_CONNECTOR else "pymysql")
    monkeypatch.setenv(mysql_driver.ENV, "pymysql")
    assert mysql_driver.driver_name() == "pymysql"
    assert mysql_driver.storage_url("mysql://u@h/db") == "mysql+pymysql://u@h/db"
    monkeypatch.setenv(mysql_driver.ENV, "odbc")
    with pytest.raises(UsageError):
        mysql_driver.driver_name()


@pytest.mark.skipif(not HAS_CONNECTOR, reason="mysql-connector-python not installed "
                    "(pip install 'pmem-advisor[mysql]')")
def test_storage_url_names_the_connector(monkeypatch):
    monkeypatch.delenv(mysql_driver.ENV, raising=False)
    assert mysql_driver.storage_url("mysql://tuner:pw@db/studies") == \
        "mysql+mysqlconnector://tuner:pw@db/studies"
    for kept in ("mysql+pymysql://u@h/d", "postgresql://u@h/d", "sqlite:///x.db"):
        assert mysql_driver.storage_url(kept) == kept


@pytest.fixture(scope="module")
def mariadb():
    from pmem_advisor.instances import create_instance, pick_server

    try:
        binary = pick_server("mysql", "mariadb")
    except EnvironmentProblem as e:
        pytest.skip(f"no MariaDB server here: {e}")
    inst = create_instance(binary, tcp=True)
    try:
        inst.initialize()
        inst.start("")
        yield inst
    finally:
        inst.destroy()


DRIVERS = ["pymysql", pytest.param("mysql.connector", marks=pytest.mark.skipif(
    not HAS_CONNECTOR, reason="mysql-connector-python not installed"))]


@pytest.mark.server
@pytest.mark.parametrize("driver", DRIVERS)
def test_both_drivers_read_a_live_mariadb(mariadb, driver):
    ci = mariadb.conninfo
    dsns = [f"mysql://{ci.user}:{ci.password}@127.0.0.1:{ci.port}/{ci.dbname}",
            f"user={ci.user} socket={ci.socket_path} dbname={ci.dbname}"]
    for dsn in dsns:
        conn = mysql_driver.connect(driver=driver, **mysql_connect_kwargs(dsn))
        try:
            cur = conn.cursor()
            cur.execute("SHOW GLOBAL VARIABLES LIKE 'innodb_buffer_pool_size'")
            name, value = cur.fetchone()
        finally:
            conn.close()
        assert name == "innodb_buffer_pool_size" and int(value) > 0
    with pytest.raises(mysql_driver.connect_errors()):
        mysql_driver.connect(driver=driver, user=ci.user, password="wrong", host="127.0.0.1",
                             port=ci.port)


@pytest.mark.server
@pytest.mark.skipif(not HAS_CONNECTOR, reason="mysql-connector-python not installed")
def test_study_storage_url_through_the_connector(mariadb, monkeypatch):
    import sqlalchemy

    monkeypatch.delenv(mysql_driver.ENV, raising=False)
    ci = mariadb.conninfo
    url = mysql_driver.storage_url(f"mysql://{ci.user}:{ci.password}@127.0.0.1:{ci.port}/"
                                   f"{ci.dbname}")
    assert url.startswith("mysql+mysqlconnector://")
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            version = conn.execute(sqlalchemy.text("SELECT VERSION()")).scalar()
    finally:
        engine.dispose()
    assert "MariaDB" in version
