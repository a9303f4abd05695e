"""CK017 A running server's memory settings far below what its budget holds (check --dsn).

Anti-pattern: a server left at its packaged sizes on a machine with far more memory: Debian's
PostgreSQL starts with shared_buffers = 128MB and effective_cache_size = 4GB whatever the
host has, MariaDB with a 128 MB buffer pool. It runs, but reads that a cache sized for the
budget would serve go to the OS page cache or the disk, the planner prices index scans as if
the data could not be cached, and sorts and hashes spill to temporary files that a work_mem
sized for the budget would hold. postgresqltuner and MySQLTuner report the same without
being asked; so does ``check --dsn``, beside what ``--diff`` would change.

Recommendation: the sizes ``recommend`` gives for this budget and the server's own
max_connections (``check --dsn --diff`` prints the statements): a main buffer (shared_buffers,
innodb_buffer_pool_size) of at least a quarter of that advice, or at least the data it caches
(MySQLTuner: the buffer pool holds the InnoDB data); effective_cache_size near the memory the
OS can cache; work_mem raised toward the advice while queries spill temporary files.

Sources: PostgreSQL manual §20.4.1 (shared_buffers: "a reasonable starting value is 25% of
the memory"), §20.7.2 (effective_cache_size); MariaDB KB "InnoDB Buffer Pool"; MySQLTuner
(buffer pool vs InnoDB data size); pgtune's formulas (the engines' baselines), fitted by
rules/fit.py.
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.memory import gib
from pmem_advisor.rules.model import Finding, human_bytes

FAR_BELOW = 4  # a quarter of the advice or less: packaged defaults, not a sizing choice
SPILL_ROOM = 2  # work_mem at half the advice or less while queries spill: worth raising
PLANNER_HINTS = ("effective_cache_size",)  # memory the planner assumes, not allocates


def _bytes(inp: CheckInput, name: str, value) -> int | None:
    """A size knob's value (its base unit) in bytes."""
    from pmem_advisor.knobs.units import size_bytes

    return size_bytes(inp.knob(name), value)


class LiveSizing(Check):
    id = "CK017"
    title = "A running server's memory settings far below what its budget holds"
    source = ("PostgreSQL manual §20.4.1, §20.7.2; MariaDB KB InnoDB Buffer Pool; MySQLTuner; "
              "pgtune")
    engines = ()  # any running server the rules size (CheckInput.advice)

    def run(self, inp: CheckInput) -> list[Finding]:
        rec = inp.advice
        if rec is None or inp.source != "server" or inp.budget is None:
            return []
        from pmem_advisor.engines.api import get_engine

        out = []
        budget = gib(inp.budget.memory_bytes)
        main = get_engine(inp.facts.engine).main_buffer
        for name in (main, *PLANNER_HINTS):
            advised = rec.setting(name) if name else None
            if advised is None or name not in inp.settings:
                continue
            have = _bytes(inp, name, inp.value(name))
            want = _bytes(inp, name, advised.value)
            if have is None or not want or have * FAR_BELOW > want:
                continue
            data = self._data_bytes(inp) if name == main else None
            if data is not None and data <= have:
                continue  # the whole data set fits the buffer as it is
            held = f"; the InnoDB data is {human_bytes(data)}" if data is not None else ""
            what = ("the planner assumes that little cache and prices index scans too high"
                    if name in PLANNER_HINTS else "reads that a cache sized for the budget "
                    "would serve go to the OS page cache or the disk")
            out.append(self.finding(
                "info" if name in PLANNER_HINTS else "warn", name,
                f"{name} = {inp.shown(name)} is {have / want:.0%} of the {advised.text} the "
                f"{budget} budget holds ({inp.budget.memory_source}){held}: {what}",
                f"{name} = {advised.text} (check --dsn --diff gives the statement)"))
        out += self._work_mem(inp, rec)
        return out

    def _data_bytes(self, inp: CheckInput) -> int | None:
        try:
            return int(float((inp.status or {}).get("innodb_data_bytes")))
        except (TypeError, ValueError):
            return None

    def _work_mem(self, inp: CheckInput, rec) -> list[Finding]:
        """Queries spilling to temporary files while work_mem is well below the advice."""
        st = inp.status or {}
        advised = rec.setting("work_mem")
        if advised is None or not st.get("temp_files"):
            return []
        have = _bytes(inp, "work_mem", inp.value("work_mem", default=True))
        want = _bytes(inp, "work_mem", advised.value)
        if have is None or not want or have * SPILL_ROOM > want:
            return []
        conns = rec.setting("max_connections")
        spilled = human_bytes(int(st.get("temp_bytes") or 0))
        return [self.finding(
            "warn", "work_mem",
            f"{int(st['temp_files'])} temporary files ({spilled}) spilled with work_mem = "
            f"{inp.shown('work_mem')}; the budget holds {advised.text} for max_connections "
            f"{conns.text if conns else inp.shown('max_connections')} in the worst case",
            f"work_mem = {advised.text}, or per role for the spilling queries")]


CHECK = LiveSizing()
