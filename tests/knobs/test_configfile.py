"""Config files are text in an encoding: a UTF-8 byte-order mark and CRLF line ends (what
editors on Windows write) are read as encoding, never as part of a name or a value."""

from __future__ import annotations

from pmem_advisor.engines.mysql.parse import parse_mycnf
from pmem_advisor.engines.postgres.parse import parse_postgresql_conf
from pmem_advisor.knobs.configfile import config_text

BOM = b"\xef\xbb\xbf"


def test_bom_and_crlf_are_encoding():
    assert config_text(BOM + b"a = 1\r\nb = 'x'\r\n") == "a = 1\nb = 'x'\n"
    assert config_text(b"a = 1\n") == "a = 1\n"


def test_postgresql_conf_with_bom_and_crlf(tmp_path):
    path = tmp_path / "postgresql.conf"
    path.write_bytes(BOM + b"shared_buffers = 1GB\r\nlisten_addresses = '*'\r\n")
    eff = parse_postgresql_conf(str(path), auto_conf=False).effective()
    assert set(eff) == {"shared_buffers", "listen_addresses"}
    assert eff["shared_buffers"].value == "1GB" and eff["listen_addresses"].value == "*"
    assert eff["listen_addresses"].where.endswith(":2")


def test_my_cnf_with_bom_and_crlf(tmp_path):
    path = tmp_path / "my.cnf"
    path.write_bytes(BOM + b"[mysqld]\r\ninnodb_buffer_pool_size = 1G\r\nsort_buffer_size=2M\r\n")
    eff = parse_mycnf(str(path), flavour="mariadb", version="10.11").effective()
    assert set(eff) == {"innodb_buffer_pool_size", "sort_buffer_size"}
    assert eff["sort_buffer_size"].value == "2M"


def test_check_reads_both_as_text(tmp_path, run_cli):
    pg = tmp_path / "postgresql.conf"
    pg.write_bytes(BOM + b"shared_buffers = 1GB\r\n")
    code, out, err = run_cli("check", "--db", "postgres", "--version", "15", "--config", str(pg))
    assert code == 0 and "\ufeff" not in out + err and "not a PostgreSQL" not in out, out + err
    my = tmp_path / "my.cnf"
    my.write_bytes(BOM + b"[mysqld]\r\ninnodb_buffer_pool_size = 1G\r\n")
    code, out, err = run_cli("check", "--db", "mariadb", "--version", "10.11", "--config",
                             str(my))
    assert code == 0 and "no [mysqld] group" not in err, out + err
