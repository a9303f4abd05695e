"""The product's memory limits in the benchmark: every arm searches what tune would at the
scenario's budget (a global buffer only up to what the production connections' worst case
leaves), and a config tune's gate refuses is a failed trial, not a credited one."""

from __future__ import annotations

import pickle

from benchmarks import run
from benchmarks.harness import production, surrogate
from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.rules import build_facts, recommend
from pmem_advisor.tuner.evaluator import TrialConfig
from tests.benchmarks.synthetic import make_dataset
from tests.rules.machines import make_profile

MB, GB = 1 << 20, 1 << 30
POOL = "innodb_buffer_pool_size"


def _mariadb_memory(budget: int = 1 * GB, clients: int = 8) -> production.ProductionMemory:
    profile = make_profile({"preset": "ssd", "memory_gb": 32, "cores": 2, "threads": 2})
    facts = build_facts(profile, engine="mysql", flavour="mariadb", version="10.11",
                        memory_bytes=budget, clients=clients, workload="oltp", target=True)
    rec = recommend(facts)
    catalog = load_catalog("mysql", "mariadb", "10.11")
    memory = production.from_recommendation(rec, catalog, "mysql", "mariadb", budget)
    assert memory is not None
    return memory


def test_the_pool_is_searched_only_as_far_as_the_worst_case_fits():
    memory = _mariadb_memory()
    cap = memory.cap(POOL)
    # the collector searched up to 3/4 of the budget (768 MB); beside 18 production
    # connections' worst case the pool must stay well under it
    assert 384 * MB < cap < 768 * MB, cap
    assert memory.unfit({POOL: int(cap)}) is None
    why = memory.unfit({POOL: int(cap * 1.02)})
    assert why and "worst-case memory" in why and "18 connections" in why
    assert memory.cap("innodb_log_file_size") == 16 * GB  # a file, not memory: tune's cap
    assert memory.human(POOL, 512 * MB) == "512 MB"


def test_a_larger_budget_leaves_the_pool_more_room():
    assert _mariadb_memory(4 * GB).cap(POOL) > 2 * GB > _mariadb_memory(1 * GB).cap(POOL)


def test_the_limits_cross_into_worker_processes():
    memory = _mariadb_memory()
    memory.unfit({POOL: 256 * MB})  # builds the gate (a closure: not picklable itself)
    copy = pickle.loads(pickle.dumps(memory))
    assert copy == memory
    assert copy.unfit({POOL: 900 * MB}) and copy.unfit({POOL: 256 * MB}) is None


def test_the_surrogate_does_not_run_a_config_over_the_budget(tmp_path):
    make_dataset(tmp_path, rows=40)
    data = surrogate.load_scenario("syn-pg", tmp_path)
    x, y = data.training()
    fitted = surrogate.fit(x, y)

    def unfit(params):
        return "worst-case memory 2GB exceeds the 1GB budget" if params.get("x", 0) > 80 \
            else None

    ev = surrogate.SurrogateEvaluator(data, fitted, unfit=unfit)
    over = ev.evaluate(TrialConfig(params={"x": 90, "y": 30.0, "mode": "b"}))
    assert not over.ok and over.failure.startswith(surrogate.NOT_RUN)
    assert over.raw["expected"] == 0.0  # nothing to credit
    assert ev.evaluate(TrialConfig(params={"x": 70, "y": 30.0, "mode": "b"})).ok
    rules = data.fixed_config("rules")
    assert ev.evaluate(rules).ok  # a measured fixed point answers with its own runs


class _Room:
    """Stands in for ProductionMemory: x may go to 50 at most, y has no memory limit."""

    def cap(self, name):
        return {"x": 50.5}.get(name)


def test_the_harness_space_narrows_only_where_the_product_is_tighter(tmp_path):
    make_dataset(tmp_path, rows=40)
    data = surrogate.load_scenario("syn-pg", tmp_path)
    wide = {p.name: p for p in run.harness_space(data).params}
    narrow = {p.name: p for p in run.harness_space(data, _Room()).params}
    assert narrow["x"].high == 50 and wide["x"].high == 100  # int knob: a whole value
    assert narrow["y"] == wide["y"] and narrow["mode"] == wide["mode"]
