"""pmem_advisor.api without the CLI: the objects the CLI renders, the errors it maps, and the
docs/api.md example run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)


def test_the_documented_example_runs_without_the_cli():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert blocks, "docs/api.md has no python example"
    r = _run(blocks[0])
    assert r.returncode == 0, r.stderr
    assert "refused: --memory 16: a bare number is bytes" in r.stdout
    assert "exit 2" in r.stdout


def test_recommend_matches_the_cli_json(run_cli):
    code = ("import json, sys\nfrom pmem_advisor import api\n"
            "rec = api.recommend('postgres', memory='8G', clients=40)\n"
            "print(json.dumps({s.name: s.text for s in rec.settings}))\n"
            "assert 'typer' not in sys.modules and not [m for m in sys.modules "
            "if m.startswith('pmem_advisor.cli')]\n")
    r = _run(code)
    assert r.returncode == 0, r.stderr
    import json

    from_api = json.loads(r.stdout)
    rc, out, _ = run_cli("recommend", "postgres", "--memory", "8G", "--clients", "40", "--json")
    assert rc == 0
    from_cli = {s["name"]: s["value"] for s in json.loads(out)["settings"]}
    assert from_api.keys() == from_cli.keys()


@pytest.mark.parametrize("options, error, code", [
    ({"memory": "12"}, "UsageError", 2),
    ({"profile": "/nonexistent/profile.json"}, "InputError", 2),
    ({"profile": "p.json", "root": "/"}, "UsageError", 2),
])
def test_bad_input_raises_the_typed_error_the_cli_maps(options, error, code):
    from pmem_advisor import api, errors

    with pytest.raises(errors.UsageError) as e:
        api.recommend("postgres", **options)
    assert type(e.value).__name__ == error
    assert e.value.exit_code == code


def test_check_finds_a_durability_risk_in_a_recommended_file(tmp_path):
    from pmem_advisor import api

    rec = api.recommend("postgres", memory="8G")
    conf = tmp_path / "postgresql.conf"
    conf.write_text(api.config_text(rec) + "fsync = off\n")
    report = api.check([str(conf)], memory="8G", version="16", no_measure=True, project=False)
    risk = [f for f in report.findings if f.severity == "fail" and f.key == "fsync"]
    assert risk and risk[0].file == str(conf) and risk[0].line is not None, report.findings
    assert report.exit_code == 1  # what the CLI exits with
    conf.write_text(api.config_text(rec))
    clean = api.check([str(conf)], memory="8G", version="16", no_measure=True, project=False)
    assert not [f for f in clean.findings if f.severity == "fail"], clean.findings


# A my.cnf with a durability risk, a cache over the host's RAM and a plain setting: findings of
# every severity, located at their lines.
MYCNF = ("[mysqld]\ninnodb_flush_log_at_trx_commit = 0\ninnodb_buffer_pool_size = 64G\n"
         "max_connections = 100\n")


def test_check_is_the_gate_the_cli_renders(tmp_path, run_cli):
    """One entry into the rules: api.check returns the report `check --format json` prints,
    for the same file and flags, the engine given as the first argument on both sides."""
    import json

    cnf = tmp_path / "my.cnf"
    cnf.write_text(MYCNF)
    code = ("import json, sys\nfrom pmem_advisor import api\n"
            f"r = api.check(['mysql', {str(cnf)!r}], version='8.4', memory='16G', "
            "no_measure=True, project=False)\n"
            "print(json.dumps({'data': r.to_json(), 'target': r.target, "
            "'exit': r.exit_code}, default=str))\n"
            "assert 'typer' not in sys.modules and not [m for m in sys.modules "
            "if m.startswith('pmem_advisor.cli')]\n")
    r = _run(code)
    assert r.returncode == 0, r.stderr
    from_api = json.loads(r.stdout)
    rc, out, _ = run_cli("check", "mysql", str(cnf), "--version", "8.4", "--memory", "16G",
                         "--no-measure", "--no-project", "--format", "json")
    from_cli = json.loads(out)
    assert rc == from_api["exit"] == 1
    assert from_api["data"]["findings"], "the file has findings to compare"
    assert any(f["severity"] == "fail" and f["line"] == 2 for f in from_api["data"]["findings"])
    assert from_cli["findings"] == from_api["data"]["findings"]
    for key, value in from_api["data"].items():
        assert from_cli[key] == value, key
    assert from_cli["target"]["flavour"] == from_api["target"]["flavour"] == "mysql"


def test_check_bad_input_raises_the_typed_error(tmp_path):
    from pmem_advisor import api, errors

    with pytest.raises(errors.UsageError) as e:
        api.check(["mysql", str(tmp_path / "no-such.cnf")], db="postgres", project=False)
    assert "contradict" in e.value.message and e.value.exit_code == 2
    with pytest.raises(errors.UsageError) as e:
        api.check([str(tmp_path / "no-such.cnf")], project=False)
    assert e.value.exit_code == 2
