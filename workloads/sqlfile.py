"""sql-file: replay a user's file of SQL statements with N clients (lua/sql_file.lua).

``script=FILE`` is replayed; ``setup=FILE`` (optional) is run once by ``load`` to create and
fill what the statements use. Throughput counts statements per second.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from pmem_advisor.connection import ConnInfo
from pmem_advisor.errors import UsageError
from pmem_advisor.workloads.base import WorkloadResult
from pmem_advisor.workloads.dbapi import analyze_database, ensure_database, execute_all
from pmem_advisor.workloads.sqlsplit import read_statements
from pmem_advisor.workloads.sysbench import SysbenchWorkload


class SqlFile(SysbenchWorkload):
    name = "sql-file"
    script = "sql_file"
    own_script = True
    kind = "mixed"
    unit = "statements"
    option_names = ("script", "setup")
    scale_help = "not used (the setup file decides the data)"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if not options.get("script"):
            raise UsageError("workload sql-file needs a file of statements (--script FILE)")
        self.statements = read_statements(options["script"])
        if any("\0" in s for s in self.statements):
            raise UsageError(f"{options['script']} contains NUL bytes")
        self.setup = Path(options["setup"]) if options.get("setup") else None
        if self.setup and not self.setup.is_file():
            raise UsageError(f"setup file {self.setup} does not exist")
        self._file: str | None = None

    def load(self, conn: ConnInfo, scale: int) -> None:
        self.check_engine(conn)
        ensure_database(conn)
        if self.setup:
            execute_all(conn, read_statements(self.setup), what=f"setup file {self.setup}")
        self.remember_scale(conn, max(1, scale))
        analyze_database(conn)

    def script_args(self, scale: int) -> list[str]:
        return [f"--statements-file={self._file}"] if self._file else []

    def _run_once(
        self, conn: ConnInfo, *, clients: int, duration: float, warmup: float
    ) -> WorkloadResult:
        self.options.setdefault("scale", 1)  # the data is the setup file's, not a scale
        fd, path = tempfile.mkstemp(prefix="pmem-advisor-sql-", suffix=".stmts")
        try:
            with os.fdopen(fd, "w") as f:
                f.write("\0".join(self.statements))
            self._file = path
            return super()._run_once(conn, clients=clients, duration=duration, warmup=warmup)
        finally:
            self._file = None
            os.unlink(path)
