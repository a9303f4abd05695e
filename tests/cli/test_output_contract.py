"""The output contract, over the whole CLI: every command of the Typer app is walked with
stdout piped, in every --format it prints. On stdout only data: JSON that validates against
its shipped schema, TSV rows of one width, tables without box characters that are the same
at 20 and at 400 columns (never wrapped); notes and warnings only on stderr. A closed stdout
(`| head`) is exit 0 without a traceback; a format a command does not print is exit 2 naming
the ones it does.

A new command must add its invocation to INVOCATIONS (the walk fails otherwise)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pmem_advisor import schemas
from pmem_advisor.errors import EXIT_USAGE
from tests.rules.machines import make_profile

BOX = set("─│┃━┏┓┗┛┌┐└┘├┤┬┴┼╭╮╯╰═║╔╗╚╝╞╡╪")


def _leaves(command, path=()):
    subs = getattr(command, "commands", None)
    if not subs:
        yield path, command
        return
    for name, sub in subs.items():
        yield from _leaves(sub, (*path, name))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Inputs for the commands: a probe profile, a machine tree, configs, a tuned study."""
    from tests.probes.machine_builder import build
    from tests.report.test_build import _tuned_study

    d = tmp_path_factory.mktemp("contract")
    (d / "probe.json").write_text(json.dumps(make_profile("ssd")))
    (d / "postgresql.conf").write_text("shared_buffers = 1GB\nwork_mem = '8MB'\n")
    (d / "duck.sql").write_text("SET threads = 2;\nSET memory_limit = '512MB';\n")
    build("cxl-expander", d / "tree")
    _tuned_study(d / "study", trials=4, repeats=2)
    return d


def INVOCATIONS(d) -> dict[tuple[str, ...], list[str]]:
    """Each command with arguments that run here without a server (the commands that need
    one are run in their error path: their stdout must then stay empty)."""
    profile, conf = str(d / "probe.json"), str(d / "postgresql.conf")
    return {
        ("doctor",): [],
        ("probe",): ["--no-measure", "--root", str(d / "tree"), "--path", "/pmem"],
        ("tune",): ["postgres", "--workload", "no-such-workload"],
        ("report",): [str(d / "study")],
        ("knobs",): ["postgres", "--version", "15"],
        ("recommend",): ["postgres", "--profile", profile, "--version", "15"],
        ("check",): ["--db", "postgres", "--config", conf, "--profile", profile,
                     "--version", "15"],
        ("help",): ["check"],
        ("place",): ["postgres", "--fast", str(d), "--dsn", "host=/nonexistent port=1 dbname=x"],
        ("instances", "list"): [],
        ("instances", "reap"): [],
        ("instances", "fetch-postgres"): ["12"],  # unsupported: its error path, no download
        ("config", "render"): ["postgres", "--set", "work_mem=8MB"],
        ("config", "parse"): [conf],
        ("config", "validate"): [str(d / "duck.sql"), "duckdb"],
        ("workload", "list"): [],
        ("workload", "run"): ["oracle", "--workload", "pgbench-tpcb"],
        ("completion", "show"): ["bash"],
        ("completion", "install"): ["bash", "--dir", str(d / "completions")],
    }


def _formats(command) -> tuple[str, ...]:
    for p in command.params:
        if "--format" in getattr(p, "opts", ()):
            return tuple(p.metavar.split("|"))
    return ()


