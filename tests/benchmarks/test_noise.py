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
