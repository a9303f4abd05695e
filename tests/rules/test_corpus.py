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


def _files(server: str, version: str | None = None) -> list[Path]:
    """The corpus files whose second line names ``server`` ('# server: mysql 8.0 and 8.4
    (...)'), and ``version`` among the versions before the parenthesis when one is given."""
    out = []
    for path in sorted(CORPUS.iterdir()):
        head = path.read_text(encoding="utf-8").splitlines()[:2]
        assert head[0].startswith("# corpus-source: "), f"{path.name}: no provenance line"
        m = re.match(r"# server: (\w+) ([^(]*)", head[1])
        assert m, f"{path.name}: no '# server: <server> <versions>' line"
        if m.group(1) == server and (version is None
                                     or version in re.findall(r"\d+(?:\.\d+)?", m.group(2))):
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
    """The file as shipped, and with its commented-out settings on when that differs (a
    file with none is judged once: a throwaway start costs seconds)."""
    text = path.read_text(encoding="utf-8")
    on = _uncommented(text, skip)
    return [(path.name, text)] + ([(f"{path.name} (uncommented)", on)] if on != text else [])


# Settings the throwaway server sets on its own command line (its port, sockets, listen
# address), which outranks the file: withheld too, and judged by the one-line reading
OWN = {"postgres": ("port", "listen_addresses", "unix_socket_directories",
                    "unix_socket_permissions"),
       "mariadb": ()}
# Settings that need what a throwaway server cannot have: started with them it would hang or
# refuse for a reason that says nothing of the value. They are withheld from its start (with
# HOST_PATHS), and each is judged instead by the server's own reading of a one-line file
# (``postgres -C name``, ``mariadbd --help --verbose``), which checks the value and needs none
# of it. ``False``: not even that reading can say here (it needs the thing itself), so the
# setting is counted as not compared.
NEEDS = {
    "postgres": {
        # every commit waits for a named standby: the throwaway start's CREATE DATABASE would
        # wait for one that never connects (validate_config commits with synchronous_commit
        # = local since, but a standby-less server is still no judge of the names)
        "synchronous_standby_names": ("a standby to confirm commits", True),
        # the libraries are loaded at start: extensions not installed here stop it
        "shared_preload_libraries": ("the extensions it names installed", True),
        # ssl = on reads the certificate and key at start
        "ssl": ("the certificate and key files of its host", True),
        # io_uring exists only in a build with liburing
        "io_method": ("a build with the method it names", True),
        # a locale is checked against the host's installed locales, by -C too
        "lc_messages": ("the locale it names installed (only C and C.utf8 are here)", False),
        "lc_monetary": ("the locale it names installed (only C and C.utf8 are here)", False),
        "lc_numeric": ("the locale it names installed (only C and C.utf8 are here)", False),
        "lc_time": ("the locale it names installed (only C and C.utf8 are here)", False),
    },
    "mariadb": {
        # wsrep_on = ON with a provider library that is not installed: no Galera here
        "wsrep_provider": ("the Galera library it names", True),
        "wsrep_on": ("a Galera provider and cluster", True),
        # the key file of the host it was written for: the throwaway server is given a key
        # file of its own instead (STAND_INS), as it must have one to start at all
        "file_key_management_filename": ("the encryption key file of its host", True),
    },
}
# What the throwaway server gets in place of a withheld setting that it cannot start without
STAND_INS = {"file_key_management_filename": lambda: _key_file()}


def _key_file() -> str:
    """A key file as file_key_management reads it (id;hex key), readable by the server user."""
    import atexit
    import os
    import tempfile

    fd, path = tempfile.mkstemp(prefix="pmem-advisor-corpus-key-", suffix=".txt")
    atexit.register(os.unlink, path)
    os.write(fd, b"1;" + b"a1" * 32 + b"\n")
    os.close(fd)
    os.chmod(path, 0o644)
    return path


def _withhold(config, server: str, text: str) -> tuple[str, list]:
    """``text`` with every line that sets a HOST_PATHS or NEEDS setting commented out (for
    the throwaway server), and those entries."""
    names = set(HOST_PATHS[server]) | set(NEEDS[server]) | set(OWN[server])
    held = [e for e in config.entries + config.ignored if e.name in names]
    lines = text.splitlines()
    for e in held:
        stand_in = STAND_INS.get(e.name)
        lines[e.line - 1] = (f"{e.raw_name or e.name} = {stand_in()}" if stand_in
                             else "#withheld# " + lines[e.line - 1])
    return "\n".join(lines) + "\n", held


