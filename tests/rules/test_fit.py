"""rules/fit.py: a recommendation fits its worst case, the pool giving before the per-session
buffers drop below the server's defaults; a budget nothing fits is refused by recommend."""

from __future__ import annotations

import json

import pytest

from pmem_advisor.errors import EXIT_USAGE
from pmem_advisor.rules import build_facts, recommend
from pmem_advisor.rules.budget_search import smallest_fitting_budget
from pmem_advisor.rules.fit import fitted_budget
from pmem_advisor.rules.memory import worst_case
from tests.rules.machines import make_profile

MB, GB = 1 << 20, 1 << 30
PROFILE = make_profile({"preset": "ssd", "memory_gb": 32, "cores": 4, "threads": 4})


def _rec(engine, flavour, version, memory, clients):
    facts = build_facts(PROFILE, engine=engine, flavour=flavour, version=version,
                        memory_bytes=memory, clients=clients, target=True)
    return recommend(facts)




@pytest.mark.parametrize("memory,clients,pool_gave_all", [
    (16 * GB, 400, False), (4 * GB, 150, False), (8 * GB, 500, True), (8 * GB, 1000, True)])
def test_mariadb_buffers_stay_at_defaults_while_the_pool_can_give(memory, clients,
                                                                  pool_gave_all):
    rec = _rec("mysql", "mariadb", "10.11", memory, clients)
    assert rec.memory.total_bytes <= fitted_budget(memory)
    est = {p.name: p.bytes for p in rec.memory.parts}
    below = [n for n, default in (("sort_buffer_size", 2 * MB), ("join_buffer_size", 256 << 10),
                                  ("read_buffer_size", 128 << 10))
             if est.get(n, default) < default]
    assert bool(below) == pool_gave_all, (below, est)
    if below:  # only once the pool is down to its 128 MB floor
        assert est["innodb_buffer_pool_size"] == 128 * MB, (below, est)
        assert "below the server's default" in rec.setting("sort_buffer_size").reason
    else:
        assert "lowered from" in rec.setting("innodb_buffer_pool_size").reason


@pytest.mark.parametrize("memory,clients,pool_gave_all", [
    (8 * GB, 200, False), (16 * GB, 400, False), (4 * GB, 100, False), (4 * GB, 120, True)])
def test_postgres_work_mem_stays_at_default_while_shared_buffers_can_give(memory, clients,
                                                                          pool_gave_all):
    rec = _rec("postgres", None, "16", memory, clients)
    assert rec.memory.total_bytes <= fitted_budget(memory)
    parts = {p.name: p.bytes for p in rec.memory.parts}
    work_mem = rec.setting("work_mem").value * 1024  # kB
    assert (work_mem < 4 * MB) == pool_gave_all, (work_mem, parts["shared_buffers"])
    if work_mem < 4 * MB:
        assert parts["shared_buffers"] == 128 * MB, (work_mem, parts["shared_buffers"])
    elif work_mem == 4 * MB:
        assert "lowered from" in rec.setting("shared_buffers").reason
    assert rec.setting("max_connections").value == clients + 10  # --clients: ours to keep


def _worst(rec, name, value):
    from pmem_advisor.rules.memory import worst_case

    f = rec.facts
    settings = {s.name: s.value for s in rec.settings}
    return worst_case(f.engine, {**settings, name: value}, flavour=f.flavour,
                      version=f.version, host_memory_bytes=32 * GB).total_bytes


def test_a_search_bound_ends_where_the_worst_case_leaves_the_budget():
    # PM031 bounds InnoDB's pool at 75% of the budget; with 18 production connections beside
    # it, 768 MB of a 1 GiB budget cannot fit their worst case: tune's gate would refuse
    # every trial up there
    rec = _rec("mysql", "mariadb", "10.11", 1 * GB, 8)
    lo, hi = rec.bounds["innodb_buffer_pool_size"]
    # PM031's floor is the 512 MB baseline; the fitted pool below it takes the floor down
    assert lo == rec.setting("innodb_buffer_pool_size").value < 512 * MB, lo
    assert 384 * MB < hi < 768 * MB, hi
    assert _worst(rec, "innodb_buffer_pool_size", hi) <= 1 * GB
    assert _worst(rec, "innodb_buffer_pool_size", int(hi * 1.01)) > 1 * GB
    assert any("search bound innodb_buffer_pool_size" in n and "1.0 GiB" in n
               for n in rec.notes), rec.notes


def test_a_search_bound_that_fits_is_left_as_the_rule_gave_it():
    rec = _rec("mysql", "mariadb", "10.11", 4 * GB, 8)
    assert rec.bounds["innodb_buffer_pool_size"] == (2 * GB, 3 * GB)  # 75% fits beside 18
    assert _worst(rec, "innodb_buffer_pool_size", 3 * GB) <= 4 * GB
    assert not any(n.startswith("search bound") for n in rec.notes), rec.notes
    assert rec.bounds["innodb_log_file_size"][1] == 8 * GB  # a log file is no memory


