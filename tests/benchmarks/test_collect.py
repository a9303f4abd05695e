"""The collector on a synthetic server: the fixed order of points, resume and append, a torn
last row, one collector per dataset, the screen's verdict, provenance with load averages."""

from __future__ import annotations

import json

import pytest

from benchmarks.collect import CYCLE, collect, point_for, screen_verdict
from benchmarks.harness import dataset
from pmem_advisor.errors import EnvironmentProblem

from .synthetic import collect_context, make_dataset


def _rows(d, name="syn-pg"):
    return dataset.read_rows(dataset.rows_path(name, d))


def test_screen_first_then_sobol_cycles_with_repeats(tmp_path):
    make_dataset(tmp_path, rows=9 + 2 * CYCLE)
    kinds = [r["kind"] for r in _rows(tmp_path)]
    assert kinds[:9] == ["default", "rules", "ceiling"] * 3
    cycle = kinds[9:9 + CYCLE]
    assert cycle.count("sobol") == 8 and "repeat-sobol" in cycle
    assert cycle[-1] == "repeat-default" and kinds[9 + 2 * CYCLE - 1] == "repeat-rules"
    rows = _rows(tmp_path)
    sobol = [r["sobol"] for r in rows if r["kind"] == "sobol"]
    assert sobol == list(range(16))
    repeat = next(r for r in rows if r["kind"] == "repeat-sobol")
    original = next(r for r in rows if r["kind"] == "sobol" and r["sobol"] == repeat["sobol"])
    assert repeat["params"] == original["params"]
    ceiling = [r for r in rows if r["kind"] == "ceiling"]
    assert all(r["params"]["fsync"] is False for r in ceiling)


def test_resume_appends_the_same_sequence_as_one_run(tmp_path):
    one, split = tmp_path / "one", tmp_path / "split"
    make_dataset(one, rows=25)
    make_dataset(split, rows=11)
    make_dataset(split, rows=14)
    a, b = _rows(one), _rows(split)
    assert [r["row"] for r in b] == list(range(25))
    assert [(r["kind"], r["params"]) for r in a] == [(r["kind"], r["params"]) for r in b]
    prov = dataset.read_json(dataset.provenance_path("syn-pg", split))
    assert [(r["first_row"], r["rows_added"]) for r in prov["runs"]] == [(0, 11), (11, 14)]
    assert prov["rows"] == 25


def test_a_torn_last_row_is_cut_and_measured_again(tmp_path):
    make_dataset(tmp_path, rows=5)
    path = dataset.rows_path("syn-pg", tmp_path)
    with open(path, "a") as f:
        f.write('{"row": 5, "kind": "ceil')  # killed mid-write
    make_dataset(tmp_path, rows=2)
    rows = _rows(tmp_path)
    assert [r["row"] for r in rows] == list(range(7))
    assert all(line.startswith("{") for line in path.read_text().splitlines())


def test_rows_record_load_averages_and_timing(tmp_path):
    make_dataset(tmp_path, rows=3)
    for r in _rows(tmp_path):
        assert len(r["loadavg_before"]) == 3 and len(r["loadavg_after"]) == 3
        assert r["started"].endswith("Z") and r["tps"] > 0 and r["ok"] is True


def test_two_collectors_never_write_one_dataset(tmp_path):
    path = dataset.rows_path("syn-pg", tmp_path)
    with dataset.appender(path):
        with pytest.raises(EnvironmentProblem, match="another process"):
            make_dataset(tmp_path, rows=1)


def test_screen_verdict_keeps_room_and_rejects_noise():
    def rows(d, r, c):
        out = []
        for kind, values in (("default", d), ("rules", r), ("ceiling", c)):
            out += [{"kind": kind, "ok": True, "tps": v} for v in values]
        return out

    kept, lines = screen_verdict(rows([100, 110, 90], [95, 105, 100], [160, 170, 150]), 3)
    assert kept is True and any("ceiling's worst run beats" in s for s in lines)
    kept, lines = screen_verdict(rows([100, 130, 90], [95, 105, 100], [120, 125, 115]), 3)
    assert kept is False and "no room beyond the noise" in lines[-1]
    kept, lines = screen_verdict(rows([100, 110, 105], [80, 85, 90], [160, 170, 150]), 3)
    assert any("lost to the defaults in every run" in s for s in lines)
    assert screen_verdict(rows([100], [], []), 3)[0] is None


