from __future__ import annotations

import json

import pytest

from pmem_advisor.report.build import write_reports
from pmem_advisor.report.deployable import gate
from pmem_advisor.report.html import PLOTLY_JS, human_axis
from pmem_advisor.tuner.evaluator import Measurement
from pmem_advisor.tuner.results import PROFILE_ATTR
from pmem_advisor.tuner.samplers import make_sampler
from pmem_advisor.tuner.storage import open_storage
from pmem_advisor.tuner.study import META_ATTR, load_existing, open_study
from pmem_advisor.tuner.tuner import TuneOptions, Tuner
from tests.tuner.conftest import META, make_space
from tests.tuner.synthetic import SwingingHost, SyntheticEvaluator

PROFILE = {"cpu": {"model": "AMD EPYC", "cores": 2, "threads": 2},
           "memory": {"total_bytes": 24 * 1024**3},
           "paths": [{"path": "/dev/shm/x", "fstype": "tmpfs", "device": "tmpfs",
                      "emulated_pmem": True, "medium_note": "medium: tmpfs (DRAM standing in "
                      "for PMEM, not durable)"}]}


class CrashingRemeasure(SyntheticEvaluator):
    """The server dies in the second run of the final phase."""

    def __init__(self, search: int, **kw):
        super().__init__(**kw)
        self.search = search

    def evaluate(self, config):
        if len(self.calls) == self.search + 1:
            self.calls.append(config)
            return Measurement(ok=False, failure="server terminated by signal 9 during measure")
        return super().evaluate(config)


def _tuned_study(tmp_path, trials=10, repeats=8, ev=None, meta=None):
    storage = open_storage(f"sqlite:///{tmp_path / 'study.db'}")
    study, space = open_study(storage, "s", meta or META, make_space(), resume=False,
                              sampler=make_sampler("tpe", seed=2, n_trials=trials))
    Tuner(study, space, ev or SyntheticEvaluator(seed=2),
          TuneOptions(trials=trials, repeats=repeats)).run()
    return study


def test_reports_from_the_study(tmp_path):
    target = {"connections": 300, "connections_source": "--connections",
              "memory_bytes": 8 * 1024**3, "memory_source": "--memory", "notes": []}
    study = _tuned_study(tmp_path, ev=CrashingRemeasure(10, seed=2),
                         meta={**META, "emulated_pmem": True, "target": target,
                               "production_settings": {"max_connections": 300},
                               "data_notes": ["pgbench scale 100 (1.5 GiB): data larger than "
                                              "the buffer being sized"]})
    study.set_user_attr(PROFILE_ATTR, PROFILE)
    out = tmp_path / "out"
    summary = write_reports(study, out)
    data = json.loads((out / "summary.json").read_text())
    for key in ("engine", "flavour", "version", "workload", "trials_completed", "trials_failed",
                "best", "baselines", "config_file", "verdict", "failures", "knobs"):
        assert key in data
    v = data["verdict"]
    assert v["kind"] in ("better", "worse", "equivalent", "inconclusive")
    assert data["best"]["role"] == v["emit"] and data["best"]["repeated"]
    conf = (out / "postgresql.tuned.conf").read_text()
    md = (out / "report.md").read_text()
    page = (out / "report.html").read_text()
    # the same verdict sentence in every output
    for text in (conf, md, page.replace("&#x27;", "'")):
        assert v["text"] in text
    # the crash during re-measurement reaches every output with the server's reason
    crash = [f for f in data["failures"] if f["phase"] == "re-measure"]
    assert crash and "signal 9" in crash[0]["reason"]
    for text in (conf, md, page):
        assert "re-measure" in text and "signal 9" in text
    # the one emitter (knobs.emit): every setting carries its reason; server units
    settings = [ln for ln in conf.splitlines() if ln and not ln.startswith("#")]
    assert settings and all(" = " in ln and "  # " in ln for ln in settings)
    assert "effective_io_concurrency = 200  #" in conf  # a rule setting kept as base
    # hardware, the emulation caveat and how to apply, in the config and both reports
    for text in (conf, md, page):
        assert "AMD EPYC" in text and "tmpfs" in text and "stands in for persistent memory" in text
    assert "ALTER SYSTEM SET shared_buffers" in conf and "include '" in conf
    # production sizes come from the target, whichever config won, with the reason
    assert "max_connections = 300  #" in conf
    assert "production target (--connections)" in conf
    for text in (conf, md, page):
        assert "production target: 300 connections (--connections)" in text
        assert "pgbench scale 100" in text
    # the per-knob table: default, rules, tuned, emitted with units and reasons
    row = next(r for r in data["knobs"] if r["knob"] == "shared_buffers")
    assert row["default"] == "128MB" and row["rules"] == "2GB" and row["unit"] == "8kB"
    assert row["reason"]
    assert "| knob | default | rules | tuned | emitted | unit | reason |" in md
    # one importance computation: the html bars carry report.md's numbers
    assert data["importance"] and "the same numbers as report.md" in page
    # plotly loaded once, from a file beside the report
    assert (out / PLOTLY_JS).stat().st_size > 1_000_000
    assert page.count(f'src="{PLOTLY_JS}"') == 1 and len(page) < 500_000
    assert summary["config_file"] == str(out / "postgresql.tuned.conf")


