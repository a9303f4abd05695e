"""Advice-only engines (SQL Server, openGauss MOT, Hyrise, VoltDB) on the captured machines.

The machines are the probe goldens (tests/probes/golden/<name>.json, produced from the trees
of tests/probes/machines): one with fsdax PMEM on two sockets, one without any PMEM, and the
devdax, sector and CXL ones where a rule depends on them. Every PMEM finding must cite its
paper section; a machine without PMEM gets the "conditions differ" finding instead of PMEM
advice; destructive steps never touch a mounted namespace.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pmem_advisor.errors import EXIT_USAGE, UsageError
from pmem_advisor.rules import build_facts, recommend
from pmem_advisor.rules.catalog.PM080_advice_conditions_differ import namespace_mounts

GOLDEN = Path(__file__).resolve().parents[1] / "probes" / "golden"
ENGINES = ("sqlserver", "opengauss_mot", "hyrise", "voltdb")
PMEM_MACHINE = "interleaved-2s-fsdax"  # 2 sockets, fsdax pmem0/pmem1 mounted with DAX
PLAIN_MACHINE = "this-vm"  # 1 socket, no PMEM, no CXL
# the rules that give PMEM advice (PM080 states the conditions; PM084 sizes memory anywhere)
PMEM_ADVICE = {"PM081", "PM082", "PM083", "PM085", "PM086", "PM087", "PM088", "PM089",
               "PM090", "PM091"}
# per engine: (rule, a citation its findings carry, words of the finding) on the PMEM machine
EXPECTED = {
    "sqlserver": [("PM081", "K23 Table 5", "406/663/328/173/133"),
                  ("PM081", "sector atomicity", "log:/mnt/pmem1/mssql-log"),
                  ("PM082", "SQL Server 2019+", "hybrid buffer pool"),
                  ("PM083", "K23 §5.1", "lost 37%")],
    "opengauss_mot": [("PM085", "A21 §4.1, Fig. 3", "88 clients"),
                      ("PM086", "A21 §4.1", "44 threads"),
                      ("PM087", "A21 §4.2", "~30% of the database")],
    "hyrise": [("PM088", "D21 §6.1", "5.3x slower"),
               ("PM089", "D21 Table 1", "12.3 s (both sockets)")],
    "voltdb": [("PM090", "K23 §5.1", "only marginally"),
               ("PM083", "K23 §5.1", "marginally")],
}


def golden(name: str) -> dict:
    return json.loads((GOLDEN / f"{name}.json").read_text())


def advise(engine: str, machine: str, **kw):
    return recommend(build_facts(golden(machine), engine=engine, **kw))


def texts(rec, rule: str) -> list[str]:
    return [f"{f.subject} {f.message} {f.fix}" for f in rec.findings if f.rule == rule]


def pmem_args(engine: str) -> dict:
    if engine == "sqlserver":
        return {"data_dir": "/mnt/pmem0/mssql", "wal_dir": "/mnt/pmem1/mssql-log",
                "version": "2019", "clients": 64}
    if engine == "voltdb":
        return {"clients": 64}
    if engine == "hyrise":
        return {"workload": "olap"}
    return {"clients": 88}


@pytest.mark.parametrize("engine", ENGINES)
def test_pmem_machine_gets_cited_findings(engine):
    rec = advise(engine, PMEM_MACHINE, **pmem_args(engine))
    for rule, cite, words in EXPECTED[engine]:
        found = texts(rec, rule)
        assert any(words in t for t in found), (rule, words, found)
        assert any(cite in t for t in found), (rule, cite, found)
    assert "PM080" not in {f.rule for f in rec.findings}  # 2 sockets of App Direct: as measured


@pytest.mark.parametrize("engine", ENGINES)
def test_machine_without_pmem_gets_conditions_differ_not_pmem_advice(engine):
    rec = advise(engine, PLAIN_MACHINE)
    fired = {f.rule for f in rec.findings} | {s.rule for s in rec.os_steps}
    assert not fired & PMEM_ADVICE, fired & PMEM_ADVICE
    pm080 = texts(rec, "PM080")
    assert len(pm080) == 1 and "conditions differ from" in pm080[0], pm080
    assert "has no PMEM" in pm080[0] and "1 socket here where the paper had 2" in pm080[0]


def test_sqlserver_log_on_sector_namespace_is_accepted():
    rec = advise("sqlserver", "sector-btt", data_dir="/mnt/raw/data", wal_dir="/mnt/btt/log")
    log = [f for f in rec.findings if f.rule == "PM081" and f.subject == "log:/mnt/btt/log"]
    assert log and log[0].severity == "info" and "as Microsoft requires" in log[0].message
    assert not any(f.severity == "fail" and f.rule == "PM081" for f in rec.findings)


def test_mot_on_devdax_single_socket():
    rec = advise("opengauss_mot", "devdax-1s")
    steps = [s for s in rec.os_steps if s.rule == "PM085"]
    assert steps and steps[0].destructive and "system-ram dax0.0" in steps[0].command
    assert "DESTRUCTIVE" in steps[0].reason
    assert any("1 socket here" in t for t in texts(rec, "PM080"))
    assert not texts(rec, "PM086")  # nothing to spread over on one socket


def test_hyrise_on_cxl_binds_to_dram_and_says_conditions_differ():
    rec = advise("hyrise", "cxl-expander", workload="olap")
    # PM089 (one socket, as D21 ran Hyrise) wins the NUMA policy over PM088 (DRAM nodes
    # 0-1): both keep it off the CPU-less CXL node 2
    assert [s.command for s in rec.os_steps if s.key == "numa-policy"] == \
        ["numactl --cpunodebind=0 --membind=0 hyriseServer"]
    assert any(c.loser == "PM088" and "--membind=0-1 " in c.loser_value for c in rec.conflicts)
    assert any("CXL memory, not Optane" in t for t in texts(rec, "PM080"))
    assert any("conditions differ" in t for t in texts(rec, "PM088"))


@pytest.mark.parametrize("machine", sorted(p.stem for p in GOLDEN.glob("*.json")))
@pytest.mark.parametrize("engine", ENGINES)
def test_destructive_steps_never_touch_a_mounted_namespace(engine, machine):
    prof = golden(machine)
    facts = build_facts(prof, engine=engine)
    mounted = namespace_mounts(facts)
    for step in recommend(facts).os_steps:
        if step.destructive:
            assert "DESTRUCTIVE" in step.reason.upper(), step
            assert not any(f"-e {ns} " in step.command for ns in mounted), (step, mounted)


# ---- the Engine class ----------------------------------------------------------------
def test_engines_are_registered_as_advice():
    from pmem_advisor.engines.registry import get_engine

    for name in (*ENGINES, "opengauss-mot", "mssql"):
        eng = get_engine(name)
        assert eng.kind == "advice" and not eng.tunable
        assert len(eng.catalog()) == 0


@pytest.mark.parametrize("call", ["find_binary", "validate_by_starting", "evaluator"])
def test_running_an_advice_engine_is_refused_in_one_line(call):
    from pmem_advisor.engines.registry import get_engine

    eng = get_engine("sqlserver")
    args = {"find_binary": (), "validate_by_starting": ("", "/tmp"), "evaluator": (None,)}
    with pytest.raises(UsageError) as e:
        getattr(eng, call)(*args[call])
    assert str(e.value).startswith("advice only: pmem-advisor does not run SQL Server")
    assert "\n" not in str(e.value)
    assert e.value.exit_code == EXIT_USAGE


def test_sqlserver_snippet_is_mssql_conf():
    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.knobs.emit import Header

    rec = advise("sqlserver", PMEM_MACHINE, data_dir="/mnt/pmem0/mssql", version="2022",
                 memory_bytes=8 << 30)
    notes = tuple(f"{s.rule}: {s.command}  # {s.reason}" for s in rec.os_steps)
    text = get_engine("sqlserver").emit([], Header(version="2022", notes=notes,
                                                   steps=tuple(rec.os_steps))).text
    assert "[memory]\nmemorylimitmb = 6553\n" in text
    assert "[traceflag]\ntraceflag0 = 809\n" in text
    assert "3979" not in text  # withheld without --allow-unsafe
    body = text.split("# --- mssql.conf ---\n")[1]
    assert all(line.startswith(("[", "memorylimitmb", "traceflag")) for line in
               body.splitlines()), body


def test_voltdb_snippet_is_deployment_xml():
    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.knobs.emit import Header

    rec = advise("voltdb", PMEM_MACHINE)
    text = get_engine("voltdb").emit([], Header(steps=tuple(rec.os_steps))).text
    body = text.split("# --- deployment.xml ---\n")[1].splitlines()
    assert '<voltdbroot path="/mnt/pmem0/voltdb"/>' in body[0]
    assert body[1] == '<commandlog enabled="true" synchronous="true"/>'


def test_snippet_comes_from_the_steps_data_not_their_wording():
    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.knobs.emit import Header
    from pmem_advisor.rules.model import ConfigLine
    from pmem_advisor.rules.result import Step

    step = Step("PM084", [], "reworded: give SQL Server 512 MB", "why", "sqlserver-memory",
                config=(ConfigLine("mssql.conf", "memory", "memorylimitmb", "512"),))
    text = get_engine("sqlserver").emit([], Header(steps=(step,))).text
    assert text.endswith("# --- mssql.conf ---\n[memory]\nmemorylimitmb = 512\n")
    words = Header(notes=("sudo /opt/mssql/bin/mssql-conf set memory.memorylimitmb 512",))
    assert "[memory]" not in get_engine("sqlserver").emit([], words).text


def test_emit_refuses_settings():
    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.knobs.emit import Setting

    with pytest.raises(UsageError, match="no knob catalog"):
        get_engine("hyrise").emit([Setting("threads", 4)])


# ---- through the CLI (in-process, as tests/rules/test_cli.py) ------------------------
CITED = ("K23 ", "A21 ", "D21 ", "Microsoft")


def cli_args(engine: str) -> list[str]:
    out = []
    for key, value in pmem_args(engine).items():
        out += [f"--{key.replace('_', '-')}", str(value)]
    return out


@pytest.mark.parametrize("engine", ENGINES)
def test_cli_recommend_on_the_pmem_machine_cites_the_papers(run_cli, engine):
    code, out, err = run_cli("recommend", engine, "--profile",
                             str(GOLDEN / f"{PMEM_MACHINE}.json"), *cli_args(engine), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["target"]["engine"] == engine and data["settings"] == []
    ours = [f for f in data["findings"] if f["rule"] in PMEM_ADVICE]
    assert {r for r, _, _ in EXPECTED[engine]} <= {f["rule"] for f in ours}
    for f in ours:  # every PMEM finding names its source
        assert any(c in f["message"] for c in CITED), f


@pytest.mark.parametrize("engine", ENGINES)
def test_cli_recommend_without_pmem_says_conditions_differ(run_cli, engine):
    code, out, err = run_cli("recommend", engine, "--profile",
                             str(GOLDEN / f"{PLAIN_MACHINE}.json"), "--json")
    assert code == 0, err
    data = json.loads(out)
    rules = {f["rule"] for f in data["findings"]} | {s["rule"] for s in data["os_steps"]}
    assert not rules & PMEM_ADVICE, rules
    (pm080,) = [f for f in data["findings"] if f["rule"] == "PM080"]
    assert pm080["severity"] == "warn" and "conditions differ from" in pm080["message"]
    assert "has no PMEM" in pm080["message"]


def test_cli_check_fails_a_sqlserver_log_on_fsdax(run_cli):
    prof = str(GOLDEN / f"{PMEM_MACHINE}.json")
    code, out, err = run_cli("check", "--db", "sqlserver", "--profile", prof, "--data-dir",
                             "/mnt/pmem0/mssql", "--wal-dir", "/mnt/pmem1/log",
                             "--format", "json")
    assert code == 1, err
    fails = [f for f in json.loads(out)["findings"] if f["severity"] == "fail"]
    assert [f["rule"] for f in fails] == ["PM081"] and "sector atomicity" in fails[0]["message"]
    code, out, err = run_cli("check", "--db", "sqlserver", "--profile",
                             str(GOLDEN / "sector-btt.json"), "--data-dir", "/mnt/raw/data",
                             "--wal-dir", "/mnt/btt/log", "--format", "json")
    assert code == 0, err  # the log on the sector namespace passes


@pytest.mark.parametrize("engine", ENGINES)
def test_cli_check_without_pmem_passes_with_the_conditions_warning(run_cli, engine):
    code, out, err = run_cli("check", engine, "--profile",  # the engine as an argument
                             str(GOLDEN / f"{PLAIN_MACHINE}.json"), "--format", "json")
    assert code == 0, err
    found = json.loads(out)["findings"]
    assert [f["rule"] for f in found if f["rule"].startswith(("PM08", "PM09"))] == ["PM080"]


def test_cli_recommend_out_writes_the_mssql_conf_snippet(run_cli, tmp_path):
    target = tmp_path / "mssql.conf"
    code, _, err = run_cli("recommend", "sqlserver", "--profile",
                           str(GOLDEN / f"{PMEM_MACHINE}.json"), "--data-dir",
                           "/mnt/pmem0/mssql", "--version", "2022", "--memory", "8G",
                           "--out", str(target))
    assert code == 0, err
    text = target.read_text()
    assert text.startswith("# advice snippet written by pmem-advisor")
    assert "# PM081 [info] data:/mnt/pmem0/mssql: data files on fsdax" in text
    assert text.endswith("# --- mssql.conf ---\n[memory]\nmemorylimitmb = 6553\n"
                         "[traceflag]\ntraceflag0 = 809\n")


@pytest.mark.parametrize("engine", ["sqlserver", "opengauss-mot"])
def test_cli_tune_is_refused_advice_only(run_cli, engine):
    code, out, err = run_cli("tune", engine, "--workload", "pgbench-tpcb")
    assert code == EXIT_USAGE and out == ""
    assert err.count("\n") == 1 and "advice only: pmem-advisor does not run" in err, err


# ---- check --config: the engines' own files -------------------------------------------
def test_cli_check_config_mssql_conf(run_cli, tmp_path):
    conf = tmp_path / "mssql.conf"
    conf.write_text("[memory]\nmemorylimitmb = 16384\n\n[traceflag]\ntraceflag0 = 809\n"
                    "traceflag1 = 3979\n")
    code, out, err = run_cli("check", "sqlserver", "--profile",
                             str(GOLDEN / f"{PMEM_MACHINE}.json"), "--memory", "8G",
                             "--config", str(conf), "--format", "json")
    assert code == 1, err
    fails = {(f["rule"], f["subject"]) for f in json.loads(out)["findings"]
             if f["severity"] == "fail"}
    assert fails == {("PM082", "traceflag 3979"), ("PM084", "memory.memorylimitmb")}
    conf.write_text("[memory]\nmemorylimitmb = 6553\n[traceflag]\ntraceflag0 = 809\n")
    code, out, err = run_cli("check", "sqlserver", "--profile",
                             str(GOLDEN / f"{PMEM_MACHINE}.json"), "--memory", "8G",
                             "--config", str(conf), "--format", "json")
    assert code == 0, err


def test_cli_check_config_voltdb_deployment_xml(run_cli, tmp_path):
    xml = tmp_path / "deployment.xml"
    xml.write_text('<?xml version="1.0"?>\n<deployment>\n  <cluster sitesperhost="8"/>\n'
                   '  <commandlog enabled="true" synchronous="false">\n'
                   '    <frequency time="1000"/>\n  </commandlog>\n</deployment>\n')
    code, out, err = run_cli("check", "voltdb", "--profile", str(GOLDEN / f"{PLAIN_MACHINE}.json"),
                             "--config", str(xml), "--format", "json")
    assert code == 1, err
    assert [f["rule"] for f in json.loads(out)["findings"] if f["severity"] == "fail"] == \
        ["PM090"]


@pytest.mark.parametrize("engine,text,words", [
    ("sqlserver", "memorylimitmb = 4096\n", "mssql.conf line"),
    ("voltdb", "<deployment><paths>", "not valid XML"),
    ("voltdb", "<config/>", "not <deployment>"),
    ("hyrise", "threads = 4\n", "no config file"),
])
def test_cli_check_config_bad_files_are_one_line_exit_2(run_cli, tmp_path, engine, text, words):
    conf = tmp_path / "cfg"
    conf.write_text(text)
    code, out, err = run_cli("check", engine, "--profile", str(GOLDEN / f"{PLAIN_MACHINE}.json"),
                             "--config", str(conf))
    assert code == EXIT_USAGE and out == ""
    assert err.count("\n") == 1 and words in err, err


def test_cli_config_validate_is_refused_advice_only(run_cli, tmp_path):
    conf = tmp_path / "mssql.conf"
    conf.write_text("[memory]\nmemorylimitmb = 4096\n")
    code, out, err = run_cli("config", "validate", str(conf), "sqlserver")
    assert code == EXIT_USAGE and out == ""
    assert err.count("\n") == 1 and "advice only: pmem-advisor does not run SQL Server" in err


def test_namespace_mounts_tells_partitions_from_other_namespaces():
    from tests.rules.machines import make_profile

    prof = make_profile({"preset": "pmem", "mounts": {
        "/mnt/pmem0": {"device": "/dev/pmem0p1"}, "/mnt/pmem1": {"device": "/dev/pmem10"}}})
    assert namespace_mounts(build_facts(prof, engine="sqlserver")) == {
        "namespace0.0": "/mnt/pmem0"}


@pytest.mark.parametrize("machine,has_pmem", [(PMEM_MACHINE, True), ("hugepage-pool", False)])
def test_cli_check_on_the_captured_machine_trees(run_cli, tmp_path, machine, has_pmem):
    """The same through --root on the captured trees themselves (what the goldens probe)."""
    from tests.probes.machine_builder import build

    root = build(machine, tmp_path / machine)
    args = ["--data-dir", "/mnt/pmem0/pgdata", "--wal-dir", "/mnt/pmem1/wal"] if has_pmem else []
    code, out, err = run_cli("check", "sqlserver", "--root", str(root), *args, "--format", "json")
    found = json.loads(out)["findings"]
    rules = {f["rule"] for f in found}
    if has_pmem:
        assert code == 1 and {"PM081", "PM082"} <= rules and "PM080" not in rules, (code, err)
    else:
        assert code == 0 and not rules & PMEM_ADVICE and "PM080" in rules, (code, err)