def _interleaved(d, r, c):
    """Screen rows as collect writes them: default, rules, ceiling per round."""
    out = []
    for x, y, z in zip(d, r, c, strict=True):
        out += [{"kind": "default", "ok": True, "tps": x}, {"kind": "rules", "ok": True, "tps": y},
                {"kind": "ceiling", "ok": True, "tps": z}]
    return out


def test_a_steady_gain_inside_the_noise_is_kept_by_the_paired_test_over_more_rounds():
    d = [100, 130, 90, 120, 95, 125, 105, 115]  # a loaded machine: 44% between runs
    gains = (1.10, 1.14, 1.12, 1.09, 1.13, 1.11, 1.12, 1.10)
    ceiling = [x * g for x, g in zip(d, gains, strict=True)]
    assert min(ceiling) < max(d)  # the ranges overlap: the range rule alone would drop it
    kept, lines = screen_verdict(_interleaved(d, d, ceiling), 8)
    assert kept is True
    assert any("ceiling beats the defaults in a paired test over 8 interleaved rounds" in s
               for s in lines)
    assert any(s.startswith("ceiling vs defaults, paired by round (8 rounds): +11.") for s in lines)


def test_the_paired_test_does_not_keep_noise_nor_a_failed_round():
    d = [100, 130, 90, 120, 95, 125, 105, 115]
    noisy = [x * g for x, g in zip(d, (1.3, 0.8, 1.2, 0.9, 1.25, 0.85, 1.1, 0.95), strict=True)]
    kept, lines = screen_verdict(_interleaved(d, d, noisy), 8)
    assert kept is False and "no room beyond the noise" in lines[-1]
    # a failed ceiling run drops its round rather than counting as a loss or a win
    steady = [x * 1.12 for x in d]
    rows = _interleaved(d, d, steady)
    rows[2] = {"kind": "ceiling", "ok": False, "tps": None}
    kept, lines = screen_verdict(rows, 8)
    assert kept is True and any("(7 rounds)" in s for s in lines)


def test_a_scenario_without_room_stops_after_the_screen(tmp_path):
    class Flat:
        engine, flavour, version = "postgres", "postgresql", "18"

        def __init__(self):
            self.n = 0

        def evaluate(self, config):
            from pmem_advisor.tuner.evaluator import Measurement

            self.n += 1
            return Measurement(ok=True, throughput_tps=[100.0, 130.0, 90.0][self.n % 3])

        def close(self):
            pass

    ctx = collect_context(evaluator=Flat())
    added = collect(ctx, tmp_path, max_rows=30, log=lambda s: None)
    assert added == 9  # the screen only
    prov = json.loads(dataset.provenance_path("syn-pg", tmp_path).read_text())
    assert "not kept" in prov["screen"][-1]
    assert collect(ctx, tmp_path, max_rows=3, force=True, log=lambda s: None) == 3


def test_point_for_is_a_function_of_the_row_number():
    ctx = collect_context()
    assert point_for(40, ctx).config == point_for(40, ctx).config
    assert point_for(9, ctx).kind == "sobol" and point_for(9, ctx).sobol == 0


def test_a_resumed_dataset_keeps_its_rules_and_space(tmp_path):
    make_dataset(tmp_path, rows=5)
    ctx = collect_context(rules_x=80)  # the rules moved since the dataset began
    ctx.space.knobs[0].high = 200  # and so did a range
    logged = []
    collect(ctx, tmp_path, max_rows=3, log=logged.append)
    rows = _rows(tmp_path)
    assert [r["params"] for r in rows if r["kind"] == "rules"] == [{"x": 60, "y": 25.0}] * 3
    prov = dataset.read_json(dataset.provenance_path("syn-pg", tmp_path))
    assert prov["rules"]["params"]["x"] == 60 and prov["rules_now"]["params"]["x"] == 80
    assert prov["space"][0]["high"] == 100 and prov["space_now"][0]["high"] == 200
    assert any("rules-only config changed" in s for s in logged)
    assert any("space changed" in s for s in logged)


