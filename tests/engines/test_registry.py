"""The engine registry: engines are data (advisor/engines/*/<name>.yaml checked by a schema),
names and aliases resolve as the CLI always took them, and a new engine (tests/engines/
fake_engine.py) plugs into recommend, check, config and tune without any CLI change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pmem_advisor.engines import registry
from pmem_advisor.engines.api import EngineDataError
from pmem_advisor.errors import EXIT_ENVIRONMENT, EXIT_FINDINGS, EXIT_USAGE, UsageError
from tests.rules.machines import make_profile

GOOD = """name: {name}
title: Broken
kind: tool
flavours: [{name}]
packages: {{debian: [x]}}
config_format: ini
module: tests.engines.fake_engine:FakeEngine
"""


@pytest.fixture
def profile(tmp_path) -> str:
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(make_profile("pmem")))
    return str(path)


# ------------------------------------------------------------------ the shipped data
def test_builtin_engines_first_and_every_yaml_valid():
    names = registry.list_engines()
    assert names[:2] == ["postgres", "mysql"]
    for spec in registry.specs():
        assert spec.name == Path(spec.source).stem
        assert registry.shipped(Path(spec.source))
        assert spec.flavours and spec.kind in ("server", "embedded", "tool", "advice")


def test_every_shipped_engine_yaml_passes_the_schema():
    # a run reads shipped engine YAML without the schema check (issue 55): this is that check
    paths = sorted(registry.ENGINES_DIR.glob("*/*.yaml"))
    assert len(paths) >= 6
    for path in paths:
        registry.load_spec(path, validate=True)


def test_an_added_folders_engine_yaml_is_checked_at_load(tmp_path):
    path = tmp_path / "oops.yaml"
    path.write_text("name: oops\n")
    assert not registry.shipped(path)
    with pytest.raises(EngineDataError, match="oops.yaml"):
        registry.load_spec(path)


def test_builtin_engines_import_and_name_their_packages():
    pg, my = registry.get_engine("postgres"), registry.get_engine("mysql")
    assert (pg.title, pg.config_format, pg.flavours) == ("PostgreSQL", "postgresql.conf",
                                                        ("postgresql",))
    assert my.flavours == ("mysql", "mariadb") and my.config_name == "my.tuned.cnf"
    assert "apt-get install postgresql" in pg.install_hint()
    assert "apt-get install mariadb-server" in my.install_hint()
    assert "pgbench-tpcb" in pg.workloads and "pgbench-tpcb" not in my.workloads


@pytest.mark.parametrize("word, engine, flavour", [
    ("postgres", "postgres", "postgresql"), ("PostgreSQL", "postgres", "postgresql"),
    ("pg", "postgres", "postgresql"), ("mysql", "mysql", None),
    ("mariadb", "mysql", "mariadb"), ("MariaDB", "mysql", "mariadb"),
])
def test_aliases_as_the_cli_took_them(word, engine, flavour):
    eng, picked = registry.resolve(word)
    assert (eng.name, picked) == (engine, flavour)


def test_unknown_engine_is_a_usage_error_with_a_hint():
    with pytest.raises(UsageError, match="unknown engine 'postgress'") as e:
        registry.get_engine("postgress")
    assert "postgres" in (e.value.hint or "")


def test_mysql_flavour_by_version():
    my = registry.get_engine("mysql")
    assert my.resolve_flavour(None, "10.11") == "mariadb"
    assert my.resolve_flavour(None, "8.4") == "mysql"
    with pytest.raises(UsageError, match="not one of"):
        my.resolve_flavour("postgresql", None)


def test_cli_unknown_engine_exit_2(run_cli, profile):
    code, out, err = run_cli("recommend", "nosuchdb", "--profile", profile)
    assert code == EXIT_USAGE and out == ""
    assert err.count("\n") == 1 and "unknown engine 'nosuchdb'" in err


def test_cli_alias_pg_recommends_postgres(run_cli, profile):
    code, out, _ = run_cli("recommend", "pg", "--profile", profile, "--version", "16",
                           "--json")
    assert code == 0
    assert json.loads(out)["target"]["engine"] == "postgres"


def test_doctor_lists_every_engine(run_cli):
    code, out, _ = run_cli("doctor", "--json")
    assert code == 0
    names = {c["name"] for c in json.loads(out)["capabilities"]}
    assert {"postgres-server", "mysql-server"} <= names
    others = [n for n in registry.list_engines() if n not in ("postgres", "mysql")]
    assert {f"engine {n}" for n in others} <= names


# ------------------------------------------------------------------ schema validation
@pytest.mark.parametrize("text, where", [
    (GOOD.format(name="broken").replace("kind: tool", "kind: database"), "kind"),
    (GOOD.format(name="broken").replace("flavours: [broken]", "flavours: []"), "flavours"),
    (GOOD.format(name="broken").replace("module: tests.engines.fake_engine:FakeEngine",
                                        "module: not a module"), "module"),
    (GOOD.format(name="broken") + "colour: blue\n", "top level"),
    (GOOD.format(name="other"), "must equal the file name"),
    ("name: [unclosed\n", "cannot read it"),
])
def test_bad_engine_yaml_is_one_line(bad_engine_dir, text, where):
    (bad_engine_dir / "broken.yaml").write_text(text)
    assert "broken" not in registry.list_engines()  # the others are listed and keep working
    assert registry.get_engine("postgres").name == "postgres"
    with pytest.raises(EngineDataError) as e:
        registry.get_engine("broken")
    message = str(e.value)
    assert "\n" not in message and "broken.yaml" in message and where in message
    assert e.value.exit_code == EXIT_USAGE


def test_alias_taken_by_another_engine(bad_engine_dir):
    text = GOOD.format(name="broken") + "aliases: {pg: broken}\n"
    (bad_engine_dir / "broken.yaml").write_text(text)
    assert registry.resolve("pg")[0].name == "postgres"
    with pytest.raises(EngineDataError, match="alias 'pg' is already"):
        registry.get_engine("broken")


def test_module_that_does_not_exist(bad_engine_dir):
    text = GOOD.format(name="broken").replace("tests.engines.fake_engine:FakeEngine",
                                              "tests.engines.no_such_module:X")
    (bad_engine_dir / "broken.yaml").write_text(text)
    assert "broken" in registry.list_engines()  # listing never imports
    with pytest.raises(EngineDataError, match="cannot be imported"):
        registry.get_engine("broken")
    assert registry.get_engine("postgres").name == "postgres"  # the others still work


def test_cli_bad_engine_yaml_exit_2_one_line(run_cli, bad_engine_dir, profile):
    (bad_engine_dir / "broken.yaml").write_text(GOOD.format(name="broken") + "colour: x\n")
    code, out, err = run_cli("recommend", "broken", "--profile", profile)
    assert code == EXIT_USAGE and out == ""
    assert err.count("\n") == 1 and "broken.yaml" in err and "Traceback" not in err
    code, out, _ = run_cli("recommend", "postgres", "--profile", profile, "--version", "16")
    assert code == 0 and out  # the other engines keep working


@pytest.mark.parametrize("target, says", [
    ("tests.engines.broken_engines:NoSuchClass", "has no class NoSuchClass"),
    ("tests.engines.broken_engines:NotAnEngine", "is not an Engine subclass"),
    ("tests.engines.broken_engines:NoEmit", "does not implement emit, parse_config"),
])
def test_broken_engine_package_is_one_line_exit_2(run_cli, bad_engine_dir, profile, target,
                                                  says):
    (bad_engine_dir / "broken.yaml").write_text(
        GOOD.format(name="broken").replace("tests.engines.fake_engine:FakeEngine", target))
    with pytest.raises(EngineDataError, match=says) as e:
        registry.get_engine("broken")
    assert "engine broken (broken.yaml)" in str(e.value)
    code, out, err = run_cli("recommend", "broken", "--profile", profile)
    assert code == EXIT_USAGE and out == ""
    assert err.count("\n") == 1 and says in err and "Traceback" not in err
    code, out, _ = run_cli("recommend", "postgres", "--profile", profile, "--version", "16")
    assert code == 0 and out
    code, out, _ = run_cli("doctor", "--json")
    rows = {c["name"]: c for c in json.loads(out)["capabilities"]}
    assert not rows["engine broken"]["available"] and says in rows["engine broken"]["detail"]


# ------------------------------------------------------------------ a new engine plugs in
def test_fake_engine_registered_with_catalog(fake_engine):
    assert fake_engine.name == "fake" and registry.resolve("fake-db")[1] == "fakedb"
    cat = fake_engine.catalog()
    assert cat.engine == "fake" and cat.get("sync").is_risky(False)
    assert any(r.id == "FAKE-BASE" for r in __import__(
        "pmem_advisor.rules.registry", fromlist=["x"]).baseline_rules())


def test_fake_recommend_json_and_out(run_cli, fake_engine, profile, tmp_path):
    conf = tmp_path / "fakedb.ini"
    code, out, _ = run_cli("recommend", "fake", "--profile", profile, "--memory", "8G",
                           "--out", str(conf), "--json")
    assert code == 0
    doc = json.loads(out)
    settings = {s["name"]: s for s in doc["settings"]}
    assert settings["cache_size"]["rule"] == "FAKE-BASE"
    assert doc["memory"]["total_bytes"] <= 8 << 30
    text = conf.read_text()
    assert "cache_size = " in text and "; FAKE-BASE" in text
    assert text.startswith("; fakedb.ini written by pmem-advisor")


def test_fake_check_config_and_unsafe(run_cli, fake_engine, profile, tmp_path):
    good = tmp_path / "good.ini"
    good.write_text("cache_size = 1G\nthreads = 4\n")
    code, _, err = run_cli("check", "--db", "fake", "--config", str(good), "--profile",
                           profile, "--version", "1.0", "--fail-on", "fail")
    assert code in (0, EXIT_FINDINGS) and "Traceback" not in err
    bad = tmp_path / "bad.ini"
    bad.write_text("threads = lots\n")
    code, out, err = run_cli("check", "--db", "fake", "--config", str(bad), "--profile",
                             profile, "--version", "1.0", "--json")
    assert code == EXIT_USAGE and out == "" and err.count("\n") == 1
    assert "threads: 'lots' is not a valid integer" in err


def test_fake_config_render_refuses_risky_and_bad_values(run_cli, fake_engine):
    code, out, _ = run_cli("config", "render", "fakedb", "--set", "threads=8")
    assert code == 0 and "threads = 8  ; requested" in out
    code, out, err = run_cli("config", "render", "fake", "--set", "sync=false")
    assert code == EXIT_USAGE and out == "" and "risks durability" in err
    code, out, err = run_cli("config", "render", "fake", "--set", "threads=500")  # max 128
    assert code == EXIT_USAGE and "threads" in err and "outside the allowed range" in err


def test_fake_config_validate_starts_it(run_cli, fake_engine, fake_binary, tmp_path):
    good = tmp_path / "good.ini"
    good.write_text("threads = 8\n")
    code, out, err = run_cli("config", "validate", str(good), "fake")
    assert code == 0, err
    assert "started with all 1 settings" in out
    refused = tmp_path / "refused.ini"
    refused.write_text("threads = 99\n")  # in the catalog's range, refused by the engine
    code, out, err = run_cli("config", "validate", str(refused), "fake")
    assert code == EXIT_USAGE and "threads: 99 exceeds the cores" in err


def test_fake_missing_binary_exit_3_names_package(run_cli, fake_engine, tmp_path,
                                                  monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no fakedb-server anywhere
    conf = tmp_path / "x.ini"
    conf.write_text("threads = 2\n")
    code, out, err = run_cli("config", "validate", str(conf), "fake")
    assert code == EXIT_ENVIRONMENT and out == ""
    assert err.count("\n") == 1 and "apt-get install fakedb-tools" in err
    ok, detail = fake_engine.binary_status()
    assert not ok and "fakedb-tools" in detail


def test_fake_tune_end_to_end(run_cli, fake_engine, fake_binary, tmp_path):
    """tune takes the engine's evaluator, workload, catalog and memory model; the tuned file
    is the engine's own format under the YAML's config_name."""
    pytest.importorskip("optuna")
    out_dir = tmp_path / "out"
    code, out, err = run_cli("tune", "fakedb", "--workload", "fake-kv", "--trials", "3",
                             "--duration", "1", "--warmup", "0", "--repeats", "0",
                             "--memory", "2G", "--out", str(out_dir), "--storage",
                             f"sqlite:///{tmp_path / 'study.db'}", "--json")
    assert code == 0, err
    tuned = out_dir / "fakedb.tuned.ini"
    text = tuned.read_text()
    assert "threads = " in text and text.startswith(";")
    assert registry.get_engine("fake").parse_config(text, str(tuned))
    from tests.engines.fake_engine import FakeEvaluator

    assert FakeEvaluator.closed  # the evaluator was closed at the end
    summary = json.loads(out)
    assert summary.get("config_file", "").endswith("fakedb.tuned.ini")


def test_tune_missing_binary_exit_3(run_cli, fake_engine, tmp_path, monkeypatch):
    pytest.importorskip("optuna")
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, err = run_cli("tune", "fake", "--workload", "fake-kv", "--trials", "1",
                             "--out", str(tmp_path / "out"))
    assert code == EXIT_ENVIRONMENT and err.count("\n") == 1
    assert "apt-get install fakedb-tools" in err


def test_tune_foreign_workload_is_usage_error(run_cli, fake_engine, fake_binary, tmp_path):
    pytest.importorskip("optuna")
    code, out, err = run_cli("tune", "fake", "--workload", "pgbench-tpcb", "--trials", "1",
                             "--out", str(tmp_path / "out"))
    assert code == EXIT_USAGE and "fake-kv" in err


def test_fake_tune_with_the_trust_region_gets_the_rules_knowledge(run_cli, fake_engine,
                                                                    fake_binary, tmp_path,
                                                                    monkeypatch):
    """`tune --sampler trust-region` centres the sampler on the rules' config, orders its
    moves by the rules' important knobs and holds it in their bounds: the same knowledge the
    benchmark's pmem-advisor arm gets (less the warm starts, which need the datasets)."""
    pytest.importorskip("optuna")
    from pmem_advisor.tuner import samplers, session

    made = []

    def spy(name, **kw):
        made.append((name, kw))
        return samplers.make_sampler(name, **kw)

    monkeypatch.setattr(session, "make_sampler", spy)
    code, out, err = run_cli("tune", "fakedb", "--workload", "fake-kv", "--trials", "4",
                             "--sampler", "trust-region", "--duration", "1", "--warmup", "0",
                             "--repeats", "0", "--memory", "2G", "--out",
                             str(tmp_path / "out"), "--storage",
                             f"sqlite:///{tmp_path / 'study.db'}", "--json")
    assert code == 0, err
    (name, kw), = made
    assert name == "trust-region" and kw["centre"] and kw["importance"]
    assert set(kw["centre"]) == set(kw["importance"])  # every searched knob, once
    assert json.loads(out).get("config_file", "").endswith("fakedb.tuned.ini")


def test_the_contracts_types_describe_the_layers_classes():
    # engines/api names knobs' and rules' types as protocols at the bottom (issue 53): the
    # real classes must keep what the protocols promise
    from pmem_advisor.engines import api
    from pmem_advisor.knobs.emit import EmittedConfig, Header, Setting

    catalog = registry.get_engine("postgres").catalog(None, "16")
    assert isinstance(catalog, api.KnobCatalog)
    for cls, proto in ((Setting, api.ConfigSetting), (Header, api.ConfigHeader),
                       (EmittedConfig, api.EmittedText)):
        fields = set(cls.__dataclass_fields__)
        assert set(proto.__annotations__) <= fields, (cls, proto)
    assert all(hasattr(r, "id") and hasattr(r, "engines")
               for r in registry.get_engine("postgres").baseline_rules())