def test_smallest_fitting_budget_fits_and_a_smaller_one_does_not():
    facts = build_facts(PROFILE, engine="postgres", version="16", memory_bytes=64 * MB,
                        clients=500, target=True)
    need = smallest_fitting_budget(facts)
    assert need is not None and need % (64 * MB) == 0
    from dataclasses import replace

    fits = recommend(replace(facts, memory_bytes=need))
    assert fits.memory.total_bytes <= fitted_budget(need)
    short = recommend(replace(facts, memory_bytes=need - 64 * MB))
    assert short.memory.total_bytes > fitted_budget(need - 64 * MB)


@pytest.mark.parametrize("db", ["postgres", "mariadb"])
def test_recommend_refuses_a_budget_nothing_fits(run_cli, tmp_path, db):
    out_file = tmp_path / "out.conf"
    code, out, err = run_cli("recommend", db, "--memory", "64M", "--clients", "500",
                             "--out", str(out_file))
    assert code == EXIT_USAGE, out + err
    assert err.count("\n") == 1 and "the smallest budget that fits --clients 500" in err
    assert not out_file.exists()
    flag = err.split("--memory ")[-1].split()[0]
    code, out, err = run_cli("recommend", db, "--memory", flag, "--clients", "500", "--out",
                             str(out_file))
    assert code == 0, err
    code, out, err = run_cli("check", "--db", db, "--config", str(out_file), "--memory", flag,
                             "--format", "json")
    found = json.loads(out)["findings"]
    assert code == 0 and not [f for f in found if f["rule"] == "CK004"], found


def test_refusal_names_the_most_clients_the_budget_holds(run_cli):
    code, out, err = run_cli("recommend", "postgres", "--version", "16", "--memory", "512M")
    assert code == EXIT_USAGE, out + err
    most = int(err.split("at most --clients ")[1].split()[0])
    assert run_cli("recommend", "postgres", "--version", "16", "--memory", "512M",
                   "--clients", str(most))[0] == 0
    assert run_cli("recommend", "postgres", "--version", "16", "--memory", "512M",
                   "--clients", str(most + 1))[0] == EXIT_USAGE


def test_an_engine_without_connections_is_refused_without_speaking_of_them(run_cli):
    code, _, err = run_cli("recommend", "duckdb", "--memory", "64M")
    assert code == EXIT_USAGE and "the smallest budget that fits is" in err
    assert "connections" not in err.split("fits")[1].split(":")[0]


@pytest.mark.parametrize("flavour,version,clients,step", [
    ("mariadb", "10.11", 8, MB), ("mariadb", "11.4", 8, MB), ("mysql", "8.0", 200, 128 * MB)])
def test_a_lowered_pool_is_what_the_server_runs_and_all_that_fits(flavour, version, clients,
                                                                  step):
    """MySQL runs the pool in whole 128 MB chunks, rounding up, so a fitted pool stops at a
    chunk; MariaDB 10.8+ runs any whole MiB (10.11.19: SET GLOBAL 471 MiB reads back 471 MiB),
    so the pool takes all that fits, not the chunk below it (384 MB at 1 GiB before)."""
    rec = _rec("mysql", flavour, version, 1 * GB, clients)
    pool = rec.setting("innodb_buffer_pool_size").value
    assert "lowered" in rec.setting("innodb_buffer_pool_size").reason
    assert pool % step == 0 and rec.memory.total_bytes <= fitted_budget(1 * GB)
    bigger = worst_case("mysql", {**{s.name: s.value for s in rec.settings},
                                  "innodb_buffer_pool_size": pool + step},
                        flavour=flavour, version=version, catalog=None)
    assert bigger.total_bytes > fitted_budget(1 * GB)  # one step more would not fit


@pytest.mark.parametrize("clients", [8, 18])
def test_the_rules_trial_runs_the_fitted_pool_not_the_unfit_one(clients):
    """MEM-FIT lowers the pool after the rules' priors were taken from it: the tuner's
    rules-only trial (priors first) must start from what fits, inside the search bound."""
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.tuner.space import KnobSpec, build_space

    rec = _rec("mysql", "mariadb", "10.11", 1 * GB, clients)
    pool = rec.setting("innodb_buffer_pool_size").value
    assert pool < 512 * MB  # the fit lowered it
    assert rec.priors["innodb_buffer_pool_size"] == pool
    lo, hi = rec.bounds["innodb_buffer_pool_size"]
    assert lo <= pool <= hi
    specs = {k.name: KnobSpec.from_knob(k) for k in load_catalog("mysql", "mariadb", "10.11")}
    space = build_space(specs, engine="mysql", flavour="mariadb", version="10.11",
                        important=list(rec.important), bounds=rec.bounds, priors=rec.priors,
                        rule_settings={s.name: s.value for s in rec.settings})
    assert space.rules_params["innodb_buffer_pool_size"] == pool
    assert space.distributions()["innodb_buffer_pool_size"].high <= hi