def test_provenance_says_when_the_machine_was_busy(monkeypatch):
    from benchmarks.collect import load_note

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    # 8 clients on 2 cores load the machine to ~8 by themselves: not other tenants' work
    own = load_note([{"loadavg_before": [0.6, 1, 1]}, {"loadavg_before": [8.5, 1, 1]}], 8)
    assert own.startswith("1-minute load average 0.6-8.5 on 2 cores, within what")
    assert "busy" not in own and "other work" not in own
    busy = load_note([{"loadavg_before": [12.0, 1, 1]}, {"loadavg_before": [19.5, 1, 1]}], 8)
    assert "12.0-19.5 on 2 cores" in busy and "other work ran" in busy
    one = load_note([{"loadavg_before": [5.0, 1, 1]}], 1)
    assert "other work ran" in one
    assert load_note([], 8) is None


def test_finalists_are_measured_until_the_best_have_three_runs_with_the_rules_between(tmp_path):
    from benchmarks.collect import FINALIST_RUNS, FINALISTS_PHASE

    ctx = make_dataset(tmp_path, rows=9 + 2 * CYCLE, noise=0.2, force=True)
    before = _rows(tmp_path)
    collect(ctx, tmp_path, finalists=3, force=True, log=lambda s: None)
    rows = _rows(tmp_path)
    new = rows[len(before):]
    assert new and all(r["phase"] == FINALISTS_PHASE for r in new)
    assert {r["kind"] for r in new} == {"repeat-sobol", "repeat-rules"}
    runs: dict[int, list[float]] = {}
    for r in rows:
        if r["kind"] in ("sobol", "repeat-sobol"):
            runs.setdefault(r["sobol"], []).append(r["tps"])
    import statistics
    best = sorted(runs, key=lambda i: -statistics.median(runs[i]))[:3]
    assert all(len(runs[i]) >= FINALIST_RUNS for i in best)
    # the rules come back after every three finalist runs: the drift is measured alongside
    gaps, n = [], 0
    for r in new:
        if r["kind"] == "repeat-rules":
            gaps.append(n)
            n = 0
        else:
            n += 1
    assert gaps and all(g == 3 for g in gaps)
    # a second call has nothing left to do
    assert collect(ctx, tmp_path, finalists=3, force=True, log=lambda s: None) == 0


def test_the_sequence_goes_on_unchanged_after_the_finalists(tmp_path):
    plain, mixed = tmp_path / "plain", tmp_path / "mixed"
    make_dataset(plain, rows=9 + 2 * CYCLE + 5)
    ctx = make_dataset(mixed, rows=9 + 2 * CYCLE)
    collect(ctx, mixed, finalists=2, log=lambda s: None)
    collect(ctx, mixed, max_rows=5, log=lambda s: None)

    def sequence(rows):
        return [(r["kind"], r["params"]) for r in rows if "phase" not in r]

    assert sequence(_rows(mixed)) == sequence(_rows(plain))


def test_a_lucky_finalist_that_drops_out_makes_room_for_the_next(tmp_path):
    from benchmarks.collect import sobol_config
    from pmem_advisor.tuner.evaluator import Evaluator, Measurement

    from .synthetic import tuner_space

    lucky = sobol_config(tuner_space(), 3)

    class OneLuckyRun(Evaluator):
        """Every config runs 1,000 tps, but Sobol point 3 ran 5,000 once and 500 since."""

        def __init__(self):
            self.seen = 0

        def evaluate(self, config):
            if config == lucky:
                self.seen += 1
                return Measurement(ok=True, throughput_tps=5000.0 if self.seen == 1 else 500.0)
            return Measurement(ok=True, throughput_tps=1000.0)

    ctx = collect_context(evaluator=OneLuckyRun())
    collect(ctx, tmp_path, max_rows=9 + CYCLE, force=True, log=lambda s: None)
    collect(ctx, tmp_path, finalists=1, force=True, log=lambda s: None)
    rows = [r for r in _rows(tmp_path) if r.get("phase") and r["kind"] == "repeat-sobol"]
    assert [r["sobol"] for r in rows[:2]] == [3, 3]  # believed until its median fell
    assert rows[2]["sobol"] != 3 and rows[2]["tps"] == 1000.0  # then the next best


def test_a_negative_finalists_count_is_one_line_and_an_exit_code(capsys):
    from benchmarks.collect import main
    from pmem_advisor.errors import UsageError

    assert main(["pg18-tpcb-disk", "--finalists", "-1"]) == UsageError.exit_code
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --finalists must be 0 or more, not -1"]
