"""CK007 What a running PostgreSQL's statistics say (check --dsn).

Anti-pattern: settings that looked right on paper but do not fit the load the server really
sees: a shared_buffers hit ratio far below what an OLTP cache should give, queries that spill
sorts and hashes to temporary files (work_mem too small for them), checkpoints forced by WAL
volume instead of by checkpoint_timeout (max_wal_size too small: more full-page images and
I/O bursts; on PMEM K23 Table 7 doubled TPC-C at 128 clients by raising it, K23 §5.3.7), and
connection slots nearly used up.

Recommendation: raise shared_buffers (within the RAM budget), work_mem for the spilling
queries (or per role/session; on PMEM keep temp_tablespaces off PMEM, K23 §4.5.1),
max_wal_size until requested checkpoints are rare, and max_connections or a pooler. Counters
cover the time since the last statistics reset: less than a day, or too few blocks or
checkpoints, and the finding says the evidence is thin (as MySQLTuner does).

Sources: PostgreSQL manual, "Monitoring Database Activity: The Cumulative Statistics System"
(pg_stat_database, pg_stat_bgwriter, and pg_stat_checkpointer from PostgreSQL 17), "WAL
Configuration" (checkpoints requested vs timed, max_wal_size), §20.4.1 (work_mem); K23
§5.3.7, Table 7; K23 §4.5.1.
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding, human_bytes

DAY = 86400.0
MIN_BLOCKS = 100_000  # fewer block accesses than this say little about the hit ratio
MIN_CHECKPOINTS = 10  # the requested share of fewer checkpoints is noise
HIT_WARN = 0.90  # below 90% most reads miss shared_buffers (OLTP caches usually reach 99%)
REQUESTED_WARN = 0.20  # more than 1 in 5 checkpoints forced by WAL volume: max_wal_size small
TEMP_PER_DAY_WARN = 1 << 30  # over 1 GiB a day of temporary files: queries spill regularly
CONNECTIONS_WARN = 0.85  # 85% of the slots in use (MySQLTuner's threshold for the same ratio)


class PgStatus(Check):
    id = "CK007"
    title = "PostgreSQL statistics: hit ratio, temp files, checkpoints, connections"
    source = ("PostgreSQL manual: cumulative statistics, WAL configuration, §20.4.1; "
              "K23 §5.3.7, §4.5.1")
    insights = ("K23-6",)
    engines = ("postgres",)

    def run(self, inp: CheckInput) -> list[Finding]:
        st = inp.status
        if not st:
            return []
        out = []
        age = st.get("stats_age_s") or st.get("uptime_s") or 0.0
        days = max(age / DAY, 1e-9)
        thin = age < DAY
        if thin:
            out.append(self.finding(
                "info", "statistics", f"the statistics cover only {age / 3600:.1f} h (since "
                "the last reset or start): the findings below rest on little data",
                "check again after a day of normal load"))
        out += self._hit_ratio(st, thin)
        temp_files, temp_bytes = st.get("temp_files") or 0, st.get("temp_bytes") or 0
        if temp_files:
            per_day = temp_bytes / days
            sev = "warn" if per_day >= TEMP_PER_DAY_WARN and not thin else "info"
            pmem = (" Keep temp_tablespaces off PMEM (K23 §4.5.1)."
                    if inp.facts.data_on_pmem else "")
            out.append(self.finding(
                sev, "temp files", f"{int(temp_files)} temporary files, "
                f"{human_bytes(int(temp_bytes))} ({human_bytes(int(per_day))} a day): sorts "
                f"and hashes spill to disk (work_mem {inp.shown('work_mem')}).{pmem}",
                "raise work_mem for the spilling queries (ALTER ROLE ... SET work_mem) within "
                "the memory budget; log_temp_files = 0 names them"))
        out += self._checkpoints(st, inp, thin)
        max_conn = inp.value("max_connections", default=True)
        backends = st.get("backends")
        reserved = sum(v for v in (inp.value("superuser_reserved_connections", default=True),
                                   inp.value("reserved_connections", default=True))
                       if isinstance(v, int))
        if isinstance(max_conn, int) and backends is not None and max_conn - reserved > 0:
            used = backends / (max_conn - reserved)  # ordinary roles get the unreserved slots
            if used >= CONNECTIONS_WARN:
                out.append(self.finding(
                    "warn", "connections", f"{int(backends)} of max_connections {max_conn} "
                    f"in use, {reserved} reserved ({used:.0%} of the rest): new clients will "
                    "soon be refused",
                    "add a connection pooler (pgbouncer) or raise max_connections within the "
                    "memory budget"))
        return out

    def _hit_ratio(self, st: dict, thin: bool) -> list[Finding]:
        hit, read = st.get("blks_hit") or 0, st.get("blks_read") or 0
        if hit + read < MIN_BLOCKS:
            return []
        ratio = hit / (hit + read)
        if ratio >= HIT_WARN:
            return []
        return [self.finding(
            "info" if thin else "warn", "hit ratio",
            f"shared_buffers hit ratio {ratio:.1%} over {int(hit + read)} block reads: most "
            "reads go to the OS page cache or the disk (blks_read counts both)",
            "raise shared_buffers within the RAM budget, or find the scans "
            "(pg_stat_statements)")]

    def _checkpoints(self, st: dict, inp: CheckInput, thin: bool) -> list[Finding]:
        timed, req = st.get("checkpoints_timed") or 0, st.get("checkpoints_req") or 0
        total = timed + req
        if total < MIN_CHECKPOINTS or req / total <= REQUESTED_WARN:
            return []
        where = ("pg_stat_checkpointer" if inp.facts.version_at_least(17)
                 else "pg_stat_bgwriter")
        return [self.finding(
            "info" if thin else "warn", "checkpoints",
            f"{int(req)} of {int(total)} checkpoints were requested (WAL volume reached "
            f"max_wal_size {inp.shown('max_wal_size')}) rather than timed ({where}): "
            "more full-page writes and I/O bursts; on PMEM a larger max_wal_size more than "
            "doubled TPC-C at 128 clients (K23 Table 7)",
            "raise max_wal_size until requested checkpoints are rare")]


CHECK = PgStatus()