def _judge_withheld(held, refused: set[str], oracle, text: str) -> tuple[list[str], int, int]:
    """Each withheld setting's verdict by the one-line reading against the gate's."""
    wrong, compared, uncompared = [], 0, 0
    last = {e.name: e for e in held}  # the effective one: the last line read
    for name, e in sorted(last.items()):
        judgeable = NEEDS[oracle.server_kind].get(name, ("", True))[1]
        if not judgeable:
            uncompared += 1
            continue
        ok, said = oracle.one(name, text.splitlines()[e.line - 1], text)
        compared += 1
        if ok == (name in refused):
            wrong.append(f"{name} = {e.value}: server "
                         f"{'reads ' + said if ok else 'refuses: ' + said}"
                         f" (withheld, one-line reading), gate "
                         f"{'refuses' if name in refused else 'passes'}")
    return wrong, compared, uncompared


class _PgLine:
    server_kind = "postgres"

    def __init__(self, binary):
        from tests.knobs.test_value_model_servers import PgOracle

        self.oracle = PgOracle(binary)

    def one(self, name: str, line: str, text: str) -> tuple[bool, str]:
        return self.oracle.read(line.strip(), name)


class _MyLine:
    server_kind = "mariadb"

    def __init__(self, binary):
        from tests.knobs.test_value_model_servers import MariaOracle

        self.oracle = MariaOracle(binary)

    def one(self, name: str, line: str, text: str) -> tuple[bool, str]:
        # with the file's plugin-load lines: a plugin's options exist once it is loaded
        plugins = [ln.strip() for ln in text.splitlines()
                   if re.match(r"\s*plugin[-_]load", ln)]
        r = self.oracle._run([*plugins, line.strip()])
        said = [ln for ln in r.stderr.splitlines() if "ERROR" in ln or "unknown" in ln]
        return r.returncode == 0 and not said, "; ".join(said) or "its value"


def _judge(server: str, files: list[Path], gate, validate, oracle) -> tuple[int, int, int,
                                                                               int, list[str]]:
    wrong, compared, uncompared, count = [], 0, 0, 0
    for path in files:
        for i, (label, text) in enumerate(_variants(path, HOST_PATHS[server])):
            count += 1
            doc, config = gate(text, f"{count}-{i}")
            server_text, held = _withhold(config, server, text)
            report = validate(server_text, f"{count}-{i}-server")
            refused = _refused_by_gate(doc)
            compared += len(report.checks)
            held_names = {e.name for e in held}
            wrong += [f"{label}: {w}" for w in _compare(report, refused - held_names)]
            w, c, u = _judge_withheld(held, refused, oracle, text)
            wrong += [f"{label}: {x}" for x in w]
            compared, uncompared = compared + c, uncompared + u
    return count, compared, uncompared, len(wrong), wrong


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.parametrize("major", ["15", "18"])
def test_postgres_corpus_verdicts_are_the_servers(major, run_cli, tmp_path, capsys):
    from pmem_advisor.engines.postgres.parse import parse_postgresql_conf
    from pmem_advisor.engines.server_validate import validate_config

    binary = _server("postgres", "postgresql", major)

    def gate(text, tag):
        doc = _gate(run_cli, tmp_path, "postgres", major, text, f"pg{tag}.conf")
        return doc, parse_postgresql_conf(str(tmp_path / f"pg{tag}.conf"))

    def validate(text, tag):
        (tmp_path / f"pg{tag}.conf").write_text(text)
        return validate_config(parse_postgresql_conf(str(tmp_path / f"pg{tag}.conf")),
                               "postgres", binary=binary)

    files, compared, uncompared, _, wrong = _judge("postgres", _files("postgres"), gate,
                                                   validate, _PgLine(binary))
    with capsys.disabled():
        print(f"\ncorpus PostgreSQL {major}: {files} files, {compared} verdicts compared "
              f"({uncompared} settings need what no server here has), {len(wrong)} wrong")
    assert compared > 100 and not wrong, "\n".join(wrong)


