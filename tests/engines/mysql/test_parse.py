import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmem_advisor.engines.mysql.parse import parse_mycnf, parse_mycnf_text, quote_value
from pmem_advisor.errors import InputError


def test_groups_includes_and_spellings(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "a.cnf").write_text("[mysqld]\ninnodb_io_capacity = 400\n")
    (tmp_path / "conf.d" / "b.txt").write_text("[mysqld]\ninnodb_io_capacity = 1\n")
    (tmp_path / "extra.cnf").write_text("[server]\nmax-connections = 300 # comment\n")
    main = tmp_path / "my.cnf"
    main.write_text(
        "[client]\nport = 3307\n"
        "; comment\n"
        "[mysqld]\n"
        "innodb-buffer-pool-size = 1G\n"
        "skip-innodb-doublewrite\n"
        "loose-innodb_log_file_mmap = ON\n"
        "innodb_log_group_home_dir = \"/mnt/pmem 0/#log\"\n"
        "skip-name-resolve\n"
        "!include extra.cnf\n"
        "!includedir conf.d\n"
        "[mariadb-10.11]\ninnodb_flush_method = O_DSYNC\n"
        "[mysqld-8.0]\ninnodb_flush_method = O_DIRECT\n"
    )
    c = parse_mycnf(str(main), flavour="mariadb", version="10.11.19")
    eff = c.effective()
    assert eff["innodb_buffer_pool_size"].value == "1G"
    assert eff["innodb_doublewrite"].value == "OFF" and eff["innodb_doublewrite"].line == 6
    assert eff["innodb_log_file_mmap"].loose
    assert eff["innodb_log_group_home_dir"].value == "/mnt/pmem 0/#log"
    assert eff["skip_name_resolve"].value is None
    assert eff["max_connections"].value == "300" and eff["max_connections"].group == "server"
    assert eff["innodb_io_capacity"].value == "400"
    assert eff["innodb_flush_method"].value == "O_DSYNC"
    assert {e.name for e in c.ignored} == {"port", "innodb_flush_method"}
    mysql = parse_mycnf(str(main), flavour="mysql", version="8.0.36").effective()
    assert mysql["innodb_flush_method"].value == "O_DIRECT"


def test_errors_name_file_and_line(tmp_path):
    f = tmp_path / "my.cnf"
    f.write_text("innodb_io_capacity = 1\n")
    with pytest.raises(InputError, match=r"my.cnf:1: option .* before any \[group\]"):
        parse_mycnf(str(f))
    f.write_text("[mysqld\n")
    with pytest.raises(InputError, match=r"my.cnf:1: wrong group"):
        parse_mycnf(str(f))
    f.write_text("[mysqld]\n!include /nonexistent/x.cnf\n")
    with pytest.raises(InputError, match=r"my.cnf:2: !include"):
        parse_mycnf(str(f))
    f.write_text("[mysqld]\n!include my.cnf\n")
    with pytest.raises(InputError, match="nested"):
        parse_mycnf(str(f))


@given(st.binary(max_size=300))
@settings(max_examples=150, deadline=None,  # a loaded 2-core machine: no timing
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_bytes_never_crash(tmp_path, data):
    f = tmp_path / "fuzz.cnf"
    f.write_bytes(data)
    try:
        parse_mycnf(str(f))
    except InputError as e:
        assert "\n" not in str(e)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), max_size=40))
def test_quote_round_trip(text):
    parsed = parse_mycnf_text(f"[mysqld]\nx = {quote_value(text)}  # why\n")
    assert parsed.effective()["x"].value == text


def test_fifo_and_devices_are_never_read(tmp_path):
    import os

    d = tmp_path / "conf.d"
    d.mkdir()
    os.mkfifo(d / "zz.cnf")
    main = tmp_path / "my.cnf"
    main.write_text(f"[mysqld]\n!includedir {d}\n")
    assert str(d / "zz.cnf") not in parse_mycnf(str(main)).files  # skipped, not hung
    main.write_text(f"[mysqld]\n!include {d / 'zz.cnf'}\n")
    with pytest.raises(InputError, match="not a regular file"):
        parse_mycnf(str(main))
    with pytest.raises(InputError, match="not a regular file"):
        parse_mycnf("/dev/zero")


MIXED = ("[mysqld-8.0]\ninnodb_buffer_pool_size = 1G\n"
         "[mariadb]\naria_pagecache_buffer_size = 64M\n"
         "[mysqld]\nmax_connections = 100\n")


def test_groups_of_two_servers_are_named_when_no_server_is():
    """issue 49: a config holding [mysqld-8.0] and [mariadb] belongs to two servers; without a
    named one, parse says which groups it read as if every server did."""
    notes = parse_mycnf_text(MIXED, "my.cnf").notes
    assert any("[mysqld-8.0] (my.cnf:2) is read by a MySQL or MariaDB 8.0 server only" in n
               for n in notes), notes
    assert any("[mariadb] (my.cnf:4) is read by MariaDB only" in n for n in notes), notes
    assert not any("[mysqld]" in n for n in notes)


def test_the_named_server_reads_its_own_groups_without_a_note():
    maria = parse_mycnf_text(MIXED, "my.cnf", flavour="mariadb", version="10.11")
    assert {e.name for e in maria.entries} == {"aria_pagecache_buffer_size", "max_connections"}
    assert maria.notes == []
    mysql = parse_mycnf_text(MIXED, "my.cnf", flavour="mysql", version="8.0")
    assert {e.name for e in mysql.entries} == {"innodb_buffer_pool_size", "max_connections"}
    assert mysql.notes == []
