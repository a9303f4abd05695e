"""How to reach a database server: the one value passed between instances, workloads and check."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ConnInfo:
    """Connection parameters for a PostgreSQL or MySQL/MariaDB server.

    ``socket_dir`` (PostgreSQL: the directory holding ``.s.PGSQL.<port>``) or
    ``socket_path`` (MySQL/MariaDB: the socket file) is preferred over ``host``/``port``.
    ``bindir`` names the server's own client tools (pgbench, psql) when they came with it.
    """

    engine: str  # "postgres" | "mysql"
    flavour: str  # "postgresql" | "mysql" | "mariadb"
    version: str  # e.g. "18.6", "10.11.19"
    user: str
    dbname: str
    password: str | None = None
    host: str | None = None  # 127.0.0.1 only when loopback TCP was asked for
    port: int | None = None
    socket_dir: str | None = None
    socket_path: str | None = None
    bindir: str | None = None
    extra: dict = field(default_factory=dict)

    def redacted(self) -> str:
        """A printable description that never contains the password."""
        where = self.socket_path or self.socket_dir or f"{self.host}:{self.port}"
        return f"{self.flavour} {self.version} {self.user}@{where}/{self.dbname}"
