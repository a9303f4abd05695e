import json
import math

import pytest

from benchmarks.studies.turn_length import main, summarise

from ..demo_tools import assert_bad_input, demo_study


def _row(rnd, turn_s, tuned, rules):
    return {"round": rnd, "turn_s": turn_s, "wall": 95.0,
            "tps": [sum(tuned) / len(tuned), sum(rules) / len(rules), 1000.0],
            "turn_tps": [tuned, rules, [1000.0] * len(tuned)]}


def test_the_within_round_error_comes_from_the_turn_cycles_and_the_spread_from_the_rounds():
    # 1 s turns: tuned 10% above rules-only in every cycle; 4 s turns: the cycles disagree
    rows = [_row(r, 1, [1100.0, 1100.0, 1100.0, 1100.0], [1000.0] * 4) for r in range(3)]
    rows += [_row(r, 4, [1300.0, 900.0], [1000.0, 1000.0]) for r in range(3)]
    rows.append({**_row(9, 4, [1.0, 1.0], [1.0, 1.0]), "tps": [None, 1000.0, 1000.0]})
    out = summarise(rows)["turns"]
    assert out["1"]["rounds"] == 3 and out["1"]["gain_pct"] == 10.0
    assert out["1"]["between_rounds_pct"] == 0.0 and out["1"]["within_round_pct"] == 0.0
    d = [math.log(1.3), math.log(0.9)]
    sd = abs(d[0] - d[1]) / math.sqrt(2)
    assert out["4"]["rounds"] == 3  # the failed round is left out
    assert out["4"]["within_round_pct"] == round(100 * sd / math.sqrt(2), 1)


def test_summarise_writes_the_json_and_a_bad_file_is_a_one_line_error(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(json.dumps(_row(r, 1, [1100.0, 1000.0], [1000.0, 1000.0]))
                              for r in range(2)) + "\n")
    summary = tmp_path / "s.json"
    assert main(["--summarise", str(rows), "--json", str(summary)]) == 0
    assert json.loads(summary.read_text())["turns"]["1"]["rounds"] == 2
    capsys.readouterr()
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    assert main(["--summarise", str(tmp_path / "bad.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


@pytest.mark.parametrize("args, said", [
    (["--study", "absent.db", "--out", "rows.jsonl"], "is not a file"),
    (["--study", "plain.txt", "--out", "rows.jsonl"], "is not a study"),
    (["--study", "empty.db", "--out", "rows.jsonl"], "has no verdict over tuned"),
    (["--study", "empty.db"], "--study and --out are needed"),
    (["--study", "empty.db", "--out", "rows.jsonl", "--turns", "1,x"], "whole seconds"),
    (["--study", "empty.db", "--out", "rows.jsonl", "--turns", "0"], "at least 1 s"),
    (["--study", "empty.db", "--out", "rows.jsonl", "--rounds", "1"], "at least 2"),
    (["--summarise", "other.jsonl"], "holds no rows of benchmarks.studies.turn_length"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_server(tmp_path, capsys, monkeypatch,
                                                            args, said):
    from benchmarks.studies import turn_length

    assert_bad_input(turn_length, tmp_path, capsys, monkeypatch, args, said)


def test_the_configs_are_the_verdict_s_three(tmp_path):
    from benchmarks.studies.turn_length import finalists
    from pmem_advisor.tuner.verdict import VERDICT_ATTR

    study = demo_study(tmp_path / "study.db", [("default", 16384, 1000.0), ("rules", 65536, 1001.0),
                                               ("search", 4096, 1002.0), ("search", 1600, 1003.0)])
    study.set_user_attr(VERDICT_ATTR, {"trials": {"tuned": 3, "rules": 1, "default": 0}})
    got = finalists(tmp_path / "study.db")
    assert [c.params["shared_buffers"] for c in got] == [1600, 65536, 16384]


def test_each_round_runs_every_turn_length_in_rotating_order(tmp_path, monkeypatch):
    from benchmarks.studies import turn_length
    from pmem_advisor.tuner.verdict import VERDICT_ATTR

    from ..demo_tools import with_fake_demo

    ev = with_fake_demo(monkeypatch, {1600: 1100.0, 65536: 1000.0, 16384: 900.0})
    study = demo_study(tmp_path / "study.db", [("default", 16384, 1.0), ("rules", 65536, 1.0),
                                               ("search", 1600, 1.0)])
    study.set_user_attr(VERDICT_ATTR, {"trials": {"tuned": 2, "rules": 1, "default": 0}})
    rows_path = tmp_path / "rows.jsonl"
    assert turn_length.main(["--study", str(tmp_path / "study.db"), "--out", str(rows_path),
                             "--turns", "1,4", "--rounds", "2"]) == 0
    rows = [json.loads(x) for x in rows_path.read_text().splitlines()]
    assert [(r["round"], r["turn_s"]) for r in rows] == [(0, 1), (0, 4), (1, 4), (1, 1)]
    assert all(r["tps"] == [1100.0, 1000.0, 900.0] for r in rows)
    assert [len(r["turn_tps"][0]) for r in rows] == [28, 7, 7, 28]
    assert ev.calls[0] == ("one", [16384], 28)  # the golden copy, from the defaults
    assert all(c[1] == [1600, 65536, 16384] for c in ev.calls[1:]) and ev.closed
