"""benchmarks/studies/verdict_power.py: the verdict's own decision on simulated rounds."""

from __future__ import annotations

import pytest

from benchmarks.studies.verdict_power import main, simulate, three_alike


def test_quiet_equal_configs_are_called_equivalent_and_keep_the_rules():
    shares = simulate(spread_pct=1.0, round_spread_pct=1.0, draws=200)
    assert shares.get(("equivalent", "rules"), 0) >= 0.95, shares


def test_a_large_gain_is_claimed_and_the_tuned_config_written():
    shares = simulate(spread_pct=3.0, tuned_pct=30.0, draws=200)
    assert shares.get(("better", "tuned"), 0) >= 0.9, shares


def test_equal_configs_rarely_yield_a_false_gain_at_the_demos_noise():
    """The family's alpha (5%) bounds every false claim; a gain in one direction of one pair
    stays near its share (about 1%)."""
    shares = simulate(spread_pct=5.0, draws=600, seed=3)
    assert shares.get(("better", "tuned"), 0) <= 0.03, shares
    assert sum(shares.values()) == pytest.approx(1.0)


def test_three_alike_counts_only_decided_outcomes():
    assert three_alike({("equivalent", "rules"): 0.5, ("inconclusive", "rules"): 0.5}) \
        == pytest.approx(0.125)
    assert three_alike({("equivalent", "rules"): 0.6, ("equivalent", "default"): 0.4}) \
        == pytest.approx(0.6 ** 3 + 0.4 ** 3)


def test_the_command_prints_a_table(capsys):
    assert main(["--spread", "2", "--draws", "50"]) == 0
    out = capsys.readouterr().out
    assert "| outcome | config written | share |" in out and "three runs in a row" in out


@pytest.mark.parametrize("argv", [["--spread", "-1"], ["--spread", "nan"], ["--spread", "x"],
                                  ["--spread", "2", "--rounds", "1"],
                                  ["--spread", "2", "--rules", "-100"],
                                  ["--spread", "2", "--draws", "0"]])
def test_bad_arguments_get_a_one_line_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("python -m benchmarks.studies.verdict_power: error: ")
