"""What a noise summary says about the machine it was measured on."""

from __future__ import annotations

import json

from benchmarks.noise import machine_note
from benchmarks.run import noise_line


def test_the_load_decides_whether_a_summary_calls_the_machine_quiet():
    assert machine_note(3.6, 2, clients=2).startswith("quiet: 1-minute load at most 3.6")
    assert machine_note(8.5, 2, clients=8).startswith("quiet")  # the benchmark's own clients
    assert machine_note(13.4, 2, clients=8).startswith("shared with other work (not quiet)")
    assert machine_note(None, 2).startswith("shared")  # no rows: nothing shows it was quiet


def test_make_bench_prints_the_summary_s_own_machine_note(tmp_path):
    (tmp_path / "noise").mkdir()
    arm = {"n": 5, "cv_pct": 6.0, "per_minute_pct": 7.3}
    for name, note, load in (("q", machine_note(3.1, 2, clients=2), 3.1),
                             ("s", machine_note(19.0, 2), 19.0)):
        (tmp_path / "noise" / f"{name}.json").write_text(json.dumps(
            {"arms": {"today": arm}, "loadavg_1m": {"min": 1.0, "max": load},
             "machine_note": note}))
    assert "(q.json, quiet, load average 1.0-3.1)" in noise_line("q", tmp_path)
    assert "(s.json, shared with other work (not quiet)," in noise_line("s", tmp_path)


def test_an_engine_with_its_own_evaluator_gets_fixed_arms_of_its_scenario_s_shape():
    from benchmarks.harness.scenario import get
    from benchmarks.noise import arms_for

    scn = get("rocksdb78-ycsb-b-disk")
    arms = {a.name: a for a in arms_for("rocksdb78-ycsb-b-disk")}
    assert set(arms) == {"today", "fixed60"}  # db_bench reports no per-second samples
    assert (arms["today"].warmup_s, arms["today"].duration_s) == (scn.warmup_s, scn.duration_s)
    assert arms["fixed60"].warmup_s + arms["fixed60"].duration_s == 60
    assert all(a.warmup_mode == "fixed" and not a.pin and not a.analyze for a in arms.values())
    assert [a.name for a in arms_for("rocksdb78-ycsb-b-disk", ["fixed60"])] == ["fixed60"]
    # the SQL scenarios keep their steady-state, pinned and analyze candidates
    assert {"steady60", "steady60-pinned", "steady60-analyze"} <= {
        a.name for a in arms_for("pg18-tpcb-disk")}


def test_configuring_a_fixed_arm_needs_only_the_run_s_length():
    from benchmarks.noise import Arm, configure

    class DbBench:  # RocksDBEvaluator's shape: a warm-up and a duration, nothing else
        warmup = duration = 0.0

    ev = DbBench()
    configure(ev, Arm("fixed60", "fixed", 5, 55))
    assert (ev.warmup, ev.duration) == (5, 55)


def test_the_threads_arm_runs_pgbench_at_the_cpu_count_and_the_others_one_per_client():
    from benchmarks.noise import arms_for, configure, summarise
    from pmem_advisor.engines.postgres.pgbench import PgbenchTpcb

    class Managed:  # ManagedEvaluator's shape
        warmup = duration = 0.0
        cpus = None
        analyze_after_restore = False
        workload = PgbenchTpcb()

    ev = Managed()
    by_name = {a.name: a for a in arms_for("demo")}
    configure(ev, by_name["steady30-threads-per-cpu"])
    assert ev.workload.thread_per_client is False
    for name in ("today", "steady30"):
        configure(ev, by_name[name])
        assert ev.workload.thread_per_client is True
    # rows recorded before the field existed ran at the CPU count, and the summary says so
    row = {"scenario": "demo", "ok": True, "tps": 100.0, "interim_tps": [100.0] * 5,
           "wall_s": 8.0, "started": "t", "loadavg_before": [1.0], "window": {},
           "arm": {"name": "steady30", "warmup_mode": "steady", "warmup_s": 2.0,
                   "duration_s": 28.0, "pin": False, "analyze": False}}
    assert summarise([row, row])["arms"]["steady30"]["arm"]["thread_per_client"] is False


def test_the_demo_arm_today_is_the_demo_s_own_run():
    from benchmarks import demo
    from benchmarks.noise import arms_for

    today = arms_for("demo", ["today"])[0]
    assert (today.warmup_s, today.duration_s) == (float(demo.WARMUP), float(demo.DURATION))


def test_the_demo_s_evaluator_opens_and_closes(monkeypatch):
    """The demo's noise rows go through the engine's evaluator as `tune` builds it (the
    call had drifted from the engines' API and failed before the first row)."""
    from benchmarks import noise

    monkeypatch.setattr(noise, "demo_scale", lambda *a, **k: 1)
    evaluator, close, info = noise.open_demo(lambda line: None, None)
    try:
        assert info["scale"] == 1
        assert evaluator.duration == noise.DEMO_DURATION
    finally:
        close()


def _pair_rows(name: str, how: str, ratios: list[float], wall: float) -> list[dict]:
    rows = []
    for rnd, ratio in enumerate(ratios, 1):
        for member, tps in enumerate((1000.0 * ratio, 1000.0)):
            rows.append({"scenario": "demo", "ok": True, "tps": tps, "interim_tps": [tps] * 3,
                         "wall_s": wall if member else wall / 2, "started": "t",
                         "loadavg_before": [1.0], "window": {}, "round": rnd,
                         "member": member,
                         "arm": {"name": name, "warmup_mode": "steady", "warmup_s": 2.0,
                                 "duration_s": 28.0, "pin": False, "analyze": False,
                                 "pair": how}})
    return rows


def test_a_pair_arm_reports_the_spread_of_its_per_round_log_ratio():
    import math
    import statistics

    from benchmarks.noise import summarise, table

    ratios = [1.05, 0.97, 1.02, 0.94, 1.01]
    rows = (_pair_rows("pair-one-after-another", "sequence", ratios, 80.0)
            + _pair_rows("pair-in-turns", "turns", [1.01, 0.99, 1.0, 1.02, 0.98], 76.0))
    s = summarise(rows)
    seq = s["pairs"]["pair-one-after-another"]
    want = 100 * statistics.stdev(math.log(r) for r in ratios)
    assert seq["how"] == "sequence" and seq["rounds"] == 5 and seq["wall_s"] == 80.0
    assert seq["paired_spread_pct"] == round(want, 2)
    assert seq["per_minute_pct"] == round(want * math.sqrt(80 / 60), 2)
    assert s["pairs"]["pair-in-turns"]["paired_spread_pct"] < seq["paired_spread_pct"]
    assert s["arms"]["pair-in-turns"]["wall_s"] == 38.0  # a run's share of the pair's wall
    assert not [w for w in s["windows"] if w["from_arm"].startswith("pair")]
    printed = "\n".join(table(s))
    assert "pair-one-after-another     5 rounds  pair spread " \
        f"{round(want, 1):.1f}%  wall 80 s" in printed


def test_the_demo_measures_a_pair_one_after_another_and_one_in_turns():
    from benchmarks.noise import arms_for

    pairs = {a.name: a for a in arms_for("demo") if a.pair}
    assert {a.pair for a in pairs.values()} == {"sequence", "turns"}
    today = arms_for("demo", ["today"])[0]
    assert all(a.duration_s == today.duration_s for a in pairs.values())
