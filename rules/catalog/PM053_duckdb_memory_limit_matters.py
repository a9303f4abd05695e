"""PM053 DuckDB: memory_limit decides whether the big joins run at all.

Anti-pattern: leaving DuckDB's memory_limit at its 80%-of-RAM default on a host whose real
budget is smaller (a cgroup, other services), or disabling spilling (``temp_directory = ''``).
In K23's TPC-H SF100 "DuckDB cannot execute queries 17 and 21 because of insufficient memory"
(K23 §4.1, Fig. 2); both are large joins over lineitem. The paper ran DuckDB v0.6.1; newer
DuckDB spills more operators to temp_directory, which is why a spill directory matters too.

Recommendation: for OLAP, memory_limit is sized from the budget with the worst case counted
(the baseline) and searched by the tuner between a quarter of the budget and that value;
``check`` warns when spilling is disabled or memory_limit exceeds the budget.
"""

from pmem_advisor.engines.duckdb.baseline import memory_limit, physical_cores_near
from pmem_advisor.rules.memory import BUDGET_SHARE
from pmem_advisor.rules.model import PRIORITY_SPEED, Bound, Bytes, Note, Rule

MB = 1 << 20


class DuckdbMemoryLimitMatters(Rule):
    id = "PM053"
    title = "DuckDB OLAP: memory_limit within the budget, spilling kept on (K23: Q17/Q21 OOM)"
    insights = ()
    paper = "K23 §4.1, Fig. 2"
    priority = PRIORITY_SPEED
    engines = ("duckdb",)

    def condition(self, f):
        return f.workload in ("olap", "mixed")

    def effects(self, f):
        hi = memory_limit(f, physical_cores_near(f))
        lo = max(64 * MB, hi // 4 // MB * MB)
        return [Bound("memory_limit", Bytes(lo), Bytes(hi),
                      reason="a quarter of the budget .. the budget less DuckDB's other "
                             "memory: K23's DuckDB ran out of memory on TPC-H Q17 and Q21"),
                Note("info", "memory_limit",
                     "K23's DuckDB could not run TPC-H Q17 and Q21 for insufficient memory "
                     "(K23 §4.1): memory_limit and a spill directory decide whether large "
                     "joins finish")]

    def check_config(self, f, config, effects, same_value):
        from pmem_advisor.engines.duckdb.catalog import parse_size

        found = []
        if "temp_directory" in config and not str(config["temp_directory"]).strip():
            found.append(self.finding(
                "warn", "temp_directory",
                "temp_directory is empty: DuckDB cannot spill, so a join beyond memory_limit "
                "fails as K23's Q17/Q21 did (K23 §4.1)",
                "SET temp_directory to a directory on an SSD"))
        text = config.get("memory_limit")
        if text is not None:
            try:
                limit = parse_size(str(text), "memory_limit", ram=f.memory_bytes)
            except Exception:  # noqa: BLE001 - the value checks report bad text
                return found
            budget = int(f.memory_bytes * BUDGET_SHARE)
            if limit > budget:
                found.append(self.finding(
                    "warn", "memory_limit",
                    f"memory_limit {text} is more than {BUDGET_SHARE:.0%} of the "
                    f"{f.memory_bytes >> 20} MiB budget, before DuckDB's memory outside it",
                    f"SET memory_limit = '{memory_limit(f, physical_cores_near(f)) >> 20}MiB'"))
        return found


RULE = DuckdbMemoryLimitMatters()
