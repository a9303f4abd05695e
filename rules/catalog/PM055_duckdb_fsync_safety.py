"""PM055 DuckDB: a config that skips fsync is a durability risk (check fails it).

Anti-pattern: ``SET fsync_mode = 'NONE'`` for speed. DuckDB's own description of the setting
says NONE "may cause database corruption after an operating system or hardware crash"; on
PMEM the gain is small anyway, since DuckDB keeps its WAL writes off the OLAP critical path
(K23 §4.1 saw DuckDB's I/O off the critical path). Which values are risky comes from the
catalog (knobs/data/duckdb.yaml risky_values), the one source of the safety classes.

Recommendation: keep fsync_mode STANDARD (the default); ``check`` fails a config that sets a
risky value unless the user passes --allow-unsafe, and recommend/tune never emit one without it.
"""

from pmem_advisor.engines import api
from pmem_advisor.rules.model import PRIORITY_SAFETY, Note, Rule


class DuckdbFsyncSafety(Rule):
    id = "PM055"
    title = "DuckDB: fsync_mode NONE may corrupt the database after a crash"
    insights = ()
    paper = "DuckDB settings reference (fsync_mode); K23 §4.1"
    priority = PRIORITY_SAFETY
    engines = ("duckdb",)

    def condition(self, f):
        return f.data_on_pmem and not f.allow_unsafe

    def effects(self, f):
        # a note, not a Bound: the tuner's space already drops the catalog's risky values,
        # and searching STANDARD vs FULL (macOS's fullfsync) measures nothing on Linux
        return [Note("info", "fsync_mode",
                     "keep fsync_mode STANDARD: DuckDB's OLAP I/O is off the critical path "
                     "(K23 §4.1), so skipping fsync buys little, and NONE may corrupt the "
                     "database after a crash (DuckDB's description of the setting)")]

    def check_config(self, f, config, effects, same_value):
        catalog = api.get_engine("duckdb").catalog()
        found = []
        for name in sorted(config):
            knob = catalog.find(name)
            if knob is None or not knob.risky_values:
                continue
            try:
                risky = knob.is_risky(str(config[name]))
            except Exception:  # noqa: BLE001 - a value the value checks report as invalid
                continue
            if risky and not f.allow_unsafe:
                found.append(self.finding(
                    "fail", name, f"{name} is {config[name]}: {knob.safety_reason}",
                    f"SET {name} = {knob.render(knob.default)}"))
        return found


RULE = DuckdbFsyncSafety()
