import json
import math

import pytest

from benchmarks.studies.search_pairing import main, summarise

from ..demo_tools import assert_bad_input, demo_study


def _row(rnd, mode, ratios, wall=150.0):
    return {"round": rnd, "mode": mode, "trials": [1, 2, 3], "ratios": ratios,
            "seconds": 28 if mode == "sequential" else 14, "turn_s": 1, "wall": wall}


def test_each_way_gets_its_pooled_error_and_each_candidate_s_gain():
    # paired rounds see candidate 1 10% ahead with a small error; sequential rounds swing 15%
    rows = [_row(0, "sequential", [1.00, 1.10]), _row(0, "paired", [1.00, 1.11]),
            _row(1, "paired", [1.01, 1.10]), _row(1, "sequential", [1.15, 0.96])]
    out = summarise(rows)
    seq, paired = out["ways"]["sequential"], out["ways"]["paired"]
    assert seq["error_pct"] > 5 * paired["error_pct"]
    # pooled over the candidates: each candidate's deviations from its own mean, n - 1 each
    d0 = math.log(1.15) - math.log(1.00)
    d1 = math.log(1.10) - math.log(0.96)
    assert seq["error_pct"] == round(100 * math.sqrt((d0 ** 2 + d1 ** 2) / 2 / 2), 1)
    assert paired["gain_pct"] == [round(100 * (math.sqrt(1.01) - 1), 1),
                                  round(100 * (math.sqrt(1.11 * 1.10) - 1), 1)]
    assert seq["rounds"] == paired["rounds"] == 2 and seq["wall_s"] == 150.0


def test_a_round_with_a_failed_candidate_is_left_out_of_its_way():
    rows = [_row(0, "paired", [1.0, 1.1]), _row(1, "paired", [None, 1.2]),
            _row(2, "paired", [1.0, 1.3])]
    assert summarise(rows)["ways"]["paired"]["rounds"] == 2


def test_summarise_writes_the_json(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(json.dumps(_row(r, m, [1.0, 1.1]))
                              for r in range(2) for m in ("sequential", "paired")) + "\n")
    summary = tmp_path / "s.json"
    assert main(["--summarise", str(rows), "--json", str(summary)]) == 0
    assert json.loads(summary.read_text())["ways"]["paired"]["rounds"] == 2


@pytest.mark.parametrize("args, said", [
    (["--study", "absent.db", "--out", "rows.jsonl"], "is not a file"),
    (["--study", "plain.txt", "--out", "rows.jsonl"], "is not a study"),
    (["--study", "empty.db", "--out", "rows.jsonl"], "no measured rules-only trial"),
    (["--study", "empty.db"], "--study and --out are needed"),
    (["--study", "empty.db", "--out", "rows.jsonl", "--rounds", "1"], "at least 2"),
    (["--study", "empty.db", "--out", "rows.jsonl", "--paired-seconds", "1"], "at least 2"),
    (["--summarise", "other.jsonl"], "holds no rows of benchmarks.studies.search_pairing"),
    (["--summarise", "absent.jsonl"], "cannot read"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_server(tmp_path, capsys, monkeypatch,
                                                            args, said):
    from benchmarks.studies import search_pairing

    assert_bad_input(search_pairing, tmp_path, capsys, monkeypatch, args, said)


def test_the_configs_are_rules_only_then_every_measured_search_trial(tmp_path):
    from benchmarks.studies.search_pairing import configs

    demo_study(tmp_path / "study.db", [  # trial 3 failed: no throughput, not a candidate
        ("default", 16384, 1000.0), ("rules", 65536, 1001.0), ("search", 4096, 1002.0),
        ("search", 1600, None), ("search", 800, 1004.0)])
    numbers, got = configs(tmp_path / "study.db")
    assert numbers == [1, 2, 4]
    assert [c.params["shared_buffers"] for c in got] == [65536, 4096, 800]


def test_each_round_measures_both_ways_in_alternating_order_and_ratios_follow_the_candidates(
        tmp_path, monkeypatch):
    from benchmarks.studies import search_pairing

    from ..demo_tools import with_fake_demo

    # rules-only 1000 tps; candidates 1100, 900 and one whose server fails
    ev = with_fake_demo(monkeypatch, {65536: 1000.0, 4096: 1100.0, 1600: 900.0, 800: None})
    demo_study(tmp_path / "study.db", [("rules", 65536, 1000.0), ("search", 4096, 1.0),
                                       ("search", 1600, 1.0), ("search", 800, 1.0)])
    rows_path = tmp_path / "rows.jsonl"
    assert search_pairing.main(["--study", str(tmp_path / "study.db"), "--out", str(rows_path),
                                "--rounds", "2", "--paired-seconds", "6"]) == 0
    rows = [json.loads(x) for x in rows_path.read_text().splitlines()]
    assert [(r["round"], r["mode"]) for r in rows] == [
        (0, "sequential"), (0, "paired"), (1, "paired"), (1, "sequential")]
    for r in rows:  # in the candidates' order whatever order they ran in
        assert r["ratios"] == [pytest.approx(1.1), pytest.approx(0.9), None]
        assert r["seconds"] == (28 if r["mode"] == "sequential" else 6) and r["turn_s"] == 1
    # one after another: rules-only first, then the candidates, rotating by round
    ones = [c[1][0] for c in ev.calls if c[0] == "one"]
    assert ones == [65536, 4096, 1600, 800, 65536, 1600, 800, 4096]
    # side by side: each candidate beside rules-only, at the paired length
    assert all(c[1][0] == 65536 and c[2] == 6 for c in ev.calls if c[0] == "turns")
    assert all(c[2] == 28 for c in ev.calls if c[0] == "one")
    assert ev.closed
    assert ev.calls[0][0] == "one"  # the golden copy comes before any side-by-side run
