import json
import math

from benchmarks.turn_length import main, summarise


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
