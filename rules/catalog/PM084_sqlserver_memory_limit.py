"""PM084 SQL Server on Linux: size memory.memorylimitmb from the budget it really gets.

Anti-pattern: SQL Server under a cgroup, container or --memory budget smaller than the host's
RAM, left at its default. By default the SQL Server process uses 80% of the physical RAM
(mssql-conf ``memory.memorylimitmb``); it detects and honours cgroup v2 limits only from SQL
Server 2022 CU20 and 2025 (17.x), and earlier versions could be OOM-killed in containers
(Microsoft, Performance best practices: memory for SQL Server on Linux). Not a paper finding:
K23 gave SQL Server a 48 GB buffer pool on a 128 GB host (§3.1); this rule keeps the advice
from sizing an OOM kill.

Recommendation: ``mssql-conf set memory.memorylimitmb`` to 80% (Microsoft's own ratio) of the
budget, not of the host.
"""

from pmem_advisor.rules.model import PRIORITY_SAFETY, ConfigLine, Note, OsStep, Rule

MS_DOC = "Microsoft, Performance best practices: memory for SQL Server on Linux"
SHARE = 0.8  # Microsoft's default share of physical RAM for the SQL Server process
MB = 1 << 20


def limit_mb(f) -> int:
    return int(f.memory_bytes * SHARE) // MB


class SqlServerMemoryLimit(Rule):
    id = "PM084"
    title = "SQL Server: memory.memorylimitmb from the real budget"
    insights = ()
    paper = f"{MS_DOC}; K23 §3.1"
    priority = PRIORITY_SAFETY
    engines = ("sqlserver",)

    def _host(self, f) -> int:
        return int((f.profile.get("memory") or {}).get("total_bytes") or 0)

    def condition(self, f):
        host = self._host(f)
        return bool(host) and f.memory_bytes < host * 0.95

    def effects(self, f):
        mb = limit_mb(f)
        host_gib = self._host(f) / (1 << 30)
        return [
            Note("warn", "memory.memorylimitmb",
                 f"the budget is {f.memory_bytes / (1 << 30):.1f} GiB ({f.memory_source}) on a "
                 f"{host_gib:.1f} GiB host: SQL Server's default takes 80% of the host's RAM "
                 "and honours cgroup v2 limits only from 2022 CU20 / 2025 "
                 f"({MS_DOC})", f"memory.memorylimitmb = {mb}"),
            OsStep(f"sudo /opt/mssql/bin/mssql-conf set memory.memorylimitmb {mb} && "
                   "sudo systemctl restart mssql-server",
                   f"80% (Microsoft's default share) of the {f.memory_bytes >> 20} MB budget, "
                   f"not of the host ({MS_DOC})", key="sqlserver-memory",
                   config=(ConfigLine("mssql.conf", "memory", "memorylimitmb", str(mb)),)),
        ]

    def check_config(self, f, config, effects, same_value):
        """mssql.conf's memory.memorylimitmb above the budget: the process can be OOM-killed."""
        have = str(config.get("memory.memorylimitmb", "")).strip()
        if not have.isdigit() or int(have) * MB <= f.memory_bytes:
            return []
        return [self.finding("fail", "memory.memorylimitmb",
                             f"memory.memorylimitmb = {have} MB is above the "
                             f"{f.memory_bytes >> 20} MB budget ({f.memory_source}): SQL "
                             f"Server can be OOM-killed ({MS_DOC})",
                             f"memory.memorylimitmb = {limit_mb(f)}")]


RULE = SqlServerMemoryLimit()
