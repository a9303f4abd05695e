"""CK008 What a running MySQL/MariaDB's status counters say (check --dsn).

Anti-pattern: a server whose counters show it does not fit its load: buffer pool reads that
miss (``Innodb_buffer_pool_reads`` against ``_read_requests``), threads waiting for a free page
(``Innodb_buffer_pool_wait_free``: pool too small or page cleaners too slow), implicit
temporary tables written to disk (``Created_tmp_disk_tables``), waits for the redo log buffer
(``Innodb_log_waits``), failed or dropped connections (``Aborted_connects``,
``Aborted_clients``) and connection slots nearly used up (``Max_used_connections``,
``Threads_connected``).

Recommendation: raise innodb_buffer_pool_size (within the RAM budget), innodb_log_buffer_size,
tmp_table_size together with max_heap_table_size (on PMEM keep tmpdir off PMEM, K23 §4.5.1),
max_connections or a pooler; look at the clients behind aborted connections. Counters run from
the server's start: under a day of uptime, or too few requests, the finding says the evidence
is thin (MySQLTuner's caveat).

Sources: MySQL 8.4 manual §7.1.10 (server status variables), §17.8.3.1 (buffer pool size);
MariaDB KB "Server status variables", "InnoDB status variables"; MySQLTuner's thresholds for
the same ratios (25% disk temporary tables, 85% connections, 3% aborted connects).
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding

DAY = 86400.0
MIN_REQUESTS = 100_000  # fewer buffer pool read requests say little about the hit ratio
HIT_WARN = 0.95  # under 95% of page reads served from the pool: the working set does not fit
TMP_DISK_WARN = 0.25  # over a quarter of implicit temp tables on disk (MySQLTuner: 25%)
CONNECTIONS_WARN = 0.85  # 85% of the slots used at the peak (MySQLTuner)
ABORTED_CONNECTS_WARN = 0.03  # over 3% of connection attempts fail (MySQLTuner)
ABORTED_CLIENTS_WARN = 0.05  # over 5% of sessions end without a proper close
MIN_TMP_TABLES = 100
MIN_CONNECTIONS = 100


def _num(st: dict, key: str) -> float | None:
    try:
        return float(st[key])
    except (KeyError, TypeError, ValueError):
        return None


class MysqlStatus(Check):
    id = "CK008"
    title = "MySQL/MariaDB status: buffer pool, temp tables, log waits, connections"
    source = "MySQL 8.4 manual §7.1.10, §17.8.3.1; MariaDB KB status variables; MySQLTuner"
    engines = ("mysql",)

    def run(self, inp: CheckInput) -> list[Finding]:
        st = inp.status
        if not st:
            return []
        out = []
        uptime = _num(st, "Uptime") or 0.0
        thin = uptime < DAY
        if thin:
            out.append(self.finding(
                "info", "statistics", f"the server has been up {uptime / 3600:.1f} h: the "
                "findings below rest on little data", "check again after a day of normal load"))
        sev = "info" if thin else "warn"
        reads, reqs = _num(st, "Innodb_buffer_pool_reads"), _num(st, "Innodb_buffer_pool_read_"
                                                                  "requests")
        if reads is not None and reqs and reqs >= MIN_REQUESTS and 1 - reads / reqs < HIT_WARN:
            out.append(self.finding(
                sev, "buffer pool hit ratio", f"{1 - reads / reqs:.1%} of {int(reqs)} page "
                "reads were served from the buffer pool: the working set does not fit",
                "raise innodb_buffer_pool_size within the RAM budget"))
        wait_free = _num(st, "Innodb_buffer_pool_wait_free")
        if wait_free:
            out.append(self.finding(
                sev, "buffer pool waits", f"Innodb_buffer_pool_wait_free is {int(wait_free)}: "
                "threads waited for a clean page (pool too small or flushing too slow)",
                "raise innodb_buffer_pool_size or innodb_io_capacity"))
        disk, tmp = _num(st, "Created_tmp_disk_tables"), _num(st, "Created_tmp_tables")
        if disk is not None and tmp and tmp >= MIN_TMP_TABLES and disk / tmp > TMP_DISK_WARN:
            pmem = " Keep tmpdir off PMEM (K23 §4.5.1)." if inp.facts.data_on_pmem else ""
            out.append(self.finding(
                sev, "temp tables", f"{disk / tmp:.0%} of {int(tmp)} implicit temporary tables "
                f"went to disk.{pmem}", "raise tmp_table_size and max_heap_table_size together; "
                "TEXT/BLOB columns always go to disk"))
        log_waits = _num(st, "Innodb_log_waits")
        if log_waits:
            out.append(self.finding(
                sev, "log waits", f"Innodb_log_waits is {int(log_waits)}: transactions waited "
                "for room in the redo log buffer", "raise innodb_log_buffer_size"))
        out += self._connections(inp, st, sev)
        return out

    def _connections(self, inp: CheckInput, st: dict, sev: str) -> list[Finding]:
        out = []
        conns = _num(st, "Connections") or 0
        aborted = _num(st, "Aborted_connects") or 0
        if conns >= MIN_CONNECTIONS and aborted / conns > ABORTED_CONNECTS_WARN:
            out.append(self.finding(
                sev, "aborted connects", f"{int(aborted)} of {int(conns)} connection attempts "
                f"failed ({aborted / conns:.1%}): wrong passwords, missing privileges, "
                "connect_timeout or max_connections", "look at the error log; "
                "performance_schema.host_cache names the hosts"))
        clients = _num(st, "Aborted_clients") or 0
        if conns >= MIN_CONNECTIONS and clients / conns > ABORTED_CLIENTS_WARN:
            out.append(self.finding(
                "info", "aborted clients", f"{int(clients)} sessions ended without a proper "
                f"close ({clients / conns:.1%}): clients killed, or wait_timeout reached",
                "close connections in the application; check wait_timeout"))
        max_conn = inp.value("max_connections", default=True)
        peak = _num(st, "Max_used_connections")
        now = _num(st, "Threads_connected")
        if isinstance(max_conn, int) and max_conn > 0 and peak is not None:
            if peak / max_conn >= CONNECTIONS_WARN:
                out.append(self.finding(
                    "warn", "connections", f"up to {int(peak)} of max_connections {max_conn} "
                    f"were in use ({peak / max_conn:.0%}; {int(now or 0)} now): clients will be "
                    "refused at the next peak", "raise max_connections within the memory "
                    "budget, or pool connections"))
        return out


CHECK = MysqlStatus()
