"""CK001 Durability settings that lose committed data, on any storage.

Anti-pattern: settings that trade durability for speed in a production config:
PostgreSQL ``fsync=off`` (a crash can corrupt the cluster beyond repair), ``full_page_writes=
off`` (torn 8 kB pages cannot be repaired), ``synchronous_commit=off`` (the last commits are
lost), ``data_sync_retry=on`` (a retried fsync can report success for data the kernel already
dropped); InnoDB ``innodb_flush_log_at_trx_commit`` 0 or 2 (about a second of commits lost),
``sync_binlog`` 0 or > 1 with the binary log on, ``innodb_doublewrite`` OFF, ``DETECT_ONLY``
(detects a torn page, cannot repair it) or MariaDB's ``fast`` (no fsync of the data files:
MariaDB documents it as possibly unsafe), and flush methods that skip fsync (``nosync``,
``littlesync``, ``O_DIRECT_NO_FSYNC``: MariaDB 10.11 skips the data-file flush at
checkpoints, MySQL is unsafe before 8.0.14 and when redo and data sit on different devices).
Every Linux ``wal_sync_method`` is durable (``fsync_writethrough`` does not exist on Linux:
CK002 fails it as a bad enum value). On PMEM the papers' speed-ups for these knobs (K23
§5.3.2, §5.3.4) do not change the risk: DAX gives 8-byte failure atomicity only (H4).

Recommendation: the safe defaults (fsync, full_page_writes, synchronous_commit on;
data_sync_retry off; innodb_flush_log_at_trx_commit=1, sync_binlog=1, doublewrite ON,
O_DIRECT). A deliberate exception passes only with ``--allow-unsafe`` and stays visible.

Sources: PostgreSQL manual §20.5 (runtime-config-wal: fsync, full_page_writes,
synchronous_commit), §20.14 (data_sync_retry); MySQL 8.4 manual §17.14 (innodb parameters),
§19.1.6.4 (sync_binlog); MariaDB KB "InnoDB system variables" (innodb_doublewrite,
innodb_flush_method).
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding

# the knobs worded below; any other value the catalog lists as risky is reported generically
HANDLED = {"fsync", "full_page_writes", "synchronous_commit", "data_sync_retry",
           "innodb_flush_log_at_trx_commit", "sync_binlog", "innodb_doublewrite",
           "innodb_flush_method", "log_bin"}


def _on(value) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("on", "true", "yes", "1")


class Durability(Check):
    id = "CK001"
    title = "Durability settings that lose committed data"
    source = ("PostgreSQL manual §20.5, §20.14; MySQL 8.4 manual §17.14, §19.1.6.4; "
              "MariaDB KB InnoDB system variables")
    insights = ("H4",)
    engines = ("postgres", "mysql")
    replaces = ("PM015", "PM016")

    def run(self, inp: CheckInput) -> list[Finding]:
        if not inp.settings:
            return []
        found = self._pg(inp) if inp.facts.pg else self._mysql(inp)
        return found + self._catalog_risks(inp, HANDLED | {f.subject for f in found})

    def _catalog_risks(self, inp: CheckInput, handled: set[str]) -> list[Finding]:
        """Any other value the knob catalog classes as a durability risk (one source of truth
        for knobs this file does not word itself)."""
        from pmem_advisor.knobs.catalog import risky_settings

        values = {n: inp.value(n) for n in set(inp.settings) - handled}
        return [self.risk(inp, name, f"{name} is {inp.text(name)}{inp.at(name)}: "
                          f"{knob.safety_reason}", f"set {name} = {knob.render(knob.default)}")
                for name, knob in risky_settings(inp.knob, values)]

    # ------------------------------------------------------------------ PostgreSQL
    def _pg(self, inp: CheckInput) -> list[Finding]:
        out = []
        pmem = " (on PMEM too: DAX tears at 8 bytes, H4)" if inp.facts.any_pmem_path else ""
        if _on(inp.value("fsync")) is False:
            out.append(self.risk(
                inp, "fsync", f"fsync is off{inp.at('fsync')}: an OS crash or power loss can "
                "corrupt the whole cluster beyond repair" + pmem, "set fsync = on"))
        if _on(inp.value("full_page_writes")) is False:
            out.append(self.risk(
                inp, "full_page_writes", f"full_page_writes is off{inp.at('full_page_writes')}:"
                " a page torn by a crash cannot be repaired from the WAL" + pmem,
                "set full_page_writes = on (off only on storage with atomic 8 kB writes)"))
        if str(inp.value("synchronous_commit") or "").lower() == "off":
            out.append(self.risk(
                inp, "synchronous_commit",
                f"synchronous_commit is off{inp.at('synchronous_commit')}: the last commits "
                "(up to 3 x wal_writer_delay) are lost on a crash, though acknowledged",
                "set synchronous_commit = on; turn it off per session for data you can lose"))
        if _on(inp.value("data_sync_retry")) is True:
            out.append(self.risk(
                inp, "data_sync_retry", f"data_sync_retry is on{inp.at('data_sync_retry')}: "
                "after a failed fsync the kernel may have dropped the dirty pages, and a retry "
                "reports success for data that never reached storage",
                "set data_sync_retry = off (PANIC and recover from the WAL)"))
        return out

    # ------------------------------------------------------------------ MySQL / MariaDB
    def _mysql(self, inp: CheckInput) -> list[Finding]:
        out = []
        f = inp.facts
        trx = inp.value("innodb_flush_log_at_trx_commit")
        if trx in (0, 2):
            when = "a mysqld crash or power loss" if trx == 0 else "an OS crash or power loss"
            out.append(self.risk(
                inp, "innodb_flush_log_at_trx_commit",
                f"innodb_flush_log_at_trx_commit is {trx}"
                f"{inp.at('innodb_flush_log_at_trx_commit')}: about a second of acknowledged "
                f"commits (innodb_flush_log_at_timeout) is lost on {when}",
                "set innodb_flush_log_at_trx_commit = 1"))
        out += self._binlog(inp)
        dw = inp.value("innodb_doublewrite")
        if dw is not None:
            word = ("OFF" if dw is False else "ON" if dw is True else str(dw)).upper()
            why = {"OFF": "a page torn by a crash cannot be repaired",
                   "DETECT_ONLY": "a torn page is detected but cannot be repaired",
                   "FAST": "MariaDB skips the fsync of the data files before the doublewrite "
                           "buffer is reused and documents it as possibly unsafe"}.get(word)
            if why:
                pmem = " (on PMEM too: DAX has no sector atomicity, H4)" if f.data_on_pmem \
                    else ""
                safe = "ON"
                out.append(self.risk(
                    inp, "innodb_doublewrite",
                    f"innodb_doublewrite is {dw}{inp.at('innodb_doublewrite')}: {why}{pmem}",
                    f"set innodb_doublewrite = {safe}"))
        method = str(inp.value("innodb_flush_method") or "")
        if method.lower() in ("nosync", "littlesync"):
            out.append(self.risk(
                inp, "innodb_flush_method", f"innodb_flush_method is {method}"
                f"{inp.at('innodb_flush_method')}: a testing mode that does not flush; a crash "
                "loses data", "set innodb_flush_method = O_DIRECT"))
        elif method.upper() == "O_DIRECT_NO_FSYNC":
            if f.mariadb:
                why = ("MariaDB 10.11 then skips the fsync of the data files at checkpoints; "
                       "a power loss can lose pages the redo log no longer covers")
            elif f.version_below(8, 0, 14):
                why = "MySQL before 8.0.14 does not fsync after extending a data file"
            else:
                why = ("the data files are never fsynced: safe only when redo and data share "
                       "one device without a volatile write cache (K23 §5.3.4 measured the gain "
                       "on PMEM; its durability argument is not settled)")
            out.append(self.risk(
                inp, "innodb_flush_method",
                f"innodb_flush_method is O_DIRECT_NO_FSYNC{inp.at('innodb_flush_method')}: "
                f"{why}", "set innodb_flush_method = O_DIRECT"))
        return out

    def _binlog(self, inp: CheckInput) -> list[Finding]:
        sync = inp.value("sync_binlog")
        if not isinstance(sync, int) or sync == 1:
            return []
        log_bin = _binlog_on(inp)
        at = inp.at("sync_binlog")
        if sync == 0:
            if log_bin is False:
                return [self.finding(
                    "info", "sync_binlog", f"sync_binlog is 0{at}: harmless while the binary "
                    "log is off, but binary log events are lost on power loss once it is on",
                    "set sync_binlog = 1")]
            state = "on" if log_bin else "on by default in MySQL 8" if log_bin is None else ""
            return [self.risk(
                inp, "sync_binlog", f"sync_binlog is 0{at} with the binary log {state}: "
                "binary log events of acknowledged commits are lost on power loss, replicas "
                "and point-in-time recovery diverge from the primary", "set sync_binlog = 1")]
        if log_bin is False:
            return []
        return [self.finding(
            "warn", "sync_binlog", f"sync_binlog is {sync}{at}: up to {sync - 1} committed "
            "transactions can be missing from the binary log after a power loss",
            "set sync_binlog = 1")]


def _binlog_on(inp: CheckInput) -> bool | None:
    """Whether the binary log is on: the server says so; a config file by log_bin /
    skip_log_bin; otherwise MySQL 8's default (on) and MariaDB's (off)."""
    s = inp.settings
    if "log_bin" in s:
        v = str(s["log_bin"]).strip().lower()
        return v not in ("off", "0", "false", "")
    if "skip_log_bin" in s or "disable_log_bin" in s:
        return False
    if inp.facts.mariadb:
        return False
    return None  # MySQL >= 8.0: on unless skipped


CHECK = Durability()