def _run(args, columns: int, stdout=subprocess.PIPE):
    env = {**os.environ, "COLUMNS": str(columns), "PMEM_ADVISOR_DEBUG": ""}
    return subprocess.run([sys.executable, "-m", "pmem_advisor", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=300)


def _cases(d):
    from pmem_advisor.cli.main import build_command

    invocations = INVOCATIONS(d)
    leaves = dict(_leaves(build_command()))
    missing = set(leaves) - set(invocations)
    assert not missing, f"commands without an invocation in this test: {sorted(missing)}"
    for path, command in leaves.items():
        yield path, invocations[path], _formats(command)


class Result:
    def __init__(self, code, out, err):
        self.returncode, self.stdout, self.stderr = code, out, err


def test_every_command_prints_only_data_on_stdout(files, run_cli, monkeypatch):
    """In-process (capsys: stdout is not a terminal), at 20 and at 400 columns."""
    from pmem_advisor.cli import output

    def run(argv, columns):
        monkeypatch.setenv("COLUMNS", str(columns))
        for console in (output.out, output.console):
            monkeypatch.setattr(console, "_width", columns)
        return Result(*run_cli(*argv))

    failures = []
    for path, args, formats in _cases(files):
        for fmt in formats or (None,):
            argv = [*path, *args, *(["--format", fmt] if fmt else [])]
            narrow, wide = run(argv, 20), run(argv, 400)
            problems = _problems(narrow, wide, fmt, prose=path == ("help",))
            if problems:
                failures.append((" ".join(argv), problems, narrow.stderr[-300:]))
    assert not failures, "\n".join(map(str, failures))


def _same_data(a: str, b: str) -> bool:
    """Equal but for what changes between two runs: clocks and ages."""
    import re

    clock = re.compile(r'(timestamp|time)="[^"]*"|\b\d+ s\b')
    return clock.sub("", a) == clock.sub("", b)


def _problems(narrow, wide, fmt, prose=False) -> list[str]:
    out, err = narrow.stdout, narrow.stderr
    problems = []
    if "Traceback" in err or "internal error" in err:
        problems.append("traceback / internal error")
    if narrow.returncode not in (0, 1, 2, 3):
        problems.append(f"exit {narrow.returncode}")
    if narrow.returncode == 2 and out:
        problems.append("bad usage with output on stdout")
    if BOX & set(out):
        problems.append("box characters on stdout")
    if "\x1b[" in out:
        problems.append("colour codes on stdout")
    if not prose and not _same_data(out, wide.stdout):  # help is prose: it fills the width
        problems.append("stdout depends on the terminal width (wrapped)")
    for line in out.splitlines():
        if line.startswith(("note:", "warning:", "progress:")):
            problems.append(f"a note on stdout: {line[:60]}")
    if fmt == "json" and out:
        try:
            doc = json.loads(out)
            schemas.validate(doc)
            if not schemas.schema_file(doc["schema"]).is_file():
                problems.append(f"no schema file for {doc['schema']}")
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            problems.append(f"json: {type(e).__name__}: {e}"[:200])
    if fmt == "tsv" and out:
        widths = {line.count("\t") for line in out.splitlines()}
        if len(widths) != 1:
            problems.append(f"tsv rows of different widths {sorted(widths)}")
    return problems


# One command per way of writing stdout: print_table, print_json, rich's out.print, the file
# object, click's echo (help), the emitters' text; real processes, as a shell runs them.
CLOSED_STDOUT = (("knobs",), ("probe",), ("check",), ("completion", "show"), ("help",),
                 ("config", "render"))


def test_a_closed_stdout_is_not_an_error(files):
    """`pmem-advisor ... | head -0`: the reader is gone before the first write."""
    failures = []
    invocations = INVOCATIONS(files)
    for path in CLOSED_STDOUT:
        args = invocations[path]
        read, write = os.pipe()
        os.close(read)
        try:
            r = _run([*path, *args], 100, stdout=write)
        finally:
            os.close(write)
        if r.returncode != 0 or "Traceback" in r.stderr \
                or "Broken pipe" in r.stderr or "BrokenPipe" in r.stderr:
            failures.append((path, r.returncode, r.stderr[-300:]))
    assert not failures, failures


def test_a_format_a_command_does_not_print_is_exit_2_naming_those_it_does(run_cli):
    code, out, err = run_cli("knobs", "postgres", "--format", "sql")
    assert code == EXIT_USAGE and out == "" and "table, tsv, json" in err
    code, out, err = run_cli("probe", "--format", "tsv")
    assert code == EXIT_USAGE and out == "" and "table, json" in err
    code, out, err = run_cli("check", "--format", "table")
    assert code == EXIT_USAGE and out == "" and "text, json, junit" in err
    code, out, _ = run_cli("knobs", "postgres", "--version", "15", "--format", "text")
    assert code == 0 and "shared_buffers" in out  # the old spelling of table still works
