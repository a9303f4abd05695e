"""Every JSON output is a contract: a schema id and version, the tool version, the target, and
a JSON Schema shipped in the package that the document validates against (issue 14)."""

from __future__ import annotations

import json

import pytest

from pmem_advisor import schemas
from tests.rules.machines import make_profile


def _doc(run_cli, *args: str) -> dict:
    code, out, err = run_cli(*args)
    assert code == 0, err
    doc = json.loads(out)
    assert schemas.validate(doc) == doc["schema"]
    # a kind schema must exist for every id we print: the envelope alone proves little
    assert schemas.schema_file(doc["schema"]).is_file(), doc["schema"]
    return doc


def test_recommend_json_is_stamped_and_keeps_its_budget_target(run_cli, tmp_path):
    profile = tmp_path / "probe.json"
    profile.write_text(json.dumps(make_profile("pmem")))
    doc = _doc(run_cli, "recommend", "postgres", "--profile", str(profile), "--version", "18",
               "--json")
    assert doc["schema"] == "pmem-advisor.recommend/1"
    assert doc["target"]["engine"] == "postgres" and doc["target"]["version"].startswith("18")
    assert "memory_bytes" in doc["target"]  # recommend's own target (the budget) survives


def test_config_parse_json_is_stamped(run_cli, tmp_path):
    conf = tmp_path / "postgresql.conf"
    conf.write_text("shared_buffers = 1GB\nwork_mem = '8MB'\n")
    doc = _doc(run_cli, "config", "parse", str(conf), "--json")
    assert doc["schema"] == "pmem-advisor.config-parse/1"
    assert doc["target"]["engine"] == "postgres"
    assert {s["name"] for s in doc["settings"]} == {"shared_buffers", "work_mem"}


def test_instances_json_is_stamped(run_cli):
    doc = _doc(run_cli, "instances", "list", "--json")
    assert doc["schema"] == "pmem-advisor.instances/1" and isinstance(doc["instances"], list)
    doc = _doc(run_cli, "instances", "reap", "--json")
    assert doc["schema"] == "pmem-advisor.instances-reaped/1" and isinstance(doc["reaped"], list)


def test_summary_json_is_stamped(tmp_path):
    from pmem_advisor.report.build import write_reports
    from tests.report.test_build import _tuned_study

    write_reports(_tuned_study(tmp_path, trials=4, repeats=2), tmp_path / "out")
    doc = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert schemas.validate(doc) == "pmem-advisor.tune-summary/1"
    assert doc["target"]["engine"] in ("postgres", "mysql")


@pytest.mark.parametrize("schema_id", schemas.known_ids())
def test_every_shipped_kind_rejects_a_document_of_another_kind(schema_id):
    import jsonschema

    with pytest.raises(jsonschema.ValidationError):
        schemas.validate({"schema": schema_id, "tool_version": "0"})


def test_workload_list_json_is_stamped(run_cli):
    doc = _doc(run_cli, "workload", "list", "--json")
    assert doc["schema"] == "pmem-advisor.workloads/1"
    assert "pgbench-tpcb" in {w["name"] for w in doc["workloads"]}


def test_report_prints_its_outcome_on_stdout(run_cli, tmp_path):
    """The verdict and the file are the result of tune/report: stdout; notes go to stderr."""
    from pmem_advisor.report.build import write_reports
    from tests.report.test_build import _tuned_study

    out_dir = tmp_path / "out"
    study = _tuned_study(tmp_path, trials=4, repeats=2)
    write_reports(study, out_dir)
    url = f"sqlite:///{tmp_path / 'study.db'}"
    code, out, err = run_cli("report", str(out_dir), "--storage", url, "--study", study.study_name)
    assert code == 0, err
    assert "verdict:" in out and "emitted:" in out
    assert "verdict:" not in err and "rebuilt the report" in err


@pytest.mark.parametrize("engine,setting", [("postgres", "fsync=off"),
                                            ("mysql", "innodb_flush_log_at_trx_commit=0")])
def test_config_render_refuses_a_durability_risk_without_allow_unsafe(run_cli, engine, setting):
    """What we write must pass our own check: render refuses what CK001 would fail."""
    code, out, err = run_cli("config", "render", engine, "--set", setting)
    assert code == 2 and out == "" and "--allow-unsafe" in err and "Traceback" not in err
    code, out, err = run_cli("config", "render", engine, "--set", setting, "--allow-unsafe")
    assert code == 0 and "UNSAFE" in out and "UNSAFE" in err
    code, out, _ = run_cli("config", "render", engine, "--set", setting.split("=")[0] + "=1"
                           if engine == "mysql" else "fsync=on")
    assert code == 0 and "UNSAFE" not in out
