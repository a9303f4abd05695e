"""MySQL 8.0/8.4 catalogs from the servers' own recorded output (knobs/recorded.py, issue 49).

The expected facts are read from the stored extracts (knobs/data/recorded), not typed here:
the parser must give back every name and default of the variables table, the catalog must
regenerate to the shipped file, and `check` must pass the server's own defaults and refuse
what the listing lacks. Offline: no network, no server.
"""

from __future__ import annotations

import json
import re

import pytest

from pmem_advisor.knobs import recorded
from pmem_advisor.knobs.catalog import load_catalog

SERIES = ("8.0", "8.4")


def _table(series: str) -> dict[str, str]:
    """name -> default text, read straight from the extract's variables table lines."""
    doc = recorded.read_extract(recorded.RECORDED / f"mysql-{series}.txt")
    out = {}
    for line in doc["variables"]:
        if line.strip():
            name, _, value = line.partition(" ")
            out[name.replace("-", "_")] = value.strip()
    return out


@pytest.mark.parametrize("series", SERIES)
def test_parser_keeps_every_name_and_default_of_the_recorded_table(series):
    doc = recorded.build(series)
    knobs = {k["name"]: k for k in doc["knobs"]}
    table = _table(series)
    assert len(table) > 380  # the whole table, not a sample
    for name, text in table.items():
        assert name in knobs, name
        if text == "(No default value)" or re.fullmatch(r"#+", text) or "MYSQL_" in text:
            assert knobs[name]["default"] is None, name  # host- or build-dependent
        else:
            assert knobs[name]["default"] == text, name
    # the argument form types the value: '=#' a number, no argument a flag
    assert knobs["max_connections"]["type"] == "int"
    assert knobs["autocommit"]["type"] == "bool"
    assert knobs["log_bin"]["type"] == "string"
    heads = recorded.read_extract(recorded.RECORDED / f"mysql-{series}.txt")["options"]
    assert {h.split()[0].replace("-", "_") for h in heads} <= set(knobs)


def test_the_recorded_lists_differ_where_the_releases_do():
    """Removed by 8.4 (absent from its listing), present in 8.0's: read from the files."""
    old = {k["name"] for k in recorded.build("8.0")["knobs"]}
    new = {k["name"] for k in recorded.build("8.4")["knobs"]}
    assert {"default_authentication_plugin", "expire_logs_days", "master_info_repository",
            "transaction_write_set_extraction"} <= old - new
    assert {"restrict_fk_on_non_standard_key", "mysql_native_password"} <= new - old
    modes = recorded.build("8.0")["knobs"]
    sql_mode = next(k for k in modes if k["name"] == "sql_mode")
    assert "STRICT_TRANS_TABLES" in sql_mode["members"]
    assert not any(m.startswith("NOT_USED") or m == "NO_AUTO_CREATE_USER"
                   for m in sql_mode["members"])


def test_extract_of_a_help_result_reads_heads_not_the_text_that_cites_them():
    text = ("The following options may be given as the first argument:\n"
            "--print-defaults Print the program argument list and exit.\n\n"
            " --autocommit        Set default value for autocommit (0 or 1)\n"
            " --check-proxy-users If set to FALSE (the default), then\n"
            " --plugin-load-add=name \n"
            " Optional list. This option adds to the list specified by\n"
            " --plugin-load in an incremental way. Multiple\n"
            " -P, --port=#        Port number to use\n"
            " --sql-mode=name     Syntax: sql-mode=mode. This option is deprecated.\n"
            "\nVariables (--variable-name=value)\n"
            "autocommit TRUE\nport ####\nsql-mode STRICT_TRANS_TABLES\n\nTo see what\n")
    options, table, deprecated = recorded.extract_help(text)
    assert options == ["autocommit", "check-proxy-users", "plugin-load-add =name", "port =#",
                       "sql-mode =name"]
    assert table == ["autocommit TRUE", "port ####", "sql-mode STRICT_TRANS_TABLES"]
    assert deprecated == ["sql-mode"]
    with pytest.raises(recorded.RecordedError):
        recorded.extract_help("no table here")


def test_make_catalogs_check_round_trips(tmp_path):
    assert recorded.main(["--check"]) == 0  # the shipped files are what the extracts give
    assert recorded.main(["--out", str(tmp_path)]) == 0
    for series in SERIES:
        path = tmp_path / f"mysql-{series}.json"
        doc = json.loads(path.read_text())
        assert doc["read_from"] == "recorded" and doc["complete"]
        doc["knobs"] = doc["knobs"][1:]  # a shipped file that lost a name
        path.write_text(json.dumps(doc))
    assert recorded.main(["--check", "--out", str(tmp_path)]) == 1


