"""A bench target between two arms asked of the real server (here the synthetic one plays
it): each arm's pick at its budget in several seeds, measured interleaved, ours against theirs
paired by seed and round."""

from __future__ import annotations

import json

import pytest

from benchmarks import real_target
from benchmarks.harness import dataset

from .synthetic import SyntheticEvaluator, make_dataset

PEAK = {"x": 70, "y": 30.0, "mode": "b"}
LOW = {"x": 10, "y": 90.0, "mode": "a"}


def _trial(arm, seed, n, tps, params):
    return {"arm": arm, "seed": seed, "trial": n, "ok": True, "throughput_tps": tps,
            "params": params, "init_params": {}}


RESULT = {"name": "syn-pg", "arms": [{"name": "pmem-advisor"}, {"name": "smac"}], "trials": [
    _trial("pmem-advisor", 0, 1, 1000.0, LOW),
    _trial("pmem-advisor", 0, 4, 1500.0, PEAK),       # its best within 5
    _trial("pmem-advisor", 0, 6, 9999.0, LOW),        # after its budget
    _trial("pmem-advisor", 1, 2, 1500.0, PEAK),
    _trial("pmem-advisor", 2, 3, 1400.0, PEAK),
    _trial("smac", 0, 40, 1600.0, LOW),               # the surrogate over-predicted it
    _trial("smac", 1, 12, 1700.0, LOW),
    _trial("smac", 2, 20, 1500.0, PEAK),              # the same pick as ours
    _trial("smac", 3, 20, 1500.0, PEAK),              # a seed ours has no trial in
]}


def test_each_arm_s_pick_is_its_best_within_its_budget_per_seed():
    ours = real_target.picks(RESULT, "pmem-advisor", 5, [0, 1, 2, 3])
    theirs = real_target.picks(RESULT, "smac", 50, [0, 1, 2, 3])
    assert {s: c.config.params for s, c in ours.items()} == {0: PEAK, 1: PEAK, 2: PEAK}
    assert theirs[0].config.params == LOW and set(theirs) == {0, 1, 2, 3}
    assert real_target.picks(RESULT, "smac", 10, [0]) == {}


def test_the_real_server_decides_paired_by_seed_and_round():
    ours = real_target.picks(RESULT, "pmem-advisor", 5, [0, 1, 2, 3])
    theirs = real_target.picks(RESULT, "smac", 50, [0, 1, 2, 3])
    ev = SyntheticEvaluator(noise=0.02)
    out = real_target.check(ev, ours, theirs, 3, labels=("pmem-advisor@5", "smac@50"))
    # two distinct configs over three seeds, each run once per round
    assert len(ev.calls) == 6 and real_target.seeds_of(out) == [0, 1, 2]
    assert out["verdict"]["n_a"] == 9
    assert [s["same_config"] for s in out["per_seed"]] == [False, False, True]
    assert out["verdict"]["decision"] == "better" and out["verdict"]["gain_pct"] > 20
    line = real_target.summary(out)
    assert "(p 0.00" in line and "ours faster on these picks" in line
    # the seed is the unit of the general claim: two differing seeds of three test nothing
    # seed 2's two picks are one config: alike, not ours ahead
    assert "ours ahead in 2 of 3 seeds, 1 with the same pick (seed by seed p" in line
    assert line.startswith("on the real server, pmem-advisor@5 against smac@50 (each one's "
                           "pick in seeds 0, 1, 2; 3 interleaved rounds): +")


def test_equal_picks_are_no_significant_difference_and_the_surrogate_s_word_is_beside_it():
    ours = real_target.picks(RESULT, "pmem-advisor", 5, [2])
    theirs = real_target.picks(RESULT, "smac", 50, [2])
    out = real_target.check(SyntheticEvaluator(noise=0.05, seed=3), ours, theirs, 3,
                            labels=("ours@5", "theirs@50"), predict=lambda c: 1000.0)
    assert "no significant difference" in real_target.summary(out)
    assert "the surrogate had said 1.00x" in real_target.summary(out)


def test_failed_runs_drop_their_pairs_and_too_few_are_said():
    ours = real_target.picks(RESULT, "pmem-advisor", 5, [0])
    theirs = real_target.picks(RESULT, "smac", 50, [0])
    out = real_target.check(SyntheticEvaluator(noise=0, fail_above=60), ours, theirs, 3,
                            labels=("a@5", "b@50"))
    assert out["verdict"]["n_a"] == 0 and out["failures"]
    assert "too few paired runs to compare (0)" in real_target.summary(out)


def test_make_bench_reads_the_committed_check_back(tmp_path):
    ours = real_target.picks(RESULT, "pmem-advisor", 5, [0, 1])
    theirs = real_target.picks(RESULT, "smac", 50, [0, 1])
    out = real_target.check(SyntheticEvaluator(noise=0.02), ours, theirs, 3,
                            labels=("pmem-advisor@5", "smac@50"))
    dataset.write_json(tmp_path / "syn-pg.real-target.json", out)
    assert real_target.summary_line("syn-pg", tmp_path) == real_target.summary(out)
    assert real_target.summary_line("absent", tmp_path) is None


