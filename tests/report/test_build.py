from __future__ import annotations

import json

from pmem_advisor.report.build import write_reports
from pmem_advisor.tuner.samplers import make_sampler
from pmem_advisor.tuner.storage import open_storage
from pmem_advisor.tuner.study import load_existing, open_study
from pmem_advisor.tuner.tuner import TuneOptions, Tuner
from tests.tuner.conftest import META, make_space
from tests.tuner.synthetic import SyntheticEvaluator


def _tuned_study(tmp_path, trials=10):
    storage = open_storage(f"sqlite:///{tmp_path / 'study.db'}")
    study, space = open_study(storage, "s", META, make_space(), resume=False,
                              sampler=make_sampler("tpe", seed=2, n_trials=trials))
    Tuner(study, space, SyntheticEvaluator(seed=2), TuneOptions(trials=trials, repeats=2)).run()
    return study


def test_reports_from_the_study(tmp_path):
    study = _tuned_study(tmp_path)
    out = tmp_path / "out"
    summary = write_reports(study, out)
    data = json.loads((out / "summary.json").read_text())
    for key in ("engine", "flavour", "version", "workload", "trials_completed", "trials_failed",
                "best", "baselines", "config_file"):
        assert key in data
    assert data["workload"] == "pgbench-tpcb" and data["flavour"] == "postgresql"
    assert {"trial", "params", "throughput_tps"} <= set(data["best"])
    assert data["baselines"]["default"]["throughput_tps"] > 0
    assert data["baselines"]["rules"]["throughput_tps"] > 0
    conf = (out / "postgresql.tuned.conf").read_text()
    assert data["config_file"] == str(out / "postgresql.tuned.conf")
    best = summary["best"]
    assert f"best: trial {best['trial']}" in conf and "measured gain vs server defaults" in conf
    # One reason comment above every setting; values in the server's units.
    settings = [ln for ln in conf.splitlines() if ln and not ln.startswith("#")]
    assert settings and all("= '" in ln for ln in settings)
    lines = conf.splitlines()
    for i, ln in enumerate(lines):
        if ln in settings:
            assert lines[i - 1].startswith("# ")
    assert "effective_io_concurrency = '200'" in conf  # a rule setting kept as base
    assert "set at initialisation" in conf or best["config"]["init_params"] == {}
    md = (out / "report.md").read_text()
    assert "rules only" in md and "tuned (best)" in md and "Knob importance" in md
    page = (out / "report.html").read_text()
    assert "Optimisation history" in page and "Parallel coordinates" in page
    assert page.count("<table>") >= 1 and "plotly" in page


def test_report_cli_rebuilds(tmp_path, run_cli):
    study = _tuned_study(tmp_path, trials=6)
    out = tmp_path  # the study.db sits in the output directory
    code, _, err = run_cli("report", str(out))
    assert code == 0, err
    data = json.loads((out / "summary.json").read_text())
    assert data["trials_completed"] + data["trials_failed"] == 6
    assert load_existing(open_storage(f"sqlite:///{tmp_path / 'study.db'}"), None).study_name \
        == study.study_name


def test_report_cli_bad_input(tmp_path, run_cli):
    code, _, err = run_cli("report", str(tmp_path / "missing"))
    assert code == 2 and err.count("\n") == 1 and "error" in err
