"""The steal share a row records, read from /proc/stat."""

from __future__ import annotations

from benchmarks.harness.machine import cpu_times, steal_pct


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
