"""CK022 The slow query log tuned in a config that leaves the log itself off.

Anti-pattern: a my.cnf that sets the slow log's threshold, file or filters
(``long_query_time = 2``, ``slow_query_log_file = ...``, ``log_queries_not_using_indexes``;
MariaDB 10.11's ``log_slow_query_time``/``log_slow_query_file``) while ``slow_query_log``
(MariaDB also ``log_slow_query``) is OFF, by its default or written so; or the log switched
on with ``log_output = NONE``. Both MySQL and MariaDB ship the slow log OFF, so the lines do
nothing: the config says slow queries are caught, and none is written. A tune that relies on
the slow log to find the queries that hurt has nothing to read.

Recommendation: switch the log on where its settings say it is wanted (``slow_query_log =
ON``, a FILE or TABLE ``log_output``), or remove the settings. MySQLTuner's own general
recommendation for a server whose slow log is off is "Enable the slow query log to
troubleshoot bad queries"; this check speaks only where the file itself asks for the log, so
a config that never mentions it (the servers' default) gets no word: no false positive on
every stock file.

Sources: MySQL 8.4 manual §7.4.5 (the slow query log: slow_query_log, long_query_time,
log_output; "By default, the slow query log is disabled"); MariaDB KB "Slow Query Log
Overview" (log_slow_query, the 10.11 names); MySQLTuner-perl mysqltuner.pl (mysql_stats:
"Enable the slow query log to troubleshoot bad queries", "long_query_time (<= 10)").
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding

SWITCHES = ("slow_query_log", "log_slow_query")  # MariaDB 10.11: log_slow_query, the new name
# settings that only act through the slow log (MySQL names, then MariaDB's own)
TUNES = ("long_query_time", "slow_query_log_file", "log_queries_not_using_indexes",
         "min_examined_row_limit", "log_slow_admin_statements", "log_slow_replica_statements",
         "log_slow_slave_statements", "log_slow_extra", "log_throttle_queries_not_using_indexes",
         "log_slow_query_time", "log_slow_query_file", "log_slow_verbosity",
         "log_slow_rate_limit", "log_slow_filter", "log_slow_min_examined_row_limit",
         "log_slow_max_warnings")


class SlowLog(Check):
    id = "CK022"
    title = "Slow query log settings with the slow log off"
    source = "MySQL 8.4 manual §7.4.5; MariaDB KB Slow Query Log Overview; MySQLTuner"
    insights = ()
    engines = ("mysql",)

    def run(self, inp: CheckInput) -> list[Finding]:
        if inp.source != "config" or not inp.settings or not inp.facts.mysql:
            return []
        lines = inp.where or inp.settings  # the file's own lines, never the server's defaults
        switch = next((n for n in SWITCHES if n in inp.settings and inp.knob(n) is not None),
                      None)
        on = inp.value(switch) if switch else False  # both servers ship it OFF
        if on is None:
            return []  # unreadable: CK002 reports it
        if on:
            output = (inp.text("log_output") or "").upper().replace(" ", "")
            if "log_output" in lines and output.split(",") == ["NONE"]:
                return [self.finding(
                    "warn", "log_output", f"log_output = NONE{inp.at('log_output')} while "
                    f"{switch} is ON{inp.at(switch)}: no slow query is written anywhere",
                    "set log_output = FILE (or TABLE), or switch the slow log off")]
            return []
        tunes = [n for n in TUNES if n in lines]
        if not tunes:
            return []
        said = ", ".join(f"{n} = {inp.settings[n]}{inp.at(n)}" if inp.settings[n] is not None
                         else f"{n}{inp.at(n)}" for n in tunes)
        state = (f"{switch} is OFF{inp.at(switch)}" if switch else
                 "slow_query_log is OFF (the default)")
        return [self.finding(
            "warn", switch or "slow_query_log",
            f"{said} tune the slow query log, but {state}: the lines do nothing and no slow "
            "query is logged (MySQLTuner: \"Enable the slow query log to troubleshoot bad "
            "queries\")",
            "set slow_query_log = ON, or remove the slow-log settings")]


CHECK = SlowLog()
