"""`check` over many files in one run (issue 55): engines from the project file, a first-line
header or the flags; SARIF that validates against OASIS's own schema and points at the lines
that set each value; GitHub annotations; suppressions with a reason; a baseline. A durability
FAIL is silenced by neither an ignore nor a baseline without --allow-unsafe."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

SARIF_SCHEMA = Path(__file__).parent / "sarif" / "sarif-schema-2.1.0.json"

PROJECT = """\
[[files]]
glob = "conf/pg/*.conf"
engine = "postgres"
version = "16"
memory = "8G"

[[files]]
glob = "conf/my/*.cnf"
engine = "mariadb"
version = "10.11"
memory = "8G"
"""


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository of mixed fragments: PostgreSQL and MariaDB by the project file, MySQL 8.4
    by its own first line."""
    (tmp_path / "conf" / "pg").mkdir(parents=True)
    (tmp_path / "conf" / "my").mkdir()
    (tmp_path / ".pmem-advisor.toml").write_text(PROJECT)
    (tmp_path / "conf/pg/main.conf").write_text(
        "shared_buffers = 1GB\nfsync = off\nwork_mem = 4MB\n")
    (tmp_path / "conf/my/app.cnf").write_text(
        "[mysqld]\ninnodb_buffer_pool_size = 2G\nmax_connections = 100\n"
        "innodb_flush_log_at_trx_commit = 2\n")
    (tmp_path / "conf/my84.cnf").write_text(
        "# pmem-advisor: mysql 8.4\n[mysqld]\ninnodb_doublewrite = 0\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fails(doc: dict) -> dict[tuple[str, str], int]:
    return {(Path(f["file"]).name, f["subject"]): f["line"] for f in doc["findings"]
            if f["severity"] == "fail" and f.get("file")}


def test_one_run_checks_mixed_engines_from_the_project_file(run_cli, repo):
    code, out, err = run_cli("check", "conf/", "--no-measure", "--format", "json")
    assert code == 1, err
    doc = json.loads(out)
    fails = _fails(doc)
    # each file judged as its own server: PostgreSQL's fsync, MariaDB's flush, MySQL 8.4's
    # doublewrite index 0 (OFF), each on the line that set it
    assert fails[("main.conf", "fsync")] == 2
    assert fails[("app.cnf", "innodb_flush_log_at_trx_commit")] == 4
    assert fails[("my84.cnf", "innodb_doublewrite")] == 3
    assert "project file" in err


def test_sarif_validates_against_the_oasis_schema_and_points_at_the_lines(run_cli, repo):
    code, out, err = run_cli("check", "conf/", "--no-measure", "--format", "sarif")
    assert code == 1, err
    doc = json.loads(out)
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(doc)
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    rules = {r["id"] for r in run["tool"]["driver"]["rules"]}
    located = {}
    for r in run["results"]:
        assert r["ruleId"] in rules
        for loc in r.get("locations", []):
            phys = loc["physicalLocation"]
            if "region" not in phys:  # a finding about the file as a whole
                continue
            located[(Path(phys["artifactLocation"]["uri"]).name, r["ruleId"],
                     phys["region"]["startLine"])] = r["level"]
    assert located[("main.conf", "CK001", 2)] == "error"
    assert located[("app.cnf", "CK001", 4)] == "error"
    assert located[("my84.cnf", "CK001", 3)] == "error"


def test_github_annotations_name_file_and_line(run_cli, repo):
    code, out, _ = run_cli("check", "conf/pg/main.conf", "--no-measure", "--format", "github")
    assert code == 1
    lines = [ln for ln in out.splitlines() if ln.startswith("::error ")]
    assert any("file=conf/pg/main.conf,line=2," in ln and "CK001" in ln for ln in lines), out


MEMORY_CNF = "[mysqld]\ninnodb_buffer_pool_size = 20G\n"
FLAGS = ("--db", "mariadb", "--version", "10.11", "--memory", "8G", "--no-project",
         "--no-measure")


def test_an_ignore_with_a_reason_silences_that_finding_and_is_listed(run_cli, tmp_path):
    path = tmp_path / "big.cnf"
    path.write_text(MEMORY_CNF)
    code, out, _ = run_cli("check", *FLAGS, str(path), "--format", "json")
    assert code == 1 and any(f["rule"] == "CK004" for f in json.loads(out)["findings"])
    path.write_text("[mysqld]\n# pmem-advisor: ignore CK004 the host gets 32G at deploy\n"
                    "innodb_buffer_pool_size = 20G\n")
    code, out, err = run_cli("check", *FLAGS, str(path), "--format", "json")
    doc = json.loads(out)
    assert code == 0, err
    assert not any(f["rule"] == "CK004" for f in doc["findings"])
    assert any(s["rule"] == "CK004" and s["line"] == 3 and "32G" in s["suppressed_by"]["reason"]
               for s in doc["suppressed"]), doc


def test_an_ignore_without_a_reason_is_a_warning(run_cli, tmp_path):
    path = tmp_path / "big.cnf"
    path.write_text("[mysqld]\ninnodb_buffer_pool_size = 20G  # pmem-advisor: ignore CK004\n")
    code, out, _ = run_cli("check", *FLAGS, str(path), "--format", "json")
    doc = json.loads(out)
    assert any(f["severity"] == "warn" and "reason" in f["message"] for f in doc["findings"]), doc


def test_an_ignore_does_not_pass_a_durability_risk_without_allow_unsafe(run_cli, tmp_path):
    path = tmp_path / "loose.cnf"
    path.write_text("[mysqld]\n# pmem-advisor: ignore CK001 replayed from the queue\n"
                    "innodb_flush_log_at_trx_commit = 2\n")
    code, out, _ = run_cli("check", *FLAGS, str(path), "--format", "json")
    doc = json.loads(out)
    assert code == 1
    assert any(f["rule"] == "CK001" and f["severity"] == "fail" for f in doc["findings"])
    code, _, _ = run_cli("check", *FLAGS, "--allow-unsafe", str(path), "--format", "json")
    assert code == 0


def test_a_baseline_fails_only_new_findings(run_cli, tmp_path):
    old = tmp_path / "old.cnf"
    old.write_text(MEMORY_CNF)
    base = tmp_path / "baseline.json"
    code, _, err = run_cli("check", *FLAGS, str(old), "--write-baseline", str(base))
    assert code == 0, err
    assert json.loads(base.read_text())["findings"]
    code, _, err = run_cli("check", *FLAGS, str(old), "--baseline", str(base))
    assert code == 0, err
    new = tmp_path / "new.cnf"
    new.write_text(MEMORY_CNF)
    code, out, _ = run_cli("check", *FLAGS, str(old), str(new), "--baseline", str(base),
                           "--format", "json")
    assert code == 1
    failing = {Path(f["file"]).name for f in json.loads(out)["findings"]
               if f["severity"] == "fail"}
    assert failing == {"new.cnf"}


def test_one_bad_file_among_many_is_reported_and_the_others_checked(run_cli, tmp_path):
    good = tmp_path / "good.cnf"
    good.write_text(MEMORY_CNF)
    binary = tmp_path / "blob.cnf"
    binary.write_bytes(b"\0\1\2[mysqld]\n")
    code, out, err = run_cli("check", *FLAGS, str(good), str(binary), "--format", "json")
    doc = json.loads(out)
    assert code == 2, err  # an unreadable input outranks findings
    assert any("blob.cnf" in e["file"] for e in doc["errors"]), doc
    assert any(f["rule"] == "CK004" for f in doc["findings"])
    assert "Traceback" not in err


@pytest.mark.parametrize("args,what", [
    (("nothing-matches-*.cnf",), "nothing-matches"),
])
def test_a_glob_that_matches_nothing_is_one_line_exit_2(run_cli, tmp_path, monkeypatch,
                                                        args, what):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("check", *FLAGS, *args)
    assert code == 2 and what in err and "Traceback" not in err


def test_a_project_file_with_an_unknown_key_names_the_file(run_cli, tmp_path, monkeypatch):
    (tmp_path / ".pmem-advisor.toml").write_text('[[files]]\nglob = "*.cnf"\nengin = "mysql"\n')
    (tmp_path / "a.cnf").write_text(MEMORY_CNF)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("check", "a.cnf", "--no-measure")
    assert code == 2 and ".pmem-advisor.toml" in err and "engin" in err, err


# (engine flags, the includer's name and text, the fragment's path and text, the line of
# the fragment's durability FAIL): each server's include directives, relative and absolute.
# The includer raises max_connections; the fragment sizes the per-connection buffers: alone it
# would be judged on the default connections and fit, through its includer it does not.
MARIADB = ("--db", "mariadb", "--version", "10.11")
MYSQL = ("--db", "mysql", "--version", "8.4")
PG = ("--db", "postgres", "--version", "16")
MY_FRAG = "[mysqld]\nsort_buffer_size = 64M\ninnodb_flush_log_at_trx_commit = 0\n"
PG_FRAG = "work_mem = 256MB\nfsync = off\n"
INCLUDES = {
    "mariadb-includedir-absolute": (MARIADB, "my.cnf", "[mysqld]\nmax_connections = 1000\n"
                                    "!includedir {dir}/conf.d\n", "conf.d/buffers.cnf",
                                    MY_FRAG, 3),
    "mysql-includedir": (MYSQL, "my.cnf", "[mysqld]\nmax_connections = 1000\n!includedir "
                         "conf.d\n", "conf.d/buffers.cnf", MY_FRAG, 3),
    "mysql-include": (MYSQL, "my.cnf", "[mysqld]\nmax_connections = 1000\n!include "
                      "conf.d/buffers.cnf\n", "conf.d/buffers.cnf", MY_FRAG, 3),
    "postgres-include_dir": (PG, "postgresql.conf", "max_connections = 1000\n"
                             "include_dir = 'conf.d'\n", "conf.d/frag.conf", PG_FRAG, 2),
    "postgres-include": (PG, "postgresql.conf", "max_connections = 1000\n"
                         "include 'conf.d/frag.conf'\n", "conf.d/frag.conf", PG_FRAG, 2),
    "postgres-include_if_exists": (PG, "postgresql.conf", "max_connections = 1000\n"
                                   "include_if_exists = 'conf.d/frag.conf'\n",
                                   "conf.d/frag.conf", PG_FRAG, 2),
}


@pytest.mark.parametrize("case", INCLUDES.values(), ids=INCLUDES.keys())
@pytest.mark.parametrize("how", ["directory", "paths"])
def test_an_included_file_is_checked_through_its_includer_not_alone(run_cli, tmp_path,
                                                                    monkeypatch, case, how):
    flags, includer, text, frag, frag_text, line = case
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conf.d").mkdir()
    (tmp_path / includer).write_text(text.format(dir=tmp_path))
    (tmp_path / frag).write_text(frag_text)
    args = ["."] if how == "directory" else [frag, includer]  # the fragment met first
    shown = f"./{frag}" if how == "directory" else frag  # the path as given, joined
    run = ("check", *flags, "--memory", "16G", "--cpus", "4", "--no-project", "--no-measure",
           *args)
    code, out, err = run_cli(*run, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and not doc["errors"], err
    ck001 = [f for f in doc["findings"] if f["rule"] == "CK001"]
    # the path as the user gave it, joined with the walked or included part; an include
    # the includer names by an absolute path, as it names it
    at = str(tmp_path / frag) if "{dir}" in text else shown
    assert [(f["file"], f["line"]) for f in ck001] == [(at, line)], doc["findings"]
    assert doc["files"] == [f"./{includer}" if how == "directory" else includer], doc["files"]
    assert f"{shown}: checked as part of " in err, err
    memory = [f for f in doc["findings"] if f["rule"] == "CK004"]
    assert memory and all("1000" in f["message"] for f in memory), doc["findings"]
    code, out, err = run_cli(*run)  # text: the fragment's own file and line
    assert code == 1, err
    fails = [ln for ln in out.splitlines() if "[CK001]" in ln]
    assert len(fails) == 1 and f"({at}:{line})" in fails[0], out
    code, out, err = run_cli(*run, "--format", "sarif")
    assert code == 1, err
    located = [(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"])
               for r in _validated_sarif(out)["results"] if r["ruleId"] == "CK001"]
    assert located == [(frag, line)], located


@pytest.mark.parametrize("flags,includer,text,fragment,frag_text", [
    # Debian's /etc/mysql/conf.d/mysql.cnf: client groups only, no setting a server reads
    (MYSQL, "my.cnf", "[mysqld]\nmax_connections = 1000\n!includedir conf.d\n",
     "conf.d/mysql.cnf", "[mysql]\nno-auto-rehash\n"),
    # a placeholder an include_dir keeps: comments only, no engine to tell by
    ((), "postgresql.conf", "max_connections = 1000\ninclude_dir 'conf.d'\n",
     "conf.d/00-placeholder.conf", "# settings for this host go here\n"),
], ids=["mysql-client-groups", "postgres-placeholder"])
def test_a_fragment_that_cannot_stand_alone_is_no_error_through_its_includer(
        run_cli, tmp_path, monkeypatch, flags, includer, text, fragment, frag_text):
    # alone each is refused (no [mysqld] setting; no engine): read by its includer it is part
    # of a good config, and the run must not fail on it
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conf.d").mkdir()
    (tmp_path / includer).write_text(text)
    (tmp_path / fragment).write_text(frag_text)
    code, out, err = run_cli("check", *flags, "--memory", "16G", "--no-project", "--no-measure",
                             fragment, includer, "--format", "json")
    doc = json.loads(out)
    assert code != 2 and doc["errors"] == [], (doc["errors"], err)
    assert "pmem-advisor: error:" not in err, err
    assert f"{fragment}: checked as part of {includer}" in err, err
    code, _, err = run_cli("check", *flags, "--memory", "16G", "--no-project", "--no-measure",
                           fragment)
    assert code == 2 and fragment in err, err  # named alone, it is the error it was


@pytest.mark.parametrize("given", ["conf", "./conf", "conf/*.cnf", "{tmp}/conf"])
def test_findings_errors_and_text_name_a_file_by_the_path_as_given(run_cli, tmp_path,
                                                                   monkeypatch, given):
    # one rule, like ripgrep's: the path as the user gave it joined with the walked or the
    # included part, in JSON, JUnit, text and the errors alike (SARIF: relative to its base)
    monkeypatch.chdir(tmp_path)
    Path("conf/conf.d").mkdir(parents=True)
    Path("conf/my.cnf").write_text("[mysqld]\nmax_connections = 100\n!includedir conf.d\n")
    Path("conf/conf.d/durability.cnf").write_text("[mysqld]\ninnodb_flush_log_at_trx_commit = 0\n")
    Path("conf/bad.cnf").write_text("[mysqld]\n[mysqld\n")
    Path("conf/missing-include.cnf").write_text("[mysqld]\n!include nowhere.cnf\n")
    arg = given.format(tmp=tmp_path)
    base = arg.removesuffix("/*.cnf")
    frag, bad, inc = (f"{base}/conf.d/durability.cnf", f"{base}/bad.cnf",
                      f"{base}/missing-include.cnf")
    run = ("check", *MARIADB, "--memory", "8G", "--no-project", "--no-measure", arg)
    code, out, err = run_cli(*run, "--format", "json")
    doc = json.loads(out)
    assert code == 2, err
    assert [(f["file"], f["line"]) for f in doc["findings"] if f["rule"] == "CK001"] == [
        (frag, 2)], doc["findings"]
    assert doc["files"] == [f"{base}/my.cnf"], doc["files"]
    assert {e["file"]: e["error"].split(": ")[0] for e in doc["errors"]} == {
        bad: f"{bad}:2", inc: f"{inc}:2"}, doc["errors"]
    errors = sorted(ln for ln in err.splitlines() if ln.startswith("pmem-advisor: error:"))
    assert [ln.split()[2] for ln in errors] == [f"{bad}:2:", f"{inc}:2:"], err
    code, out, _ = run_cli(*run)
    assert f"({frag}:2)" in out, out
    code, out, _ = run_cli(*run, "--format", "junit")
    import xml.etree.ElementTree as ET

    named = {c.get("file") for c in ET.fromstring(out).iter("testcase")}
    assert {frag, bad, inc} <= named, named
    code, out, _ = run_cli(*run, "--format", "sarif")
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(out)["runs"][0]["results"] for loc in r.get("locations", [])}
    assert "conf/conf.d/durability.cnf" in uris, uris


# ---------------------------------------------------------------- bad input among many files
def _prose(d: Path) -> Path:  # a *.conf no source names the engine of, not postgresql.conf
    p = d / "notes.conf"
    p.write_text("These settings were tuned by hand last spring.\nAsk the DBA first.\n")
    return p


def _empty(d: Path) -> Path:  # says no engine at all: judged as PostgreSQL it would be defaults
    p = d / "blank.conf"
    p.write_text("# nothing set here yet\n")
    return p


def _fifo(d: Path) -> Path:  # unreadable for root too: opening it must not block the run
    p = d / "pipe.cnf"
    os.mkfifo(p)
    return p


def _dangling(d: Path) -> Path:  # unreadable for root too
    p = d / "gone.cnf"
    p.symlink_to(d / "absent-target.cnf")
    return p


def _binary(d: Path) -> Path:
    p = d / "blob.cnf"
    p.write_bytes(b"\0\1\2[mysqld]\n")
    return p


def _nginx(d: Path) -> Path:  # a web server's config beside the database's
    p = d / "nginx.conf"
    p.write_text("user www-data;\nworker_processes auto;\ninclude /etc/nginx/modules/*.conf;\n"
                 "events {\n    worker_connections 768;\n}\n")
    return p


def _logrotate(d: Path) -> Path:
    p = d / "logrotate.conf"
    p.write_text("weekly\nrotate 4\ncreate\ninclude /etc/logrotate.d\n")
    return p


def _sysctl(d: Path) -> Path:  # `key = value` lines PostgreSQL's lexer reads, of no parameter
    p = d / "99-sysctl.conf"
    p.write_text("vm.swappiness = 1\nvm.overcommit_memory = 2\n")
    return p


def _systemd(d: Path) -> Path:  # a mysql.service.d drop-in: [groups], none MySQL's
    p = d / "override.conf"
    p.write_text("[Service]\nLimitNOFILE=65535\nTimeoutStartSec=600\n")
    return p


# files that are read but whose engine nothing tells: an error when named, skipped by a walk
UNPLACED = [(m, "cannot tell its engine")
            for m in (_prose, _empty, _nginx, _logrotate, _sysctl, _systemd)]
BAD_FILES = [
    *UNPLACED,
    (_fifo, "not a regular file (a FIFO)"),
    (_dangling, "a symbolic link to a file that does not exist"),
    (_binary, "binary data"),
]
# the engine and version by the file's first line: the bad file's engine is left unsaid
GOOD = "# pmem-advisor: mariadb 10.11\n" + MEMORY_CNF
_ids = lambda x: getattr(x, "__name__", "")  # noqa: E731


@pytest.mark.parametrize("how,make,needle", [
    *(("paths", m, n) for m, n in BAD_FILES),
    *(("directory", m, n) for m, n in BAD_FILES if (m, n) not in UNPLACED),
], ids=lambda x: getattr(x, "__name__", x if isinstance(x, str) and len(x) < 12 else ""))
def test_a_bad_file_among_many_is_one_line_exit_2_and_the_others_are_checked(
        run_cli, tmp_path, make, needle, how):
    good = tmp_path / "good.cnf"
    good.write_text(GOOD)
    bad = make(tmp_path)
    args = [str(good), str(bad)] if how == "paths" else [str(tmp_path)]
    code, out, err = run_cli("check", "--memory", "8G", "--no-project", "--no-measure", *args,
                             "--format", "json")
    doc = json.loads(out)
    assert code == 2, err  # an input that could not be checked outranks findings (1)
    assert [Path(e["file"]).name for e in doc["errors"]] == [bad.name], doc["errors"]
    errors = [ln for ln in err.splitlines() if ln.startswith("pmem-advisor: error:")]
    assert len(errors) == 1 and str(bad) in errors[0] and needle in errors[0], err
    assert "Traceback" not in err
    # the good file was checked all the same: its finding, at its line
    assert any(f["rule"] == "CK004" and Path(f["file"]).name == "good.cnf" and f["line"] == 3
               for f in doc["findings"]), doc["findings"]


@pytest.mark.parametrize("make,needle", BAD_FILES, ids=_ids)
def test_a_bad_file_alone_is_one_line_exit_2(run_cli, tmp_path, make, needle):
    bad = make(tmp_path)
    code, out, err = run_cli("check", "--memory", "8G", "--no-project", "--no-measure",
                             str(bad))
    assert code == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and str(bad.name) in err and needle in err, err


@pytest.mark.parametrize("how", ["directory", "glob"])
def test_a_walk_or_a_glob_skips_a_file_whose_engine_cannot_be_told(run_cli, tmp_path,
                                                                  monkeypatch, how):
    # a conf.d of a real host holds other programs' *.conf: a walk notes and counts them,
    # and checks the database's files; it does not fail the run (exit 2) on them
    monkeypatch.chdir(tmp_path)
    Path("etc").mkdir()
    Path("etc/good.cnf").write_text(GOOD)
    skipped = sorted(str(m(Path("etc"))) for m, _ in UNPLACED)
    args = ["etc"] if how == "directory" else ["etc/*"]
    code, out, err = run_cli("check", "--memory", "8G", "--no-project", "--no-measure", *args,
                             "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["errors"] == [], (doc["errors"], err)
    assert sorted(s["file"] for s in doc["skipped_files"]) == skipped, doc["skipped_files"]
    assert all("cannot tell its engine" in s["reason"] for s in doc["skipped_files"])
    for f in skipped:  # one line each on stderr, naming the file
        assert len([ln for ln in err.splitlines()
                    if ln.startswith(f"note: {f}: skipped: cannot tell its engine")]) == 1, err
    assert "pmem-advisor: error:" not in err, err
    assert any(f["rule"] == "CK004" and f["file"] == "etc/good.cnf" for f in doc["findings"])
    code, out, _ = run_cli("check", "--memory", "8G", "--no-project", "--no-measure", *args)
    assert code == 1 and f"{len(skipped)} file(s) skipped" in out, out
    code, out, _ = run_cli("check", "--memory", "8G", "--no-project", "--no-measure", *args,
                           "--format", "junit")
    import xml.etree.ElementTree as ET

    cases = {c.get("name"): c for c in ET.fromstring(out).iter("testcase")}
    assert all(cases[f].find("skipped") is not None for f in skipped), out


def test_a_walk_does_not_skip_a_postgresql_fragment_with_a_syntax_error(run_cli, tmp_path):
    # it names PostgreSQL's parameters: a broken config, not another program's file
    (tmp_path / "good.cnf").write_text(GOOD)
    (tmp_path / "tuning.conf").write_text("shared_buffers = = 1GB\nwork_mem = 4MB\n")
    code, out, err = run_cli("check", "--memory", "8G", "--no-project", "--no-measure",
                             str(tmp_path), "--format", "json")
    doc = json.loads(out)
    assert code == 2 and [Path(e["file"]).name for e in doc["errors"]] == ["tuning.conf"], err
    assert doc["skipped_files"] == []


def test_a_walk_of_nothing_but_other_programs_files_is_exit_2(run_cli, tmp_path):
    _nginx(tmp_path)
    _logrotate(tmp_path)
    code, out, err = run_cli("check", "--memory", "8G", "--no-project", "--no-measure",
                             str(tmp_path))
    assert code == 2 and out == "", (out, err)
    errors = [ln for ln in err.splitlines() if ln.startswith("pmem-advisor: error:")]
    assert len(errors) == 1 and "no config file whose engine can be told" in errors[0], err
    assert "2 skipped" in errors[0] and "Traceback" not in err


def test_the_project_files_exclude_leaves_files_out_of_walks_and_named_paths(
        run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("etc/nginx").mkdir(parents=True)
    Path("etc/good.cnf").write_text(GOOD)
    _nginx(Path("etc/nginx"))
    _sysctl(Path("etc"))
    Path(".pmem-advisor.toml").write_text('exclude = ["etc/nginx", "**/99-*.conf"]\n')
    code, out, err = run_cli("check", "--memory", "8G", "--no-measure", "etc", "--format",
                             "json")
    doc = json.loads(out)
    assert code == 1 and doc["errors"] == [] and doc["skipped_files"] == [], (doc, err)
    assert doc["files"] == ["etc/good.cnf"], doc["files"]
    assert "2 file(s) excluded by" in err, err
    # pre-commit names each file: an excluded one named is left out too, and nothing else is
    # checked in its place (not the host alone)
    code, out, err = run_cli("check", "--memory", "8G", "--no-measure", "etc/99-sysctl.conf",
                             "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["findings"] == [] and doc["files"] == [], (doc, err)
    assert "1 file(s) excluded by" in err, err


@pytest.mark.parametrize("value,needle", [
    ('["[a"]', "'[' without its ']'"),
    ('["/etc/*.conf"]', "relative to the project file"),
    ('"nginx/**"', "exclude must be a list"),
    ("[1]", "exclude must be a list"),
])
def test_a_bad_exclude_is_one_line_exit_2_naming_the_project_file(run_cli, tmp_path,
                                                                   monkeypatch, value, needle):
    monkeypatch.chdir(tmp_path)
    Path("a.cnf").write_text(GOOD)
    Path(".pmem-advisor.toml").write_text(f"exclude = {value}\n")
    code, out, err = run_cli("check", "--memory", "8G", "--no-measure", ".")
    assert code == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and ".pmem-advisor.toml" in err and needle in err, err


def test_a_file_the_user_cannot_read_is_one_line_exit_2_and_the_others_are_checked(
        other_user, cli_as_other_user):
    """Mode 000 stops only a user who is not root: the check runs as the other user."""
    work = other_user.tmpdir()
    (work / "good.cnf").write_text(GOOD)
    (work / "good.cnf").chmod(0o644)
    secret = work / "secret.cnf"
    secret.write_text("[mysqld]\ninnodb_flush_log_at_trx_commit = 0\n")
    secret.chmod(0o000)
    r = cli_as_other_user("-m", "pmem_advisor", "check", "--memory", "8G", "--no-project",
                          "--no-measure", "good.cnf", "secret.cnf", "--format", "json",
                          cwd=work)
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert [e["file"] for e in doc["errors"]] == ["secret.cnf"], doc
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("pmem-advisor: error:")]
    assert len(errors) == 1 and "secret.cnf" in errors[0] and "Permission denied" in errors[0]
    assert "Traceback" not in r.stderr
    assert any(f["rule"] == "CK004" and f["file"] == "good.cnf" for f in doc["findings"]), (
        [(f["rule"], f["file"]) for f in doc["findings"]], r.stderr)


@pytest.mark.parametrize("glob,needle", [
    ("[a", "'[' without its ']'"),
    ("conf/[z-a].cnf", "bad character range"),
    ("conf/[!].cnf", "of no character"),
    ("/etc/mysql/*.cnf", "relative to the project file"),
    ("../other/*.cnf", "without '..'"),
])
def test_a_project_file_with_a_bad_glob_is_one_line_exit_2_naming_it(run_cli, tmp_path,
                                                                      monkeypatch, glob, needle):
    # a project file is the run's settings, not one file among many: a bad one stops the run
    # (a gate that half-read its engines would judge files as the wrong server)
    (tmp_path / ".pmem-advisor.toml").write_text(
        f'[[files]]\nglob = "conf/*.cnf"\nengine = "mariadb"\n\n'
        f'[[files]]\nglob = {json.dumps(glob)}\nengine = "mysql"\n')
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "a.cnf").write_text(MEMORY_CNF)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("check", "conf/", "--no-measure")
    assert code == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and ".pmem-advisor.toml" in err and "[[files]] #2" in err, err
    assert glob in err and needle in err and "Traceback" not in err, err


# ---------------------------------------------------------------- SARIF: every result located
HOST_PROFILE = Path(__file__).resolve().parents[1] / "probes" / "golden" / "legacy-memmap.json"


def _validated_sarif(out: str) -> dict:
    doc = json.loads(out)
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(doc)
    return doc["runs"][0]


def test_sarif_shows_host_findings_at_the_first_files_line_1(run_cli, tmp_path, monkeypatch):
    # GitHub's upload refuses the whole SARIF file when one result has no location, and shows
    # a result only at a region.startLine: a host finding (this profile's PMEM layout) is
    # shown on the first checked file's line 1, saying it is not about that line
    monkeypatch.chdir(tmp_path)
    Path("a.cnf").write_text(MEMORY_CNF)
    Path("b.cnf").write_text("[mysqld]\ninnodb_flush_log_at_trx_commit = 2\n")
    code, out, err = run_cli("check", "--profile", str(HOST_PROFILE), "--db", "mariadb",
                             "--version", "10.11", "--memory", "8G", "--no-project", "a.cnf",
                             "b.cnf", "--format", "sarif")
    assert code == 1, err
    run = _validated_sarif(out)
    code, out, _ = run_cli("check", "--profile", str(HOST_PROFILE), "--db", "mariadb",
                           "--version", "10.11", "--memory", "8G", "--no-project", "a.cnf",
                           "b.cnf", "--format", "json")  # the same run: which have no file
    host_rules = {f["rule"] for f in json.loads(out)["findings"] if not f["file"]}
    assert host_rules, "the profile must give host findings for this test to mean anything"
    seen_host = set()
    for r in run["results"]:
        assert len(r["locations"]) == 1, r
        phys = r["locations"][0]["physicalLocation"]
        assert phys["region"]["startLine"] >= 1
        if r["properties"].get("host"):
            seen_host.add(r["ruleId"])
            assert phys["artifactLocation"]["uri"] == "a.cnf" and phys["region"]["startLine"] == 1
            assert r["message"]["text"].startswith("host or run-wide finding: ")
            assert "not a finding about a line of this file" in \
                r["locations"][0]["message"]["text"]
    assert host_rules <= seen_host, (host_rules, seen_host)
    by_line = {(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["ruleId"]):
               r["locations"][0]["physicalLocation"]["region"]["startLine"]
               for r in run["results"] if not r["properties"].get("host")}
    assert by_line[("b.cnf", "CK001")] == 2 and by_line[("a.cnf", "CK004")] == 2, by_line


def test_sarif_of_the_host_alone_validates_and_warns_that_code_scanning_refuses_it(run_cli):
    code, out, err = run_cli("check", "--profile", str(HOST_PROFILE), "--format", "sarif")
    run = _validated_sarif(out)
    assert run["results"] and all("locations" not in r for r in run["results"]), run["results"]
    warned = [n["message"]["text"] for n in run["invocations"][0]["toolExecutionNotifications"]
              if n["level"] == "warning"]
    assert any(f"{len(run['results'])} result(s)" in w and "refuses" in w for w in warned), warned


def _debian_pg_dir(d: Path) -> Path:
    """What Debian's /etc/postgresql/15/main holds beside postgresql.conf (its own lines)."""
    d.mkdir()
    (d / "postgresql.conf").write_text("shared_buffers = 128MB\nmax_connections = 100\n")
    (d / "pg_hba.conf").write_text("local   all   postgres   peer\n"
                                   "host    all   all   127.0.0.1/32   scram-sha-256\n")
    (d / "pg_ident.conf").write_text("# MAPNAME  SYSTEM-USERNAME  PG-USERNAME\n")
    (d / "pg_ctl.conf").write_text("# Automatic pg_ctl configuration\npg_ctl_options = ''\n")
    (d / "start.conf").write_text("# auto, manual or disabled\nauto\n")
    return d


@pytest.mark.parametrize("db", ["postgres", "pg"])
def test_db_with_a_walk_skips_the_files_beside_the_databases(run_cli, tmp_path, db):
    # --db names the database's files, not every file beside them: a walk of Debian's cluster
    # directory used to fail pg_ctl.conf's pg_ctl_options as an unknown parameter (CK002) and
    # end exit 2 on pg_hba.conf's and start.conf's syntax
    main = _debian_pg_dir(tmp_path / "main")
    args = ("check", "--db", db, "--version", "18", "--memory", "8G", "--no-project",
            "--no-measure", str(main), "--format", "json")
    code, out, err = run_cli(*args)
    doc = json.loads(out)
    assert code != 2 and doc["errors"] == [], err
    skipped = {Path(s["file"]).name: s["reason"] for s in doc["skipped_files"]}
    assert sorted(skipped) == ["pg_ctl.conf", "pg_hba.conf", "pg_ident.conf", "start.conf"]
    assert all(r.startswith(f"--db {db}, but not a postgresql.conf") for r in skipped.values())
    assert {Path(f["file"]).name for f in doc["findings"] if f.get("file")} <= {
        "postgresql.conf"}, doc["findings"]
    assert "pg_ctl_options" not in out
    # a broken postgresql.conf fragment still fails the walk; a file named is judged as --db says
    (main / "tuning.conf").write_text("shared_buffers = = 1GB\n")
    code, out, err = run_cli(*args)
    assert code == 2 and [Path(e["file"]).name for e in json.loads(out)["errors"]] == [
        "tuning.conf"], err
    code, _, err = run_cli("check", "--db", db, "--version", "18", "--no-project",
                           "--no-measure", str(main / "pg_hba.conf"))
    assert code == 2 and "pg_hba.conf:1: syntax error" in err and err.count("\n") == 1, err
    # a postgresql.conf is one by its name, all defaults (comments only) included
    (main / "tuning.conf").unlink()
    (main / "postgresql.conf").write_text("# every setting at its default\n")
    code, out, err = run_cli(*args)
    doc = json.loads(out)
    assert code != 2 and doc["errors"] == [], err
    assert "postgresql.conf" not in {Path(s["file"]).name for s in doc["skipped_files"]}
    assert [Path(f).name for f in doc["files"]] == ["postgresql.conf"], doc["files"]
    # a walk of nothing but such files says so, and its hint does not ask for --db again
    only = tmp_path / "only"
    only.mkdir()
    (only / "pg_hba.conf").write_text((main / "pg_hba.conf").read_text())
    code, out, err = run_cli("check", "--db", db, "--no-project", "--no-measure", str(only))
    assert code == 2 and out == "" and f"no config file of --db {db}" in err, err
    assert "say the engine with --db" not in err


def test_db_mariadb_with_a_walk_skips_other_programs_files(run_cli, tmp_path):
    (tmp_path / "good.cnf").write_text(MEMORY_CNF)
    skipped = sorted(m(tmp_path).name for m in (_nginx, _systemd))
    code, out, err = run_cli("check", "--db", "mariadb", "--version", "10.11", "--memory", "8G",
                             "--no-project", "--no-measure", str(tmp_path), "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["errors"] == [], err
    assert sorted(Path(s["file"]).name for s in doc["skipped_files"]) == skipped
    assert any(f["rule"] == "CK004" and Path(f["file"]).name == "good.cnf"
               for f in doc["findings"]), doc["findings"]