@pytest.mark.parametrize("args, said", [
    (["--ours", "pmem-advisor"], "ARM@N"),
    (["--theirs", "smac@x"], "ARM@N"),
    (["--seeds", "a-b"], "--seeds"),
    (["--seeds", "0", "--rounds", "2"], ">= 3"),
    (["--seeds", "9"], "no pick"),
    (["--results", "absent.json"], "cannot read"),
    (["--data-dir", "absent.json"], "no dataset for syn-pg"),
    (["--results", "list.json"], "has no scenario 'syn-pg'"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_server(tmp_path, capsys, args, said):
    make_dataset(tmp_path, "syn-pg", rows=30)
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"scenarios": [RESULT]}))
    argv = ["syn-pg", "--results", str(results), "--data-dir", str(tmp_path), *args]
    (tmp_path / "list.json").write_text("[]")  # JSON, but not a results.json
    argv = [a if a not in ("absent.json", "list.json") else str(tmp_path / a) for a in argv]
    assert real_target.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and said in err[0]


@pytest.mark.parametrize("ours, decision", [([120.0, 121.0, 119.0], "better"),
                                            ([110.0, 100.0, 90.0], "none"),
                                            ([80.0, 81.0, 79.0], "worse")])
def test_seed_by_seed_the_unit_is_the_seed_s_pair_of_medians(ours, decision):
    result = {"per_seed": [{"ours": {"median": m}, "theirs": {"median": 100.0}} for m in ours]}
    v = real_target.by_seed(result)
    assert v["decision"] == decision and v["n_a"] == 3


def test_make_bench_prints_the_committed_check_under_its_targets(tmp_path, capsys):
    from benchmarks import run

    make_dataset(tmp_path, "syn-pg", rows=60)
    ours = real_target.picks(RESULT, "pmem-advisor", 5, [0, 1])
    theirs = real_target.picks(RESULT, "smac", 50, [0, 1])
    out = real_target.check(SyntheticEvaluator(noise=0.02), ours, theirs, 3,
                            labels=("pmem-advisor@5", "smac@50"))
    dataset.write_json(tmp_path / "syn-pg.real-target.json", out)
    assert run.main(["--data-dir", str(tmp_path), "--out", str(tmp_path / "out"), "--seeds",
                     "1", "--budgets", "5", "--jobs", "1", "--no-safe-ceiling", "--no-plot",
                     "--arms", "default,rules,pmem-advisor"]) == 0
    printed = capsys.readouterr().out
    line = real_target.summary(out)
    assert line in printed and printed.index("target rules-only") < printed.index(line)


def _saved_check(seeds, rounds=3):
    ours = real_target.picks(RESULT, "pmem-advisor", 5, seeds)
    theirs = real_target.picks(RESULT, "smac", 50, seeds)
    out = real_target.check(SyntheticEvaluator(noise=0.02, seed=seeds[0]), ours, theirs,
                            rounds, labels=("pmem-advisor@5", "smac@50"))
    return {**out, "scenario": "syn-pg"}


def test_checks_of_other_seeds_combine_into_one_paired_as_they_ran(tmp_path, capsys):
    first, second = _saved_check([1, 0]), _saved_check([2])
    both = real_target.combine([first, second])
    assert real_target.seeds_of(both) == [0, 1, 2]
    assert both["verdict"]["n_a"] == first["verdict"]["n_a"] + second["verdict"]["n_a"] == 9
    assert both["verdict"] == real_target.by_round(both["per_seed"])
    assert "3 interleaved rounds, 2 runs combined)" in real_target.summary(both)
    paths = []
    for i, part in enumerate((first, second)):
        paths.append(tmp_path / f"{i}.json")
        dataset.write_json(paths[-1], part)
    out = tmp_path / "both.json"
    assert real_target.main(["syn-pg", "--combine", *map(str, paths), "--out", str(out)]) == 0
    assert real_target.seeds_of(json.loads(out.read_text())) == [0, 1, 2]
    assert real_target.summary(both) in capsys.readouterr().out


def test_a_combined_check_combined_again_counts_every_run_it_came_from():
    twice = real_target.combine([_saved_check([0]), _saved_check([1])])
    thrice = real_target.combine([twice, _saved_check([2])])
    assert real_target.seeds_of(thrice) == [0, 1, 2]
    assert "3 interleaved rounds, 3 runs combined)" in real_target.summary(thrice)


@pytest.mark.parametrize("other, said", [
    ({"rounds": 4}, "must share the scenario, both arms and the rounds"),
    ({"theirs": "tpe@50"}, "must share"),
    ({"per_seed": _saved_check([0])["per_seed"]}, "seed 0 is in more than one check"),
])
def test_checks_that_do_not_belong_together_are_not_combined(other, said):
    from pmem_advisor.errors import UsageError

    with pytest.raises(UsageError, match=said):
        real_target.combine([_saved_check([0]), {**_saved_check([1]), **other}])


def test_a_file_that_is_not_a_check_of_the_scenario_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    dataset.write_json(bad, {**_saved_check([0]), "scenario": "another"})
    assert real_target.main(["syn-pg", "--combine", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: cannot combine {bad}: not a check")


def test_a_seed_whose_pick_never_ran_is_not_counted_as_ahead():
    def seed(n, ours, theirs):
        return {"seed": n, "same_config": False,
                "ours": {"runs": ours, "median": _median(ours), "predicted": None},
                "theirs": {"runs": theirs, "median": _median(theirs), "predicted": None}}

    per_seed = [seed(0, [110.0, 112.0, 111.0], [100.0, 101.0, 99.0]),
                seed(1, [90.0, 91.0, 92.0], [100.0, 99.0, 101.0]),
                seed(2, [None, None, None], [None, None, None])]
    result = {"ours": "a@5", "theirs": "b@50", "rounds": 3, "per_seed": per_seed,
              "verdict": real_target.by_round(per_seed)}
    assert "ours ahead in 1 of 2 seeds" in real_target.summary(result)


def _median(runs):
    ok = [r for r in runs if r is not None]
    return sorted(ok)[len(ok) // 2] if ok else None
