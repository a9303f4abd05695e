"""The real validation of `make bench`: each arm's final config picked from the run, measured
interleaved and repeated, and the surrogate's ranking compared with what was measured (here on
the synthetic server, which plays the real one)."""

from __future__ import annotations

import pytest

from benchmarks import validate
from benchmarks.harness import surrogate
from pmem_advisor.tuner.evaluator import TrialConfig

from .synthetic import SyntheticEvaluator, make_dataset


def _trial(arm, seed, n, tps, **params):
    return {"arm": arm, "seed": seed, "trial": n, "ok": True, "throughput_tps": tps,
            "params": params, "init_params": {}}


RESULT = {"name": "syn-pg", "arms": [{"name": a} for a in ("default", "rules", "tpe", "random",
                                                          "smac")],
          "trials": [
              _trial("tpe", 0, 1, 1100.0, x=40, y=20.0, mode="a"),
              _trial("tpe", 0, 3, 1500.0, x=70, y=30.0, mode="b"),   # its best within 10
              _trial("tpe", 0, 11, 9999.0, x=1, y=1.0, mode="a"),    # after the budget
              _trial("tpe", 1, 2, 9999.0, x=2, y=2.0, mode="a"),     # another seed
              _trial("random", 0, 2, 1200.0, x=5, y=90.0, mode="a"),
              _trial("smac", 0, 4, 1500.0, x=70, y=30.0, mode="b"),  # same config as tpe
          ]}


def test_final_configs_are_each_arms_best_within_the_budget_once_per_config():
    fixed = {"default": TrialConfig(), "rules": TrialConfig(params={"x": 50})}
    cands = validate.final_configs(RESULT, budget=10, seed=0, fixed=fixed)
    by_arms = {"/".join(c.arms): c.config.params for c in cands}
    assert by_arms == {"default": {}, "rules": {"x": 50},
                       "tpe/smac": {"x": 70, "y": 30.0, "mode": "b"},
                       "random": {"x": 5, "y": 90.0, "mode": "a"}}


def test_runs_are_interleaved_and_rotated():
    ev = SyntheticEvaluator(noise=0)
    cands = [validate.Candidate(TrialConfig(params={"x": x}), [f"a{x}"]) for x in (10, 40, 70)]
    validate.measure_interleaved(ev, cands, repeats=3)
    order = [c.params["x"] for c in ev.calls]
    assert order == [10, 40, 70, 40, 70, 10, 70, 10, 40]
    assert all(len(c.runs) == 3 for c in cands)


def test_a_failed_run_is_counted_and_said():
    ev = SyntheticEvaluator(noise=0, fail_above=60)
    cands = [validate.Candidate(TrialConfig(params={"x": x}), [f"a{x}"]) for x in (10, 70)]
    validate.measure_interleaved(ev, cands, repeats=3)
    assert cands[1].median() is None and len(cands[1].failures) == 3
    assert "too large" in cands[1].failures[0]
    assert "0/3" in validate.table(cands, cands[0].median()).splitlines()[2]


