"""The entry point end to end on the synthetic evaluator, and the real tuner's loop as an arm."""

from __future__ import annotations

import json

import pytest

from benchmarks import run
from benchmarks.harness.advisor_arm import AdvisorArm
from benchmarks.harness.arms import DefaultArm
from benchmarks.harness.runner import run_interleaved
from benchmarks.harness.scenarios import ScenarioContext, harness_space, run_tuner
from pmem_advisor.errors import EnvironmentProblem

from .synthetic import SyntheticEvaluator, synthetic_space


def tuner_space():
    from pmem_advisor.tuner.space import SearchSpace, SpaceKnob

    knobs = [SpaceKnob("x", "int", "reload", 10, low=1, high=100),
             SpaceKnob("mode", "enum", "restart", "a", choices=["a", "b"])]
    return SearchSpace("postgres", "postgresql", "18", knobs,
                       default_params={"x": 10, "mode": "a"},
                       rules_params={"x": 60, "mode": "a"})


def real_tuner(evaluator, budget, seed):
    run_tuner(evaluator, tuner_space(), {"engine": "postgres", "flavour": "postgresql",
                                         "workload": "synthetic"}, budget, seed)


def fake_open(evaluators, fail=()):
    def open_ctx(scn, settings, **kw):
        if scn.name in fail:
            raise EnvironmentProblem(f"no server for {scn.name}")
        ev = SyntheticEvaluator(seed=len(evaluators))
        evaluators.append(ev)
        return ScenarioContext(scn, ev, synthetic_space(), advisor_loop=real_tuner)

    return open_ctx


def test_the_real_tuner_runs_as_an_interleaved_arm_with_its_baselines_first():
    ev = SyntheticEvaluator(noise=0)
    arm = AdvisorArm(real_tuner, engine="postgres", flavour="postgresql", version="18")
    records, statuses = run_interleaved(ev, synthetic_space(), [DefaultArm(), arm],
                                        budget=5, seeds=[0])
    mine = [r for r in records if r.arm == "pmem-advisor"]
    assert len(mine) == 5 and statuses[1].errors == []
    assert mine[0].config.params == {}  # trial 0: the server defaults
    assert mine[1].config.params == {"x": 60, "mode": "a"}  # trial 1: rules-only


def test_an_arm_without_its_tuner_says_why():
    arm = AdvisorArm(None, "rules failed: no profile")
    arm.prepare(synthetic_space())
    assert arm.unavailable == "rules failed: no profile"


def test_smoke_run_prints_the_table_and_writes_json(tmp_path, capsys):
    evaluators: list = []
    out = tmp_path / "out"
    code = run.main(["--smoke", "--out", str(out), "--json", str(tmp_path / "r.json"),
                     "--no-plot"], open_ctx=fake_open(evaluators))
    stdout = capsys.readouterr().out
    assert code == 0
    assert len(evaluators) == 1 and evaluators[0].closed
    assert "### pg18-pgbench-tpcb-shm" in stdout and "| pmem-advisor | 3 |" in stdout
    assert "/dev/shm is tmpfs" in stdout  # the emulation note
    data = json.loads((tmp_path / "r.json").read_text())
    arms = {(a["name"], a["budget"]) for a in data["scenarios"][0]["arms"]}
    assert arms == {("default", 1), ("rules", 1), ("tpe", 3), ("pmem-advisor", 3)}
    assert (out / "report.md").read_text().startswith("### pg18-pgbench-tpcb-shm")
    assert data["meta"]["mode"] == "smoke"


def test_full_plan_has_every_arm_budgets_and_seeds():
    settings = run.plan(run.parse_args([]), run.load_data())
    assert settings["arms"] == list(run.ARM_NAMES)
    assert settings["budgets"] == [5, 10, 20, 50] and settings["seeds"] == 3
    assert len(settings["scenarios"]) == 8
    assert {s.placement for s in settings["scenarios"]} == {"shm", "disk"}
    # the unsafe ceiling's settings reach the scenario set-up for both flavours
    assert settings["durability_off"]["postgresql"]["fsync"] is False
    assert settings["durability_off"]["mariadb"]["innodb_flush_log_at_trx_commit"] == 0


def test_a_scenario_that_cannot_run_is_reported_and_the_others_go_on(tmp_path, capsys):
    code = run.main(["--scenario", "pg18-pgbench-tpcb-disk", "--scenario",
                     "pg18-pgbench-tpcb-shm", "--arms", "default,rules", "--seeds", "1",
                     "--out", str(tmp_path), "--no-plot"],
                    open_ctx=fake_open([], fail={"pg18-pgbench-tpcb-disk"}))
    out = capsys.readouterr().out
    assert code == 3
    assert "not run: no server for pg18-pgbench-tpcb-disk" in out
    data = json.loads((tmp_path / "results.json").read_text())
    assert [s["name"] for s in data["scenarios"]] == ["pg18-pgbench-tpcb-shm",
                                                      "pg18-pgbench-tpcb-disk"]


@pytest.mark.parametrize("argv, message", [
    (["--scenario", "nope"], "unknown scenario nope"),
    (["--arms", "default,gpt"], "unknown arm gpt"),
    (["--seeds", "0"], "--seeds must be >= 1"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, tmp_path, capsys):
    code = run.main([*argv, "--out", str(tmp_path)], open_ctx=fake_open([]))
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


def test_harness_space_mirrors_the_tuner_space():
    space = harness_space(tuner_space(), rules=None, rules_note="x", durability_off={},
                          source="t")
    assert [(p.name, p.kind) for p in space.params] == [("x", "int"), ("mode", "categorical")]
    assert space.params[1].choices == ("a", "b")


def test_absurd_catalog_bounds_are_capped_for_every_arm_alike():
    from pmem_advisor.tuner.space import SearchSpace, SpaceKnob

    huge = SearchSpace("postgres", "postgresql", "18",
                       [SpaceKnob("random_page_cost", "real", "reload", 4.0, low=0.0,
                                  high=1.79e308)])
    space = harness_space(huge, rules=None, rules_note="", durability_off={}, source="t")
    assert space.params[0].high == 2.0**53


def test_smac_arm_searches_inside_wide_capped_bounds():
    pytest.importorskip("smac")
    from benchmarks.harness.arms import SmacArm
    from benchmarks.harness.space import Param, SearchSpace

    space = SearchSpace((Param("x", "int", low=1, high=2**53),
                         Param("r", "float", low=0.0, high=2.0**53),
                         Param("m", "categorical", choices=(False, True))))
    records, statuses = run_interleaved(SyntheticEvaluator(), space, [SmacArm()], budget=3,
                                        seeds=[0])
    assert statuses[0].errors == [] and len(records) == 3
    for r in records:
        assert 1 <= r.config.params["x"] <= 2**53 and r.config.params["m"] in (False, True)
