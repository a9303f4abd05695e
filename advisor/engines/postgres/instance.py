"""Managed PostgreSQL: initdb with WAL placement, postgres started directly (no pg_ctl).

The instance's postgresql.conf (written by initdb) ends with ``include 'pmem-advisor.conf'``,
the managed fragment, so a candidate config overrides everything else in the file. The socket
directory, port and listen address are passed on the command line, which outranks every file:
a fragment cannot move the server away from where we connect to it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
from pathlib import Path
from typing import Any

import psycopg

from pmem_advisor.connection import ConnInfo
from pmem_advisor.errors import AdvisorError, EnvironmentProblem, ServerError, UsageError
from pmem_advisor.fileio import (
    held_dir,
    make_owned_dir,
    open_checked,
    read_at,
    read_text_nofollow,
    unlink_at,
    write_file_safely,
)
from pmem_advisor.instances.base import DB_NAME, Instance
from pmem_advisor.knobs.units import parse_bytes

INCLUDE_FILE = "pmem-advisor.conf"
# initdb refuses a directory that holds anything, our marker included, so it runs in this
# fresh subdirectory and its files move up: the marker never leaves (see _init_datadir).
STAGE = ".pmem-advisor-initdb"
SUPERUSER = "postgres"
_TRUE = {"on", "true", "yes", "1"}
_FALSE = {"off", "false", "no", "0"}
_LEVEL_RE = re.compile(r"\b(PANIC|FATAL|ERROR|LOG|DETAIL|HINT):\s+(.*)$")
_WORTH_LOGGING = re.compile(
    r"invalid value|unrecognized configuration parameter|out of range|outside the valid range|"
    r"could not|cannot|must be|requires|not supported|is not a valid|syntax error|"
    r"insufficient|too (large|small|many)|failed",
    re.I,
)


class PostgresInstance(Instance):
    engine = "postgres"
    stop_signal = signal.SIGINT  # "fast" shutdown: clean, without waiting for clients

    # --- init ------------------------------------------------------------------------------

    def normalize_init_settings(self, settings: dict[str, Any]) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in settings.items():
            name = key.lower().replace("-", "_")
            if name in ("wal_segment_size", "wal_segsize"):
                size = parse_bytes(value, name)
                if name == "wal_segsize" and isinstance(value, int):
                    size = value * 1024**2  # initdb's own unit: MB
                mb = size // 1024**2
                if size % 1024**2 or mb < 1 or mb > 1024 or mb & (mb - 1):
                    raise UsageError(
                        f"wal_segment_size must be a power of two from 1MB to 1GB, not {value!r}"
                    )
                out["wal_segment_size"] = str(size)
            elif name == "data_checksums":
                text = str(value).lower()
                if text not in _TRUE | _FALSE:
                    raise UsageError(f"data_checksums must be on or off, not {value!r}")
                out[name] = "on" if text in _TRUE else "off"
            elif name in ("encoding", "locale"):
                out[name] = str(value)
            else:
                raise UsageError(
                    f"{key!r} is not an init-time setting for PostgreSQL "
                    "(supported: wal_segment_size, data_checksums, encoding, locale)"
                )
        return out

    def _init_datadir(self) -> None:
        initdb = self.bindir / "initdb"
        if not initdb.is_file():
            raise EnvironmentProblem(f"initdb not found next to {self.binary.server}")
        s = self.init_settings
        data_stage = self._stage(self.data_dir)
        wal_stage = self._stage(self.wal_dir) if self.wal_dir is not None else None
        cmd = [
            str(initdb), "-D", str(data_stage), "-U", SUPERUSER,
            "--auth-local=trust", "--auth-host=scram-sha-256",
            "-E", s.get("encoding", "UTF8"), f"--locale={s.get('locale', 'C')}",
            "--no-sync",  # the golden copy is taken after a clean shutdown, which syncs
        ]
        if self.binary.major >= 14:
            cmd.append("--no-instructions")
        if wal_stage is not None:
            cmd.append(f"--waldir={wal_stage}")
        if "wal_segment_size" in s:
            cmd.append(f"--wal-segsize={int(s['wal_segment_size']) // 1024**2}")
        if s.get("data_checksums") == "on":
            cmd.append("--data-checksums")
        elif s.get("data_checksums") == "off" and self.binary.major >= 18:
            cmd.append("--no-data-checksums")  # on by default since 18
        self.run_tool(cmd, "initdb")
        if wal_stage is not None:
            _move_up(wal_stage, self.user.uid)
        _move_up(data_stage, self.user.uid)
        if self.wal_dir is not None:  # initdb linked pg_wal to the stage: link the real dir
            self._link_pg_wal()
        conf = self.data_dir / "postgresql.conf"
        # Through the safe writer: the data directory belongs to the server user by now.
        write_file_safely(conf, read_text_nofollow(conf) + (
            "\n# --- managed by pmem-advisor: the candidate config, included last ---\n"
            f"include '{INCLUDE_FILE}'\n"), backup=False, mode=0o600, owner=self._owner)

    def _link_pg_wal(self) -> None:
        """``pg_wal`` -> the WAL directory, made and renamed into place relative to a held
        descriptor of the data directory. The link stays root's: PostgreSQL follows it
        whoever owns it, and an lchown by name could land on a file swapped in."""
        tmp = ".pg_wal.pmem-advisor"
        with held_dir(self.data_dir) as dfd:
            unlink_at(dfd, tmp)
            os.symlink(str(self.wal_dir), tmp, dir_fd=dfd)
            os.replace(tmp, "pg_wal", src_dir_fd=dfd, dst_dir_fd=dfd)

    def _stage(self, directory: Path) -> Path:
        """A fresh, empty subdirectory of ``directory`` (marked, so the reaper may empty it)
        for initdb, given to the server user."""
        stage = directory / STAGE
        with held_dir(directory) as dfd:
            try:  # a killed initialisation's
                st = os.stat(STAGE, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and stat.S_ISDIR(st.st_mode):
                shutil.rmtree(STAGE, dir_fd=dfd)  # fd-based: follows no link inside
            elif st is not None:
                os.unlink(STAGE, dir_fd=dfd)
            os.close(make_owned_dir(dfd, STAGE, self._owner, 0o700, str(stage)))
        return stage

    # --- start -----------------------------------------------------------------------------

    def _write_config(self, config_text: str) -> None:
        # Owned by the server user from its creation (fchown on the new file's descriptor,
        # then renamed into place): a chown by name afterwards could be raced by a link
        # renamed over it in the server-owned data directory (issue 50).
        path = self.data_dir / INCLUDE_FILE
        write_file_safely(path, config_text if config_text.endswith("\n") or not config_text
                          else config_text + "\n", backup=False, mode=0o600, owner=self._owner)

    def _server_command(self) -> list[str]:
        listen = "127.0.0.1" if self.tcp else ""
        return [
            str(self.bindir / "postgres"), "-D", str(self.data_dir),
            "-c", f"port={self.port}",
            "-c", f"unix_socket_directories={self.socket_dir}",
            "-c", "unix_socket_permissions=0700",
            "-c", f"listen_addresses={listen}",
        ]

    def _pidfile_lines(self) -> list[str]:
        try:  # by descriptor, bounded: the server writes it, and could make it a FIFO or link
            with held_dir(self.data_dir) as dfd:
                return read_at(dfd, "postmaster.pid", str(self.data_dir / "postmaster.pid"),
                               4096, owners=(self.user.uid,)).splitlines()
        except (FileNotFoundError, PermissionError):
            return []

    def _ready(self) -> bool:
        lines = self._pidfile_lines()  # may be a killed predecessor's: check the pid
        return (len(lines) >= 8 and self._proc is not None
                and lines[0].strip() == str(self._proc.pid) and lines[7].strip() == "ready")

    def _after_start(self) -> None:
        try:
            conn = self._connect("postgres")
        except psycopg.OperationalError as e:
            raise ServerError(f"postgresql started but refuses connections: {e}",
                              log_tail=self.log_tail()) from e
        try:
            cur = conn.cursor()
            # Bounded, and committed without waiting for a standby: a config that names
            # synchronous_standby_names would make CREATE DATABASE wait for ever for one
            # that never connects (this session only; the config is the candidate's).
            cur.execute("SET statement_timeout = '120s'")
            cur.execute("SET synchronous_commit = local")
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DB_NAME,))
            if not cur.fetchall():
                cur.execute(f'CREATE DATABASE "{DB_NAME}"')
            if self.password:
                cur.execute(f"ALTER USER {SUPERUSER} PASSWORD '{self.password}'")
        finally:
            conn.close()

    def _release_crash_resources(self) -> None:
        """A killed postmaster leaves shared memory behind (a SysV header segment and POSIX
        DSM segments in /dev/shm) that only PostgreSQL can identify, via postmaster.pid: it
        frees them when it next starts on this data directory. So start once with defaults
        and stop cleanly; if even that fails, remove at least the header segment."""
        if not (self.data_dir / "postmaster.pid").exists():
            return
        saved = self.config_text, self.start_timeout
        try:
            self.start_timeout = 60.0
            self.start("")
            self.stop()
        except AdvisorError:
            self._drop_header_segment()
        finally:
            self.config_text, self.start_timeout = saved

    def _drop_header_segment(self) -> None:
        lines = self._pidfile_lines()
        if len(lines) >= 7 and len(lines[6].split()) == 2:
            shmid = lines[6].split()[1]
            if _shm_unattached(shmid):
                subprocess.run(["ipcrm", "-m", shmid], capture_output=True)
        with held_dir(self.data_dir) as dfd:
            unlink_at(dfd, "postmaster.pid")

    def _after_restore(self) -> None:
        """A golden copy may come from another instance: re-point pg_wal at our WAL dir."""
        with held_dir(self.data_dir) as dfd:
            if self.wal_dir is not None and _is_link_at(dfd, "pg_wal"):
                self._link_pg_wal()
            unlink_at(dfd, "postmaster.pid")

    def refusal_reason(self, log_text: str) -> str:
        picked: list[str] = []
        prev_picked = False
        for line in log_text.splitlines():
            m = _LEVEL_RE.search(line)
            keep = False
            if m:
                level, msg = m.groups()
                if level in ("PANIC", "FATAL", "ERROR"):
                    keep = True
                elif level == "LOG":
                    keep = bool(_WORTH_LOGGING.search(msg))
                elif level in ("DETAIL", "HINT"):
                    keep = prev_picked and level == "DETAIL"
                text = f"{level}: {msg.strip()}"
            elif re.match(r"^\s*(initdb|postgres|pg_ctl): (error|detail|could not|invalid)", line):
                keep, text = True, line.strip()
            if keep and text not in picked:
                picked.append(text)
            prev_picked = keep
        if not picked:
            tail = [ln.strip() for ln in log_text.splitlines() if ln.strip()]
            return tail[-1] if tail else "no message in the server log"
        return "; ".join(picked[:4])

    # --- connections -----------------------------------------------------------------------

    @property
    def conninfo(self) -> ConnInfo:
        return ConnInfo(
            engine="postgres", flavour=self.binary.flavour, version=self.binary.version,
            user=SUPERUSER, dbname=DB_NAME, password=self.password,
            host="127.0.0.1" if self.tcp else None, port=self.port,
            socket_dir=str(self.socket_dir), bindir=str(self.bindir),
        )

    def _connect(self, dbname: str) -> psycopg.Connection:
        return psycopg.connect(
            host=str(self.socket_dir), port=self.port, user=SUPERUSER, dbname=dbname,
            autocommit=True, connect_timeout=10,
        )

    def connect(self) -> psycopg.Connection:
        return self._connect(DB_NAME)

    def settings(self) -> dict[str, str]:
        return {name: setting for name, setting in self.query(
            "SELECT name, setting FROM pg_settings")}


def _shm_unattached(shmid: str) -> bool:
    try:
        rows = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    except OSError:
        return False
    for row in rows:
        f = row.split()
        if len(f) > 6 and f[1] == shmid:
            return f[6] == "0"  # nattch
    return False


def _is_link_at(dfd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _move_up(stage: Path, server_uid: int) -> None:
    """Move initdb's output from ``stage`` into its parent, entry by entry (same file system:
    each move is a rename), then remove the empty stage. Both directories are the server
    user's: each rename is relative to descriptors held of them, the stage opened
    ``O_NOFOLLOW`` (swapped for a link to /etc, it is refused, not emptied)."""
    with held_dir(stage.parent) as pfd:
        sfd = open_checked(pfd, stage.name, str(stage), directory=True, owners=(server_uid,))
        try:
            for name in os.listdir(sfd):
                os.rename(name, name, src_dir_fd=sfd, dst_dir_fd=pfd)
        finally:
            os.close(sfd)
        os.rmdir(stage.name, dir_fd=pfd)