def test_the_ranking_holds_on_a_learnable_server_and_fails_when_the_server_disagrees(
        tmp_path):
    make_dataset(tmp_path, rows=60)
    data = surrogate.load_scenario("syn-pg", tmp_path)
    cands = validate.candidates(RESULT, data)
    out = validate.validate(cands, data, SyntheticEvaluator(seed=1, noise=0.01), repeats=3)
    a = out["agreement"]
    assert a["held"] is True and a["spearman"] >= validate.HELD_SPEARMAN, a
    assert a["top_real"] == a["top_predicted"] == "tpe/smac"
    assert "held" in a["text"] and "| tpe/smac |" in out["table"]

    class Upside(SyntheticEvaluator):  # a server whose optimum the surrogate never saw
        def true_tps(self, config):
            return 3000.0 - super().true_tps(config)

    out = validate.validate(validate.candidates(RESULT, data), data,
                            Upside(seed=1, noise=0.01), repeats=3)
    assert out["agreement"]["held"] is False and "did NOT hold" in out["agreement"]["text"]


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert validate.main(["syn-pg", "--results", str(tmp_path / "none.json")]) == 2
    assert validate.main(["syn-pg", "--repeats", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)


def test_the_configs_come_from_a_real_bench_results_file(tmp_path):
    # The results.json `make bench` writes, not a hand-made one: every arm of the run is found
    # and each searching arm ends on a config it ran within the budget.
    import json

    from benchmarks import run

    make_dataset(tmp_path, "syn-pg", rows=60)
    out = tmp_path / "out"
    assert run.main(["--data-dir", str(tmp_path), "--out", str(out), "--seeds", "1",
                     "--budgets", "5,10", "--arms", "default,rules,random,tpe,ceiling",
                     "--no-plot"]) == 0
    result = json.loads((out / "results.json").read_text())["scenarios"][0]
    data = surrogate.load_scenario("syn-pg", tmp_path)
    cands = validate.candidates(result, data, budget=10, seed=0)
    arms = {a for c in cands for a in c.arms}
    assert arms == {"default", "rules", "random", "tpe", "ceiling"}
    ran = [t["params"] for t in result["trials"] if t["arm"] == "tpe" and t["trial"] <= 10]
    tpe = next(c for c in cands if "tpe" in c.arms)
    assert tpe.config.params in ran


def test_a_results_file_of_another_shape_is_one_line_and_exit_2_before_any_server(
        tmp_path, capsys):
    import json

    make_dataset(tmp_path, "syn-pg", rows=30)
    bad = tmp_path / "results.json"
    bad.write_text(json.dumps({"scenarios": [{"name": "syn-pg", "arms": [{"arm": "tpe"}]}]}))
    rc = validate.main(["syn-pg", "--results", str(bad), "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: ") and "KeyError" in err[0]


@pytest.mark.parametrize("n", [0, 2])
def test_too_few_configs_is_no_ranking(n):
    cands = [validate.Candidate(TrialConfig(params={"x": i}), [f"a{i}"], predicted=float(i),
                                runs=[float(i)]) for i in range(n)]
    assert validate.agreement(cands)["held"] is None


def _measured(arm, runs):
    return validate.Candidate(TrialConfig(params={"arm": arm}), arm.split("/"), runs=list(runs))


@pytest.mark.parametrize("ours, decision", [
    ([1300, 1290, 1320, 1310, 1305], "best"),          # above every safe arm
    ([800, 820, 790, 810, 805], "below"),              # ~20% under tpe's in every round
    ([1150, 880, 990, 930, 1210], "within-noise"),     # under tpe's median, not every round
])
def test_our_config_is_measured_against_the_best_safe_arm_paired_by_round(ours, decision):
    cands = [_measured("default", [600, 610, 590, 605, 600]),
             _measured("tpe/random", [1000, 1010, 990, 1005, 1000]),
             _measured("pmem-advisor", ours),
             _measured("ceiling", [2000, 2100, 1990, 2050, 2000])]  # unsafe: never the bar
    out = validate.versus_best(cands)
    assert out["decision"] == decision, out
    if decision != "best":
        assert out["best"] == "tpe/random" and "paired over 5 rounds" in out["text"]
        assert ("below" in out["text"]) == (decision == "below")


def test_a_failed_round_drops_out_of_the_pairing_and_no_runs_is_said():
    cands = [_measured("tpe", [1000, 1010, 990]), _measured("pmem-advisor", [800, None, 810])]
    out = validate.versus_best(cands)
    assert out["n_a"] == 2
    assert validate.versus_best([_measured("tpe", [1000, 990]),
                                 _measured("pmem-advisor", [None, None])])["decision"] is None


def test_make_bench_reads_the_committed_validation_back(tmp_path):
    make_dataset(tmp_path, rows=60)
    data = surrogate.load_scenario("syn-pg", tmp_path)
    out = validate.validate(validate.candidates(RESULT, data), data,
                            SyntheticEvaluator(seed=1, noise=0.01), repeats=3)
    assert out["versus_best"]["decision"] is None  # RESULT has no pmem-advisor arm: said
    assert "no completed runs" in out["versus_best"]["text"]
    from benchmarks.harness import dataset
    dataset.write_json(tmp_path / "syn-pg.validation.json", out)
    line = validate.summary_line("syn-pg", tmp_path)
    assert line.startswith("real validation (syn-pg.validation.json, budget 10, 3 interleaved")
    assert out["agreement"]["text"] in line
    assert validate.summary_line("absent", tmp_path) is None


def test_a_missing_dataset_is_one_line_and_exit_2_before_any_server(tmp_path, capsys):
    import json

    results = tmp_path / "results.json"
    results.write_text(json.dumps({"scenarios": [RESULT]}))
    rc = validate.main(["syn-pg", "--results", str(results), "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: no dataset for syn-pg")
