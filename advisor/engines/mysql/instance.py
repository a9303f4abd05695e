"""Managed MySQL/MariaDB: mariadb-install-db (MariaDB) or ``mysqld --initialize-insecure``
(MySQL 8), redo placement with ``innodb_log_group_home_dir``, init-time settings such as
``innodb_page_size`` kept in the instance's own defaults file.

The server only reads ``<home>/my.cnf`` (``--defaults-file``, never /etc/mysql), which ends
with ``!include`` of the managed fragment. Data dir, socket, pid file and networking are also
given on the command line, which outranks every file, so no fragment can move them, and the
default socket /run/mysqld/mysqld.sock of the machine's own server is never used.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

import pymysql

from pmem_advisor.connection import ConnInfo
from pmem_advisor.errors import EnvironmentProblem, ServerError, UsageError
from pmem_advisor.fileio import held_dir, unlink_at, write_file_safely
from pmem_advisor.instances.base import DB_NAME, MARKER, Instance, refuse_control_characters

INCLUDE_FILE = "pmem-advisor.cnf"
SUPERUSER = "root"
PAGE_SIZES = {4096, 8192, 16384, 32768, 65536}
# Placement and networking belong to the instance, not to init settings or fragments.
_MANAGED = {"datadir", "socket", "port", "pid_file", "bind_address", "skip_networking",
            "innodb_log_group_home_dir", "user", "basedir"}
_NAME_RE = re.compile(r"^[a-z][a-z0-9_.]*$")
_ERROR_RE = re.compile(r"\[ERROR\]\s*(.*)$")
_GENERIC = re.compile(
    r"^Aborting|registration as a STORAGE ENGINE failed|Unknown/unsupported storage engine|"
    r"Plugin '[^']+' init function returned error|^Failed to initialize plugins",
    re.I,
)


def _page_size(value: Any) -> int:
    text = str(value).strip().lower()
    m = re.fullmatch(r"(\d+)\s*(k|kb)?", text)
    size = (int(m.group(1)) * (1024 if m.group(2) else 1)) if m else -1
    if size not in PAGE_SIZES:
        raise UsageError(f"innodb_page_size must be one of 4k, 8k, 16k, 32k, 64k, not {value!r}")
    return size


class MySQLInstance(Instance):
    engine = "mysql"
    stop_signal = signal.SIGTERM  # clean shutdown (slow shutdown is not needed: fast=1)

    @property
    def is_mariadb(self) -> bool:
        return self.binary.flavour == "mariadb"

    @property
    def socket_path(self):
        return self.socket_dir / "mysqld.sock"

    @property
    def defaults_file(self):
        return self.home / "my.cnf"

    # --- init ------------------------------------------------------------------------------

    def normalize_init_settings(self, settings: dict[str, Any]) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in settings.items():
            name = key.lower().replace("-", "_")
            if name in _MANAGED:
                raise UsageError(f"{key!r} is managed by the instance (use data_dir/wal_dir)")
            if not _NAME_RE.match(name) or "\n" in str(value):
                raise UsageError(f"bad init-time setting {key!r}={value!r}")
            out[name] = str(_page_size(value)) if name == "innodb_page_size" else str(value)
        return out

    def _managed_options(self) -> list[str]:
        opts = [
            f"datadir={self.data_dir}", f"socket={self.socket_path}",
            f"pid-file={self.socket_dir / 'mysqld.pid'}", f"port={self.port}",
        ]
        opts += ["bind-address=127.0.0.1"] if self.tcp else ["skip-networking"]
        if self.wal_dir is not None:
            opts.append(f"innodb_log_group_home_dir={self.wal_dir}")
        return opts

    def _write_defaults_file(self) -> None:
        lines = ["# managed by pmem-advisor: this instance reads no other option file", "[mysqld]"]
        lines += self._managed_options()
        lines.append("skip-name-resolve")
        if self.init_settings:
            lines.append("# init-time settings: fixed for this data directory")
            lines += [f"{k} = {v}" for k, v in sorted(self.init_settings.items())]
        lines.append(f"!include {self.home / INCLUDE_FILE}")
        for line in lines:
            refuse_control_characters(line, "option file line")
        write_file_safely(self.defaults_file, "\n".join(lines) + "\n", backup=False)
        self._write_config(self.config_text)

    def _init_datadir(self) -> None:
        self._write_defaults_file()
        if self.is_mariadb:
            tool = self.binary.tool("mariadb-install-db") or self.binary.tool("mysql_install_db")
            if tool is None:
                raise EnvironmentProblem(
                    "mariadb-install-db not found", hint="apt-get install mariadb-server"
                )
            cmd = [
                str(tool), f"--defaults-file={self.defaults_file}",
                f"--basedir={self.bindir.parent}", f"--datadir={self.data_dir}",
                "--auth-root-authentication-method=normal", "--skip-test-db",
                "--skip-name-resolve",
            ]
            self.run_tool(cmd, "mariadb-install-db")
        else:
            # `mysqld --initialize` refuses a data directory holding any file, our marker
            # included: it leaves for the tool's run and initialize() writes it back. (No MySQL
            # 8 server here to prove a staged init on; mariadb-install-db keeps the marker.)
            (self.data_dir / MARKER).unlink(missing_ok=True)
            cmd = [
                str(self.binary.server), f"--defaults-file={self.defaults_file}",
                "--initialize-insecure", f"--datadir={self.data_dir}",
            ]
            self.run_tool(cmd, "mysqld --initialize-insecure")

    # --- start -----------------------------------------------------------------------------

    def _write_config(self, config_text: str) -> None:
        text = config_text.strip("\n")
        first = next((ln.strip() for ln in text.splitlines()
                      if ln.strip() and not ln.lstrip().startswith(("#", ";"))), "")
        if first and not first.startswith("["):
            text = "[mysqld]\n" + text  # an emitted fragment may carry only option lines
        # Owned by the server user from creation (fchown before the rename into place): the
        # home is the server's, and a chown by name could follow a link renamed over it.
        path = self.home / INCLUDE_FILE
        write_file_safely(path, text + "\n" if text else "", backup=False, mode=0o600,
                          owner=self._owner)

    def _server_command(self) -> list[str]:
        if not self.defaults_file.exists():
            self._write_defaults_file()  # restored from a golden copy of another instance
        return [
            str(self.binary.server), f"--defaults-file={self.defaults_file}",
            *(f"--{opt}" for opt in self._managed_options()),
        ]

    def _ready(self) -> bool:
        if not self.socket_path.exists():
            return False
        try:
            self._connect(None).close()
            return True
        except pymysql.err.OperationalError:
            return False

    def _after_start(self) -> None:
        try:
            conn = self._connect(None)
        except pymysql.err.OperationalError as e:
            raise ServerError(f"{self.binary.flavour} started but refuses connections: {e}",
                              log_tail=self.log_tail()) from e
        try:
            cur = conn.cursor()
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{DB_NAME}`")
            if self.password:
                for stmt in (
                    "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY %s",
                    "ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY %s",
                ):
                    cur.execute(stmt, (self.password,))
                cur.execute("GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION")
        finally:
            conn.close()

    def log_files(self) -> list[Path]:
        """The redo log files (ib_logfile*, MySQL 8.0.30+'s #innodb_redo/#ib_redo*)."""
        home = self.wal_dir or self.data_dir
        found = sorted(Path(home).glob("ib_logfile*"))
        found += sorted(Path(home, "#innodb_redo").glob("#ib_redo*"))
        return [p for p in found if p.is_file()]

    def _after_crash(self) -> None:
        # relative to a held descriptor: the socket directory is the server's, and swapped for
        # a link to /run/mysqld it would otherwise cost the system server its pid file
        with held_dir(self.socket_dir) as dfd:
            unlink_at(dfd, "mysqld.pid")
            unlink_at(dfd, self.socket_path.name)

    def refusal_reason(self, log_text: str) -> str:
        errors = []
        for line in log_text.splitlines():
            m = _ERROR_RE.search(line)
            if m and m.group(1).strip() and m.group(1).strip() not in errors:
                errors.append(m.group(1).strip())
        specific = [e for e in errors if not _GENERIC.search(e)]
        picked = (specific or errors)[:2]
        if picked:
            return "; ".join(picked)
        tail = [ln.strip() for ln in log_text.splitlines() if ln.strip()]
        return tail[-1] if tail else "no message in the server log"

    # --- connections -----------------------------------------------------------------------

    @property
    def conninfo(self) -> ConnInfo:
        return ConnInfo(
            engine="mysql", flavour=self.binary.flavour, version=self.binary.version,
            user=SUPERUSER, dbname=DB_NAME, password=self.password,
            host="127.0.0.1" if self.tcp else None, port=self.port if self.tcp else None,
            socket_path=str(self.socket_path), bindir=str(self.bindir),
        )

    def _connect(self, dbname: str | None) -> pymysql.connections.Connection:
        return pymysql.connect(
            unix_socket=str(self.socket_path), user=SUPERUSER, database=dbname,
            autocommit=True, connect_timeout=10,
        )

    def connect(self) -> pymysql.connections.Connection:
        return self._connect(DB_NAME)

    def settings(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.query("SHOW GLOBAL VARIABLES")}
