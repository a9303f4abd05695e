"""Others' configs, judged by the gate and by the servers (issue 49).

tests/rules/corpus holds configs this project did not write: Debian's and MariaDB's own my.cnf
files, PostgreSQL's postgresql.conf.sample, the official MySQL image's my.cnf; each file's first
line says where it came from. Each is checked as shipped and with every commented-out
``name = value`` line switched on (the sample's own defaults and suggestions, as a user would
uncomment them). For PostgreSQL 15/18 and MariaDB 10.11 the real server judges each setting
(``validate_config`` starts it and reads every value back): a FAIL on a setting the server
takes, or a pass on one it refuses, fails the test. MySQL does not install here: its oracle is
the server's recorded listing (knobs/data/recorded), and the official image's files, which that
server starts with, must get no FAIL. The count of files and verdicts compared is printed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.knobs.test_catalog_sources import _server
from tests.rules.test_gate_vs_server import _compare, _gate, _refused_by_gate

CORPUS = Path(__file__).parent / "corpus"
# "#name = value  # note": a setting the file ships commented out (PostgreSQL and my.cnf alike)
_COMMENTED = re.compile(r"^#([a-z][a-z0-9_.-]*)\s*=\s*(\S.*?)\s*(?:#.*)?$")
# Settings that name the sample host's own files and folders: switched on here they ask the
# throwaway server for paths it cannot have (a start failure that says nothing of the value)
HOST_PATHS = {
    "postgres": ("data_directory", "hba_file", "ident_file", "external_pid_file"),
    "mariadb": ("datadir", "tmpdir", "user", "log_bin", "log_error", "general_log_file",
                "log_slow_query_file", "ssl-ca", "ssl-cert", "ssl-key"),
}


def _files(server: str) -> list[Path]:
    """The corpus files whose second line names ``server`` ('# server: mariadb 10.11 ...')."""
    out = []
    for path in sorted(CORPUS.iterdir()):
        head = path.read_text(encoding="utf-8").splitlines()[:2]
        assert head[0].startswith("# corpus-source: "), f"{path.name}: no provenance line"
        if head[1].startswith(f"# server: {server}"):
            out.append(path)
    assert out, f"no corpus file for {server}"
    return out


def _uncommented(text: str, skip: tuple[str, ...] = ()) -> str:
    """The file with each commented-out setting switched on (includes left commented: they
    name files of the host the sample was written for)."""
    lines = []
    for line in text.splitlines():
        m = _COMMENTED.match(line)
        if m and not m.group(1).startswith(("include",)) and m.group(1) not in skip:
            line = f"{m.group(1)} = {m.group(2)}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _variants(path: Path, skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    text = path.read_text(encoding="utf-8")
    return [(path.name, text), (f"{path.name} (uncommented)", _uncommented(text, skip))]


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.parametrize("major", ["15", "18"])
def test_postgres_corpus_verdicts_are_the_servers(major, run_cli, tmp_path, capsys):
    from pmem_advisor.engines.postgres.parse import parse_postgresql_conf
    from pmem_advisor.engines.server_validate import validate_config

    binary = _server("postgres", "postgresql", major)
    wrong, compared, files = [], 0, 0
    for path in _files("postgres"):
        for i, (label, text) in enumerate(_variants(path, HOST_PATHS["postgres"])):
            files += 1
            doc = _gate(run_cli, tmp_path, "postgres", major, text, f"pg{i}.conf")
            report = validate_config(parse_postgresql_conf(str(tmp_path / f"pg{i}.conf")),
                                     "postgres", binary=binary)
            compared += len(report.checks)
            wrong += [f"{label}: {w}" for w in _compare(report, _refused_by_gate(doc))]
    with capsys.disabled():
        print(f"\ncorpus PostgreSQL {major}: {files} files, {compared} verdicts compared, "
              f"{len(wrong)} wrong")
    assert compared > 100 and not wrong, "\n".join(wrong)


@pytest.mark.server
@pytest.mark.slow
def test_mariadb_corpus_verdicts_are_the_servers(run_cli, tmp_path, capsys):
    from pmem_advisor.engines.mysql.parse import parse_mycnf
    from pmem_advisor.engines.server_validate import validate_config

    binary = _server("mysql", "mariadb", "10.11")
    wrong, compared, files = [], 0, 0
    for path in _files("mariadb"):
        for i, (label, text) in enumerate(_variants(path, HOST_PATHS["mariadb"])):
            files += 1
            name = f"my{files}-{i}.cnf"
            doc = _gate(run_cli, tmp_path, "mariadb", "10.11", text, name)
            report = validate_config(parse_mycnf(str(tmp_path / name)), "mysql",
                                     flavour="mariadb", binary=binary)
            compared += len(report.checks)
            wrong += [f"{label}: {w}" for w in _compare(report, _refused_by_gate(doc))]
    with capsys.disabled():
        print(f"\ncorpus MariaDB 10.11: {files} files, {compared} verdicts compared, "
              f"{len(wrong)} wrong")
    assert compared > 10 and not wrong, "\n".join(wrong)


@pytest.mark.parametrize("series", ["8.0", "8.4"])
def test_mysql_corpus_the_image_starts_with_gets_no_fail(series, run_cli, tmp_path, capsys):
    """The official image's files start MySQL: no FAIL against the recorded listing."""
    fails, settings = [], 0
    for i, path in enumerate(_files("mysql")):
        doc = _gate(run_cli, tmp_path, "mysql", series, path.read_text(encoding="utf-8"),
                    f"my{i}.cnf")
        settings += sum(1 for line in path.read_text().splitlines()
                        if line.strip() and not line.startswith(("#", "[")))
        fails += [f"{path.name}: {f['subject']}: {f['message']}" for f in doc["findings"]
                  if f["severity"] == "fail"]
    with capsys.disabled():
        print(f"\ncorpus MySQL {series} (recorded listing): {settings} settings, "
              f"{len(fails)} FAIL")
    assert settings >= 6 and not fails, "\n".join(fails)