def test_how_the_search_measured_reaches_both_reports(tmp_path):
    study = _tuned_study(tmp_path, ev=SwingingHost(seed=2), repeats=3)
    out = tmp_path / "out"
    write_reports(study, out)
    timing = study.user_attrs["pmem_advisor.timing"]
    assert timing["side_by_side"] >= 1
    said = (f"{timing['side_by_side']} of {timing['search_trials']} search trials measured "
            "side by side with rules-only")
    for name in ("report.md", "report.html"):
        assert said in (out / name).read_text()
    assert "Time: 10 trials in" in (out / "report.md").read_text()


def test_offline_embeds_plotly_once(tmp_path):
    study = _tuned_study(tmp_path, trials=6, repeats=2)
    out = tmp_path / "off"
    write_reports(study, out, offline=True)
    page = (out / "report.html").read_text()
    assert not (out / PLOTLY_JS).exists() and page.count("plotly.js v") >= 1
    assert f'src="{PLOTLY_JS}"' not in page and len(page) > 1_000_000


def test_not_significant_emits_rules_and_says_so(tmp_path):
    study = _tuned_study(tmp_path, trials=6, repeats=2)  # 2 rounds can never be significant
    out = tmp_path / "o"
    s = write_reports(study, out)
    assert s["verdict"]["kind"] in ("inconclusive", "equivalent")
    assert s["best"]["role"] == "rules"
    conf = (out / "postgresql.tuned.conf").read_text()
    assert "emitted: the rules-only config" in conf and "shared_buffers = 2GB  #" in conf
    assert "tuned is better" not in conf


def test_gate_refuses_durability_risk_and_illegal_values():
    from pmem_advisor.knobs.catalog import load_catalog

    cat = load_catalog("postgres", "postgresql", "18")
    g = gate({"synchronous_commit": "off", "shared_buffers": 262144, "max_connections": -5},
             catalog=cat, profile=None, meta={"engine": "postgres"})
    assert set(g.settings) == {"shared_buffers"}
    assert "--allow-unsafe" in g.removed["synchronous_commit"]
    assert "max_connections" in g.removed
    allowed = gate({"synchronous_commit": "off"}, catalog=cat, profile=None,
                   meta={"allow_unsafe": True})
    assert allowed.settings == {"synchronous_commit": "off"}


def test_axes_in_human_units():
    from pmem_advisor.knobs.catalog import load_catalog

    cat = load_catalog("postgres", "postgresql", "18")
    label, vals, _ = human_axis(cat.get("shared_buffers"), [16384, 262144])
    assert label == "shared_buffers (MiB)" and vals == [128.0, 2048.0]
    label, vals, ticks = human_axis(cat.get("wal_compression"), ["off", "lz4", "off"])
    assert ticks["ticktext"] == ["lz4", "off"] and vals == [1, 0, 1]


