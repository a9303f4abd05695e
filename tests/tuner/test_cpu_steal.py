"""The steal share every measurement records, read from /proc/stat."""

from __future__ import annotations

from pmem_advisor.tuner.cpu_steal import (
    cpu_times,
    measure,
    measure_undisturbed,
    steal_note,
    steal_pct,
)


def _stat(tmp_path, name, line):
    p = tmp_path / name
    p.write_text(f"{line}\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1 2\n", encoding="ascii")
    return p


def test_the_steal_share_is_the_hypervisor_s_part_of_all_cpu_time_between_two_readings(tmp_path):
    a = cpu_times(_stat(tmp_path, "a", "cpu  100 0 50 800 10 0 5 35 0 0"))
    b = cpu_times(_stat(tmp_path, "b", "cpu  400 0 150 1000 10 0 15 235 0 0"))
    assert a["steal"] == 35 and b["user"] == 400
    # 300 user + 100 system + 200 idle + 10 softirq + 200 steal = 810 ticks
    assert steal_pct(a, b) == round(100 * 200 / 810, 1)


def test_no_steal_figure_without_two_sound_readings(tmp_path):
    assert cpu_times(tmp_path / "missing") is None
    assert cpu_times(_stat(tmp_path, "x", "intr 0")) is None  # no aggregate line
    old = cpu_times(_stat(tmp_path, "old", "cpu  1 0 1 1"))  # a kernel without steal: 0
    assert old is not None and old["steal"] == 0
    a = cpu_times(_stat(tmp_path, "a", "cpu  100 0 50 800 10 0 5 35"))
    assert steal_pct(None, a) is None and steal_pct(a, a) is None  # no time passed
    assert steal_pct(a, old) is None  # counters went back: another boot


def test_this_machine_has_readable_cpu_times():
    t = cpu_times()
    assert t is not None and sum(t.values()) > 0


def test_a_measurement_carries_its_run_s_steal_share(tmp_path, monkeypatch):
    from pmem_advisor.tuner import cpu_steal
    from pmem_advisor.tuner.evaluator import Measurement, TrialConfig

    readings = iter([cpu_times(_stat(tmp_path, "a", "cpu  100 0 50 800 10 0 5 35")),
                     cpu_times(_stat(tmp_path, "b", "cpu  400 0 150 1000 10 0 15 235"))])
    monkeypatch.setattr(cpu_steal, "cpu_times", lambda: next(readings))

    class Run:
        def evaluate(self, config):
            return Measurement(ok=True, throughput_tps=1.0)

    m = measure(Run(), TrialConfig())
    assert m.ok and m.raw["cpu_steal_pct"] == round(100 * 200 / 810, 1)


def test_a_run_shorter_than_a_second_of_ticks_has_no_steal_share(tmp_path):
    # a synthetic evaluator's run: 3 ticks, one of them stolen, is no 33% steal
    a = cpu_times(_stat(tmp_path, "a", "cpu  100 0 50 800 10 0 5 35"))
    b = cpu_times(_stat(tmp_path, "b", "cpu  101 0 51 800 10 0 5 36"))
    assert steal_pct(a, b) is None


def test_the_verdict_mentions_steal_only_when_it_was_notable():
    assert steal_note([0.0, 1.2, None, 4.9]) == ""
    assert steal_note([None]) == "" and steal_note([]) == ""
    note = steal_note([2.0, 31.0, None])
    assert "took 2-31% of the CPU" in note and "no setting removes" in note
    assert steal_note([1.0, 2.0], reruns=3).startswith("; 3 run(s) measured again")


def test_disturbed_runs_are_measured_again_at_most_twice_and_within_the_time(monkeypatch):
    from pmem_advisor.tuner import cpu_steal
    from pmem_advisor.tuner.evaluator import Measurement, TrialConfig

    class Counting:
        def __init__(self):
            self.n = 0

        def evaluate(self, config):
            self.n += 1
            return Measurement(ok=True, throughput_tps=float(self.n))

    for seq, runs, kept in (([1.0], 1, 1.0), ([40.0, 3.0], 2, 2.0), ([40.0], 3, 3.0)):
        it = iter(seq + [seq[-1]] * 5)
        monkeypatch.setattr(cpu_steal, "steal_pct", lambda b, a, it=it: next(it))
        ev, said = Counting(), []
        m, discarded = measure_undisturbed(ev, TrialConfig(), on_rerun=said.append)
        assert ev.n == runs and m.throughput_tps == kept and len(discarded) == runs - 1
        assert said == [d["cpu_steal_pct"] for d in discarded]
    # a failed run is the config's failure, whatever the steal: kept, never re-run away
    class Crashing(Counting):
        def evaluate(self, config):
            self.n += 1
            return Measurement(ok=False, failure="server process exited with code -9")

    monkeypatch.setattr(cpu_steal, "steal_pct", lambda b, a: 40.0)
    ev = Crashing()
    m, discarded = measure_undisturbed(ev, TrialConfig())
    assert ev.n == 1 and discarded == [] and not m.ok and "-9" in m.failure
    # out of time: the disturbed run is kept, not repeated
    monkeypatch.setattr(cpu_steal, "steal_pct", lambda b, a: 40.0)
    ev = Counting()
    m, discarded = measure_undisturbed(ev, TrialConfig(), may_rerun=lambda: False)
    assert ev.n == 1 and discarded == [] and m.raw["cpu_steal_pct"] == 40.0
