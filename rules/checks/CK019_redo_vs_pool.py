"""CK019 An InnoDB redo log larger than the buffer pool it protects.

Anti-pattern: a redo log (``innodb_redo_log_capacity``, MySQL 8.0.30+; before it, and on
MariaDB, ``innodb_log_file_size`` x ``innodb_log_files_in_group``) larger than the buffer pool.
The redo only has to cover the changes of pages still dirty in the pool, and the pool holds at
most ``innodb_max_dirty_pages_pct`` (90%) of itself dirty: redo beyond the pool's size buys
fewer checkpoints than it seems, while crash recovery may have to read and apply all of it
before the server takes a connection. It is the usual sign of a redo size copied from a bigger
host, or of a pool left at its 128 MiB default beside a redo sized for production.

Recommendation: size the redo for the write rate (about an hour of writes at peak, the MySQL
manual's rule of thumb) and the pool for the working set; when the redo must stay larger (a
write burst the pool absorbs by flushing), say so in a comment and silence this finding.
MySQLTuner reports the same ratio against 25% of the pool, which warns on most tuned servers; a
pre-deployment gate should not, so this check warns only above the pool's full size, and only
when the file sets one of the two (a server's defaults are not the file's author's choice);
with the pool left at its default it is a note: small hosts keep the 128 MiB default.

Sources: MySQL 8.4 manual §17.6.5 (redo log: "a larger redo log ... makes crash recovery
slower"), §17.8.3.5 (configuring buffer pool flushing: innodb_max_dirty_pages_pct); MariaDB KB
"InnoDB Redo Log" (innodb_log_file_size, one file since 10.5); MySQLTuner (log file size /
buffer pool size ratio).
"""

from __future__ import annotations

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding, human_bytes

POOL = "innodb_buffer_pool_size"
REDO = ("innodb_redo_log_capacity", "innodb_log_file_size", "innodb_log_files_in_group")


def redo_bytes(inp: CheckInput) -> tuple[int | None, str]:
    """The redo log's size and how it was read (the knobs that set it)."""
    f = inp.facts
    capacity = inp.knob("innodb_redo_log_capacity")
    if not f.mariadb and capacity is not None and (
            "innodb_redo_log_capacity" in inp.settings or not any(
                n in inp.settings for n in REDO[1:])):
        return inp.value("innodb_redo_log_capacity", default=True), "innodb_redo_log_capacity"
    size = inp.value("innodb_log_file_size", default=True)
    if size is None:
        return None, ""
    if f.mariadb and f.version_at_least(10, 5):  # one redo file since 10.5
        return int(size), "innodb_log_file_size"
    files = inp.value("innodb_log_files_in_group", default=True) or 2
    return int(size) * int(files), "innodb_log_file_size x innodb_log_files_in_group"


class RedoVsPool(Check):
    id = "CK019"
    title = "InnoDB redo log larger than the buffer pool"
    source = "MySQL 8.4 manual §17.6.5, §17.8.3.5; MariaDB KB InnoDB Redo Log; MySQLTuner"
    engines = ("mysql",)

    def run(self, inp: CheckInput) -> list[Finding]:
        if not any(n in inp.settings for n in (POOL, *REDO)):
            return []  # nothing of the file's own: the server's defaults fit each other
        pool = inp.value(POOL, default=True)
        redo, how = redo_bytes(inp)
        if not isinstance(pool, int | float) or not isinstance(redo, int | float) or not pool:
            return []  # an unreadable value is CK002's finding
        if redo <= pool:
            return []
        subject = "innodb_redo_log_capacity" if how == "innodb_redo_log_capacity" else \
            "innodb_log_file_size"
        at = inp.at(subject) or inp.at(POOL)
        # A pool the file leaves at its default was not sized here (a small host keeps the
        # 128 MiB default even under innodb_dedicated_server, whose redo can then be larger):
        # worth a note, not a warning.
        sized = POOL in inp.settings
        pool_words = (f"{POOL} = {inp.shown(POOL)}" if sized else
                      f"{POOL} at its default {inp.shown(POOL)}: not sized in this file")
        return [self.finding(
            "warn" if sized else "info", subject,
            f"the redo log ({human_bytes(int(redo))}, {how}) is larger than the buffer pool "
            f"({human_bytes(int(pool))}, {pool_words}){at}: the pool holds at "
            "most 90% of itself dirty, so the redo beyond it buys few checkpoints, and crash "
            "recovery may apply all of it before the server takes a connection",
            f"size the redo for about an hour of peak writes and {POOL} for the working set; "
            "keep a larger redo only with a reason")]


CHECK = RedoVsPool()