def test_report_cli_rebuilds(tmp_path, run_cli):
    study = _tuned_study(tmp_path, trials=6, repeats=2)
    before = json.loads(json.dumps(study.user_attrs[META_ATTR]))
    out = tmp_path  # the study.db sits in the output directory
    code, stdout, err = run_cli("report", str(out))
    assert code == 0, err
    data = json.loads((out / "summary.json").read_text())
    assert data["trials_completed"] + data["trials_failed"] == 6
    assert data["verdict"]["text"] in stdout + err
    assert load_existing(open_storage(f"sqlite:///{tmp_path / 'study.db'}"), None).study_name \
        == study.study_name
    assert study.user_attrs[META_ATTR] == before


def test_report_cli_bad_input(tmp_path, run_cli):
    code, _, err = run_cli("report", str(tmp_path / "missing"))
    assert code == 2 and err.count("\n") == 1 and "error" in err


@pytest.mark.parametrize("kind", ["size", "duration"])
def test_axis_keeps_missing_values(kind):
    from pmem_advisor.knobs.catalog import load_catalog

    cat = load_catalog("postgres", "postgresql", "18")
    knob = cat.get("shared_buffers" if kind == "size" else "checkpoint_timeout")
    _, vals, _ = human_axis(knob, [None])
    assert vals == [None]


def test_gate_runs_our_check_and_repairs_what_the_file_causes():
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess

    profile = probe(SysAccess("/"), ["/dev/shm"])
    cat = load_catalog("postgres", "postgresql", "18")
    meta = {"engine": "postgres", "flavour": "postgresql", "version": "18.6",
            "data_dir": "/dev/shm/pgdata", "clients": 14}
    huge = 64 * 1024**3 // 1024  # work_mem 64 GiB per sort node: no host here has that
    g = gate({"shared_buffers": 16384, "work_mem": huge}, catalog=cat, profile=profile,
             meta=meta)
    assert g.checked_with_rules and g.settings == {"shared_buffers": 16384}
    assert g.removed["work_mem"].startswith("check CK004")
    # data on tmpfs fails with no setting at all: said, not blamed on the file
    assert any("tmpfs" in u for u in g.unresolved)
    assert not [f for f in g.findings if f["severity"] == "fail" and f["subject"] == "memory"]


def test_apply_lines_use_each_servers_statements():
    from pmem_advisor.report.describe import apply_lines

    maria = apply_lines("mysql", "/etc/my.tuned.cnf", {"innodb_buffer_pool_size": "1G",
                                                       "innodb_log_file_size": "256M"},
                        ["innodb_log_file_size"], "mariadb")
    assert "!include /etc/my.tuned.cnf" in maria[0]
    # bytes: `SET GLOBAL innodb_buffer_pool_size = 1G` is MariaDB's error 1232
    assert "  SET GLOBAL innodb_buffer_pool_size = 1073741824;" in maria
    assert "  SET GLOBAL innodb_log_file_size = 268435456;" in maria  # dynamic since 10.9
    assert not any("PERSIST" in ln for ln in maria)
    mysql = apply_lines("mysql", "/etc/my.tuned.cnf", {"innodb_buffer_pool_size": "1G"}, [],
                        "mysql")
    assert "  SET PERSIST innodb_buffer_pool_size = 1073741824;" in mysql


def test_a_risky_value_kept_with_allow_unsafe_says_unsafe_on_its_line():
    """The tuned file of an --allow-unsafe study marks a kept durability risk as `config
    render --allow-unsafe` does (Tarantool's emitter refuses unmarked risky values)."""
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.report.build import _marked

    cat = load_catalog("postgres", "postgresql", "18")
    why = _marked("synchronous_commit", "off", "tuned in trial 3", cat)
    assert why.startswith("UNSAFE, durability risk: ") and why.endswith("tuned in trial 3")
    assert _marked("synchronous_commit", "on", "rule PM015", cat) == "rule PM015"
    assert _marked("shared_buffers", 262144, "rule PM011", cat) == "rule PM011"