@pytest.mark.server
@pytest.mark.slow
def test_mariadb_corpus_verdicts_are_the_servers(run_cli, tmp_path, capsys):
    from pmem_advisor.engines.mysql.parse import parse_mycnf
    from pmem_advisor.engines.server_validate import validate_config

    binary = _server("mysql", "mariadb", "10.11")

    def gate(text, tag):
        doc = _gate(run_cli, tmp_path, "mariadb", "10.11", text, f"my{tag}.cnf")
        return doc, parse_mycnf(str(tmp_path / f"my{tag}.cnf"), flavour="mariadb",
                                version="10.11")

    def validate(text, tag):
        (tmp_path / f"my{tag}.cnf").write_text(text)
        return validate_config(parse_mycnf(str(tmp_path / f"my{tag}.cnf")), "mysql",
                               flavour="mariadb", binary=binary)

    files, compared, uncompared, _, wrong = _judge("mariadb", _files("mariadb"), gate,
                                                   validate, _MyLine(binary))
    with capsys.disabled():
        print(f"\ncorpus MariaDB 10.11: {files} files, {compared} verdicts compared "
              f"({uncompared} settings need what no server here has), {len(wrong)} wrong")
    assert compared > 10 and not wrong, "\n".join(wrong)


@pytest.mark.parametrize("series", ["8.0", "8.4"])
def test_mysql_corpus_the_image_starts_with_gets_no_fail(series, run_cli, tmp_path, capsys):
    """The official image's files start MySQL: no FAIL against the recorded listing."""
    fails, settings = [], 0
    for i, path in enumerate(_files("mysql", series)):
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


def _listing(series: str) -> tuple[set[str], tuple[str, ...]]:
    """The names MySQL ``series`` takes from a my.cnf by its recorded ``mysqld --verbose
    --help`` (option heads, the variables table, the sys_vars names), and the prefixes that
    listing leaves out (plugins it may or may not build: those it cannot speak for)."""
    from pmem_advisor.knobs.recorded import RECORDED, read_extract

    doc = read_extract(RECORDED / f"mysql-{series}.txt")
    names = {line.split()[0] for line in doc["options"] + doc["variables"] + doc["sys_vars"]
             if line.strip()}
    prefixes = tuple(w for line in doc["unlisted"] for w in line.split())
    return {n.replace("-", "_") for n in names}, tuple(p.replace("-", "_") for p in prefixes)


def _mysql_takes(name: str, names: set[str], prefixes: tuple[str, ...]) -> bool | None:
    """Whether the listed server starts with ``name`` set (my_getopt: a listed name, or
    skip-/enable-/disable- before a listed option, or a unique prefix of one); None under a
    prefix the listing leaves out."""
    bare = name
    for p in ("skip_", "enable_", "disable_"):
        if name.startswith(p) and name[len(p):] in names:
            bare = name[len(p):]
    if bare in names:
        return True
    if any(bare == p or bare.startswith(p + "_") for p in prefixes):
        return None
    return len([n for n in names if n.startswith(bare)]) == 1


@pytest.mark.parametrize("series", ["8.0", "8.4"])
def test_mysql_corpus_verdicts_are_the_recorded_listings(series, run_cli, tmp_path, capsys):
    """Every MySQL corpus file on both series, whichever its header names: a setting the
    series' recorded listing lacks must FAIL (the server refuses to start: 8.4 removed
    skip-host-cache, which the 8.0 image's my.cnf sets), a listed one must not."""
    from pmem_advisor.engines.mysql.parse import parse_mycnf_text

    names, prefixes = _listing(series)
    wrong, compared, unsaid = [], 0, 0
    for i, path in enumerate(_files("mysql")):
        text = path.read_text(encoding="utf-8")
        refused = _refused_by_gate(_gate(run_cli, tmp_path, "mysql", series, text,
                                         f"my{i}.cnf"))
        for e in parse_mycnf_text(text, flavour="mysql", version=series).entries:
            takes = True if e.loose else _mysql_takes(e.name, names, prefixes)
            if takes is None:
                unsaid += 1
                continue
            compared += 1
            if takes == (e.name in refused):
                wrong.append(f"{path.name}: {e.raw_name or e.name}: the {series} listing "
                             f"{'has' if takes else 'lacks'} it, the gate "
                             f"{'refuses' if e.name in refused else 'passes'} it")
    with capsys.disabled():
        print(f"\ncorpus MySQL {series} (recorded listing): {len(_files('mysql'))} files, "
              f"{compared} verdicts compared ({unsaid} under prefixes the listing leaves "
              f"out), {len(wrong)} wrong")
    assert compared >= 20 and not wrong, "\n".join(wrong)
