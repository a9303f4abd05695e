"""Markdown table, JSON shape and the convergence plot."""

from __future__ import annotations

import json

from benchmarks.harness import report, stats
from benchmarks.harness.arms import DefaultArm, OptunaArm, RulesArm, SmacArm
from benchmarks.harness.runner import run_interleaved
from tests.benchmarks.synthetic import SyntheticEvaluator, synthetic_space


def result(monkeypatch=None):
    arms = [DefaultArm(), RulesArm(), OptunaArm("tpe", "tpe"), SmacArm()]
    if monkeypatch is not None:  # SMAC "not installed"
        monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    records, statuses = run_interleaved(SyntheticEvaluator(), synthetic_space(), arms,
                                        budget=4, seeds=[0, 1])
    rows = stats.compute(records, statuses, [2, 4], [0, 1])
    return report.ScenarioResult("syn", "synthetic", [2, 4], [0, 1], records, statuses, rows,
                                 notes=["a note"])


def test_markdown_has_one_row_per_arm_and_budget_and_says_why_an_arm_did_not_run(monkeypatch):
    md = report.markdown(result(monkeypatch))
    lines = md.splitlines()
    assert lines[0] == "### syn: synthetic"
    assert "| arm | budget | best tps median |" in md
    rows = [ln for ln in lines if ln.startswith("| ") and "---" not in ln][1:]
    assert [r.split(" | ")[0][2:] for r in rows] == ["default", "rules", "tpe", "tpe", "smac",
                                                     "smac"]
    assert "not run: SMAC3 is not installed here" in md
    assert "- a note" in md


def test_json_has_the_documented_shape(tmp_path, monkeypatch):
    path = tmp_path / "out.json"
    report.write_json([result(monkeypatch)], path, {"mode": "test"},
                      skipped=[{"name": "gone", "title": "t", "reason": "no mariadb"}])
    data = json.loads(path.read_text())
    scn = data["scenarios"][0]
    assert scn["name"] == "syn"
    for arm in scn["arms"]:
        assert {"name", "budget", "best_tps_median", "best_tps_all"} <= set(arm)
    tpe4 = next(a for a in scn["arms"] if a["name"] == "tpe" and a["budget"] == 4)
    assert len(tpe4["best_tps_all"]) == 2 and tpe4["best_tps_median"] > 0
    assert len(scn["trials"]) == 2 * (1 + 1 + 4)
    assert data["scenarios"][1] == {"name": "gone", "title": "t", "reason": "no mariadb",
                                    "skipped": "no mariadb", "arms": []}


def test_convergence_plot_is_a_png(tmp_path):
    res = result()
    series = report.convergence_series(res)
    assert set(series) == {"tpe", "smac"} and len(series["tpe"]) == 4
    assert all(a[0] <= b[0] for a, b in zip(series["tpe"], series["tpe"][1:], strict=False))
    path = report.plot_convergence(res, tmp_path / "syn.png")
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