def test_a_list_read_from_a_running_server_is_kept(tmp_path):
    path = tmp_path / "mysql-8.4.json"
    path.write_text(json.dumps({"read_from": "server", "knobs": []}))
    assert recorded.main(["--out", str(tmp_path)]) == 0
    assert json.loads(path.read_text())["read_from"] == "server"


def test_no_extracts_is_an_error_not_silence(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(recorded, "RECORDED", tmp_path)
    assert recorded.main(["--check"]) == 2
    assert "no recorded extracts" in capsys.readouterr().err


def test_a_broken_extract_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "mysql-8.0.txt"
    bad.write_text("# server_version: 8.0.41\n[options]\nport =#\n")  # no variables table
    monkeypatch.setattr(recorded, "RECORDED", tmp_path)
    assert recorded.main(["--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: mysql-8.0.txt") and "\n" not in err


def _check(run_cli, tmp_path, series: str, lines: list[str]) -> tuple[int, list[dict]]:
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[mysqld]\n" + "\n".join(lines) + "\n")
    code, out, err = run_cli("check", "--db", "mysql", "--version", series, "--config",
                             str(cnf), "--format", "json")
    assert code in (0, 1), err
    return code, json.loads(out)["findings"]


@pytest.mark.parametrize("series", SERIES)
def test_check_passes_the_servers_own_defaults(run_cli, tmp_path, series):
    """A my.cnf of every default the recorded variables table prints: no FAIL at all."""
    doc = recorded.build(series)
    lines = [f"{k['name']} = {k['default']}" for k in doc["knobs"]
             if k["default"] is not None and k["description"].startswith("recorded: mysqld")]
    assert len(lines) > 300
    code, findings = _check(run_cli, tmp_path, series, lines)
    fails = [f"{f['rule']} {f['subject']}: {f['message']}" for f in findings
             if f["severity"] == "fail"]
    assert fails == [] and code == 0


@pytest.mark.parametrize("series,line", [
    ("8.4", "default_authentication_plugin = mysql_native_password"),
    ("8.4", "master_info_repository = TABLE"),
    ("8.4", "no_such_option_at_all = 1"),
    ("8.0", "query_cache_size = 0"),
    ("8.0", "no_such_option_at_all = 1"),
    ("8.0", "sql_mode = STRICT_TRANS_TABLES,NO_AUTO_CREATE_USER"),
    ("8.4", "sql_mode = NO_AUTO_CREATE_USER"),
])
def test_check_fails_what_the_recorded_listing_refuses(run_cli, tmp_path, series, line):
    code, findings = _check(run_cli, tmp_path, series, [line])
    name = line.split()[0]
    mine = [f for f in findings if f["rule"] == "CK002" and f["subject"] == name]
    assert code == 1 and mine and mine[0]["severity"] == "fail", findings


def test_a_refusal_names_the_recorded_source(run_cli, tmp_path):
    _, findings = _check(run_cli, tmp_path, "8.4", ["no_such_option_at_all = 1"])
    msg = next(f["message"] for f in findings if f["subject"] == "no_such_option_at_all")
    src = recorded.build("8.4")["recorded"]["options"]
    assert "refuses to start" in msg and src["path"] in msg and src["commit"] in msg


def test_names_another_series_lists_under_an_unlisted_prefix_are_not_removed(run_cli, tmp_path):
    """8.0's list has InnoDB names (its sys_vars results), 8.4's leaves InnoDB out: such a name
    is not 'removed in 8.4', and a config of them gets no FAIL there."""
    names = [k["name"] for k in recorded.build("8.0")["knobs"]
             if k["name"].startswith(("innodb_", "ssl_", "mysqlx_"))]
    assert len(names) > 150
    c = load_catalog("mysql", "mysql", "8.4")
    assert not [n for n in names if n in c.absent]
    code, findings = _check(run_cli, tmp_path, "8.4", ["innodb_lock_wait_timeout = 50",
                                                      "ssl_ca = /etc/ca.pem",
                                                      "innodb_print_all_deadlocks = ON"])
    assert code == 0 and not [f for f in findings if f["severity"] == "fail"], findings


def test_a_name_the_listing_leaves_out_is_only_reported():
    c = load_catalog("mysql", "mysql", "8.4")
    assert c.complete and c.covers("no_such_option") and not c.covers("innodb_foo")
    assert not c.covers("ssl_foo") and c.covers("sslx_foo") is True


@pytest.mark.server
def test_the_extractor_reads_a_live_servers_help_as_the_server_lists_it():
    """MariaDB prints --verbose --help with the same my_getopt code as MySQL: squeezed as
    mysqld--help.inc squeezes it, the extractor must find exactly the options the server's
    own list (the catalog generator's reading of it) has, capitals included."""
    import subprocess

    from pmem_advisor.knobs import generate
    from tests.knobs.test_catalog_sources import _server

    binary = _server("mysql", "mariadb", "10.11")
    text = subprocess.run([str(binary.server), "--no-defaults", "--verbose", "--help"],
                          capture_output=True, text=True, timeout=120, cwd="/").stdout
    lines = [line for line in text.split("\n") if not re.match(r"^[\- ]+\s?$", line)
             and "Value (after reading options)" not in line]
    squeezed = "\n".join(re.sub(r"[ ]+", " ", line, count=1) for line in lines)
    options, table, _ = recorded.extract_help(squeezed)
    names = {o.split()[0] for o in options} | {t.split(" ")[0] for t in table if t.strip()}
    names = {n.replace("-", "_").lower() for n in names}
    assert names == generate.my_settable(binary.server)
    assert "wsrep_osu_method" in names  # a name with capitals (wsrep_OSU_method)


# -- MariaDB 11.4: the same reader over mariadbd's recorded --help -------------------------
def _check_maria(run_cli, tmp_path, lines: list[str]) -> tuple[int, list[dict]]:
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[mysqld]\n" + "\n".join(lines) + "\n")
    code, out, err = run_cli("check", "--db", "mariadb", "--version", "11.4", "--config",
                             str(cnf), "--format", "json")
    assert code in (0, 1), err
    return code, json.loads(out)["findings"]


def test_mariadb_parser_keeps_every_name_and_default_of_the_recorded_table():
    doc = recorded.build("11.4", flavour="mariadb")
    extract = recorded.read_extract(recorded.RECORDED / "mariadb-11.4.txt")
    table = {line.partition(" ")[0].replace("-", "_"): line.partition(" ")[2].strip()
             for line in extract["variables"] if line.strip()}
    knobs = {k["name"]: k for k in doc["knobs"]}
    assert len(table) > 400 and set(table) <= set(knobs)
    for name, value in table.items():
        if value != "(No default value)" and not re.search(r"MYSQL_[A-Z]+DIR", value):
            # mysqld--help.test prints 18446744073709551615 for a 32-bit 4294967295
            want = (recorded._HELP_32BIT_FIXES[value] if value in recorded._HELP_32BIT_FIXES
                    and int(value) > (knobs[name].get("max") or int(value)) else value)
            assert knobs[name]["default"] == want, name
    assert knobs["binlog_gtid_index"]["type"] == "bool"
    assert knobs["binlog_gtid_index_page_size"]["type"] == "int"
    assert knobs["ft_boolean_syntax"]["default"] == '+ -><()~*:""&|'  # a value with spaces
    assert knobs["max_seeks_for_key"]["default"] == "4294967295"  # 10.11's server says so too
    listed = {k["name"] for k in doc["knobs"] if k["description"].startswith("recorded: mariadbd")}
    assert set(table) <= listed


# -- MariaDB 11.4's types: its SYSTEM_VARIABLES rows as its sys_vars suite records them ------
_RESULT = """select VARIABLE_NAME,VARIABLE_SCOPE,VARIABLE_TYPE,VARIABLE_COMMENT,NUMERIC_MIN_VALUE
from information_schema.system_variables
order by variable_name;
VARIABLE_NAME\tHISTOGRAM_TYPE
VARIABLE_SCOPE\tSESSION
VARIABLE_TYPE\tENUM
VARIABLE_COMMENT\tSpecifies type of the histograms created by ANALYZE. Possible values are: x
NUMERIC_MIN_VALUE\tNULL
NUMERIC_MAX_VALUE\tNULL
NUMERIC_BLOCK_SIZE\tNULL
ENUM_VALUE_LIST\tSINGLE_PREC_HB,DOUBLE_PREC_HB,JSON_HB
READ_ONLY\tNO
COMMAND_LINE_ARGUMENT\tREQUIRED
VARIABLE_NAME\tOPTIMIZER_SCAN_SETUP_COST
VARIABLE_SCOPE\tSESSION
VARIABLE_TYPE\tDOUBLE
VARIABLE_COMMENT\tExtra cost added to TABLE and INDEX scans
NUMERIC_MIN_VALUE\t0
NUMERIC_MAX_VALUE\t100000000
NUMERIC_BLOCK_SIZE\tNULL
ENUM_VALUE_LIST\tNULL
READ_ONLY\tNO
COMMAND_LINE_ARGUMENT\tREQUIRED
select VARIABLE_NAME, GLOBAL_VALUE_ORIGIN, VARIABLE_SCOPE, VARIABLE_TYPE, READ_ONLY
from information_schema.system_variables where variable_name in ('log_tc_size');
VARIABLE_NAME\tLOG_TC_SIZE
GLOBAL_VALUE_ORIGIN\tAUTO
VARIABLE_SCOPE\tGLOBAL
VARIABLE_TYPE\tBIGINT UNSIGNED
READ_ONLY\tYES
COMMAND_LINE_ARGUMENT\tREQUIRED
"""


def test_the_sysvars_extractor_keeps_each_record_of_the_result():
    assert recorded.extract_sysvars(_RESULT) == [
        "HISTOGRAM_TYPE|SESSION|ENUM|NULL|NULL|NULL|SINGLE_PREC_HB,DOUBLE_PREC_HB,JSON_HB|NO|"
        "REQUIRED",
        "OPTIMIZER_SCAN_SETUP_COST|SESSION|DOUBLE|0|100000000|NULL|NULL|NO|REQUIRED",
        "LOG_TC_SIZE|GLOBAL|BIGINT UNSIGNED|NULL|NULL|NULL|NULL|YES|REQUIRED"]  # no NUMERIC_*
    with pytest.raises(recorded.RecordedError):
        recorded.extract_sysvars("no records here")


def test_extract_sysvars_rewrites_the_section_in_place(tmp_path, capsys):
    result = tmp_path / "mysql-test" / "suite" / "sys_vars" / "r" / "sysvars_x.result"
    result.parent.mkdir(parents=True)
    result.write_text(_RESULT)
    extract = tmp_path / "mariadb-11.4.txt"
    shipped = (recorded.RECORDED / "mariadb-11.4.txt").read_text()
    extract.write_text(shipped)
    assert recorded.main(["extract-sysvars", "--repo", "o/r", "--commit", "c0ffee",
                          "--result", str(result), "--into", str(extract)]) == 0
    doc = recorded.read_extract(extract)
    assert doc["sysvars"] == recorded.extract_sysvars(_RESULT)
    assert doc["sources"]["sysvars"]["path"] == "mysql-test/suite/sys_vars/r/sysvars_x.result"
    assert doc["sources"]["sysvars"]["commit"] == "c0ffee"
    before = recorded.read_extract(recorded.RECORDED / "mariadb-11.4.txt")
    for section in ("options", "variables", "unlisted", "deprecated", "sql_mode"):
        assert doc[section] == before[section], section  # the other sections as they were
    knobs = {k["name"]: k for k in recorded.build("11.4", extract, "mariadb")["knobs"]}
    assert knobs["histogram_type"]["values"] == ["SINGLE_PREC_HB", "DOUBLE_PREC_HB", "JSON_HB"]
    assert knobs["histogram_size"]["type"] == "int" and "min" not in knobs["histogram_size"]
    # printed without --into: the section itself
    assert recorded.main(["extract-sysvars", "--repo", "o/r", "--commit", "c0ffee",
                          "--result", str(result)]) == 0
    assert capsys.readouterr().out.startswith("[sysvars]\n# repo: o/r\n")


def test_the_shipped_11_4_catalog_takes_each_type_from_the_sysvars_rows():
    doc = json.loads((recorded.OUT_DIR / "mariadb-11.4.json").read_text())
    knobs = {k["name"]: k for k in doc["knobs"]}
    cost = knobs["optimizer_scan_setup_cost"]
    assert (cost["type"], cost["min"], cost["max"]) == ("real", 0, 100000000)
    assert "sysvars_server_notembedded.result" in cost["description"]
    assert doc["recorded"]["sysvars"]["path"] == (
        "mysql-test/suite/sys_vars/r/sysvars_server_notembedded.result")
    assert doc["recorded"]["sysvars"]["commit"] == doc["recorded"]["options"]["commit"]
    assert knobs["histogram_size"]["max"] == 255
    assert knobs["histogram_type"]["type"] == "enum"
    assert knobs["max_user_connections"]["min"] == -1 and "unsigned" not in \
        knobs["max_user_connections"]
    assert knobs["binlog_cache_size"]["block_size"] == 4096
    # the listing's filter drops connect-timeout (its @plugins has 'connect'); the row has it
    assert knobs["connect_timeout"]["type"] == "int"
    assert "have_ssl" not in knobs  # a status variable no config file sets


def test_check_detects_a_hand_edit_of_the_11_4_catalog(tmp_path):
    assert recorded.main(["--out", str(tmp_path)]) == 0
    path = tmp_path / "mariadb-11.4.json"
    assert recorded.main(["--check", "--out", str(tmp_path)]) == 0
    doc = json.loads(path.read_text())
    for k in doc["knobs"]:
        if k["name"] == "optimizer_scan_setup_cost":  # back to the guess from '10'
            k["type"] = "int"
            del k["min"], k["max"]
    path.write_text(json.dumps(doc))
    assert recorded.main(["--check", "--out", str(tmp_path)]) == 1


def test_mariadb_check_passes_the_servers_own_defaults(run_cli, tmp_path):
    """A my.cnf of every default 11.4's recorded table prints: no FAIL (the table was made
    with --log-bin=foo and lower-case-table-names=1, both settings a file may hold)."""
    doc = recorded.build("11.4", flavour="mariadb")
    skip = {"help", "verbose"}  # mariadbd's own command-line switches, no my.cnf settings
    lines = [f"{k['name']} = {k['default']}" for k in doc["knobs"]
             if k["default"] not in (None, "") and k["name"] not in skip]
    assert len(lines) > 300
    _, findings = _check_maria(run_cli, tmp_path, lines)
    # the catalog's verdicts only: CK001 rightly fails the table's sync_binlog = 0 with the
    # binary log on (a safety finding about the defaults, not a name or value refused)
    fails = [f"{f['subject']}: {f['message']}" for f in findings
             if f["severity"] == "fail" and f["rule"] == "CK002"]
    assert fails == []
    # the optimizer costs print decimal defaults under '=#': reals, not integers
    assert {"optimizer_disk_read_cost", "optimizer_where_cost", "long_query_time"} <= {
        k["name"] for k in doc["knobs"] if k["type"] == "real"}


@pytest.mark.parametrize("line", [
    "date_format = %Y-%m-%d",     # 10.11 takes it from a file; 11.4's listing has none
    "max_tmp_tables = 32",
    "old_alter_table = ON",
    "no_such_option_at_all = 1",
    "innodb_defragment = 1",      # the curated removal (11.1)
])
def test_mariadb_check_fails_what_the_recorded_listing_refuses(run_cli, tmp_path, line):
    code, findings = _check_maria(run_cli, tmp_path, [line])
    name = line.split()[0]
    mine = [f for f in findings if f["rule"] == "CK002" and f["subject"] == name]
    assert code == 1 and mine and mine[0]["severity"] == "fail", findings


def test_mariadb_names_the_listing_leaves_out_are_not_failed(run_cli, tmp_path):
    """InnoDB/Aria names (the test's @plugins), 11.4's own additions, and a hidden option the
    10.11 server ignores: no FAIL on 11.4."""
    code, findings = _check_maria(run_cli, tmp_path, [
        "binlog_gtid_index = ON", "max_binlog_total_size = 10G", "innodb_lock_wait_timeout = 50",
        "aria_pagecache_buffer_size = 64M", "connect_timeout = 10",
        "innodb_file_format = Barracuda"])
    assert not [f for f in findings if f["severity"] == "fail"], findings
    _, findings = _check_maria(run_cli, tmp_path, ["no_such_option_at_all = 1"])
    msg = next(f["message"] for f in findings if f["subject"] == "no_such_option_at_all")
    assert "MariaDB 11.4" in msg and "917c99f13d22149832e78c1cf43e91df09e49ad4" in msg


def test_the_transcribed_rows_agree_with_the_10_11_servers_own():
    """The [sysvars] rows were written out by hand from the stored result: against the 10.11
    server's own SYSTEM_VARIABLES (generated/mariadb-10.11.json) every shared name has the
    same type but the one 11.x turned from a SET into a number, and nearly all the same range
    and words (469 of 475 when written; the rest differ as the releases do)."""
    server = {k["name"]: k for k in json.loads(
        (recorded.OUT_DIR / "mariadb-10.11.json").read_text())["knobs"]}
    rows = recorded._sysvars(recorded.read_extract(
        recorded.RECORDED / "mariadb-11.4.txt")["sysvars"])
    keys = ("type", "min", "max", "values", "members", "unsigned", "block_size")
    shared = sorted(set(rows) & set(server) - {"log_tc_size"})  # its query has no NUMERIC_*
    typed = {n: recorded._sysvar_fields(rows[n]) for n in shared}
    assert [n for n in shared if typed[n]["type"] != server[n]["type"]] == [
        "optimizer_adjust_secondary_key_costs"]  # 11.x: 'Unused, will be removed', 0 .. 2
    same = [n for n in shared if all(typed[n].get(k) == server[n].get(k) for k in keys)]
    assert len(shared) > 450 and len(same) >= len(shared) - 8, sorted(set(shared) - set(same))
