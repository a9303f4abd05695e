"""The steal share every measurement records, read from /proc/stat."""

from __future__ import annotations

from pmem_advisor.tuner.cpu_steal import cpu_times, measure, steal_note, steal_pct


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


def test_a_measurement_carries_its_run_s_steal_share():
    from pmem_advisor.tuner.evaluator import Measurement, TrialConfig

    class Busy:
        def evaluate(self, config):
            sum(i * i for i in range(200_000))  # some ticks pass
            return Measurement(ok=True, throughput_tps=1.0)

    m = measure(Busy(), TrialConfig())
    assert m.ok and 0.0 <= m.raw["cpu_steal_pct"] <= 100.0


def test_the_verdict_mentions_steal_only_when_it_was_notable():
    assert steal_note([0.0, 1.2, None, 4.9]) == ""
    assert steal_note([None]) == "" and steal_note([]) == ""
    note = steal_note([2.0, 31.0, None])
    assert "took 2-31% of the CPU" in note and "no setting removes" in note
