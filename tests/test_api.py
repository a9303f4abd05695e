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


def test_check_finds_a_durability_risk_in_settings():
    from pmem_advisor import api

    rec = api.recommend("postgres", memory="8G")
    settings = {s.name: s.text for s in rec.settings} | {"fsync": "off"}
    found = api.check(rec.facts, settings, source="config", memory_bytes=8 << 30, target=True)
    assert any(f.severity == "fail" and "fsync" in f.subject for f in found), found
