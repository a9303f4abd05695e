"""A managed Tarantool server on the shared instance lifecycle (``instances.base.Instance``).

The instance registers itself and marks every directory before the server starts, so a killed
run is reaped by the next one; the server runs as the unprivileged server user
(``instances.privileges``) and listens only on a unix socket in a 0700 directory.

Tarantool has no separate config file: the server runs ``<home>/instance.lua``, a wrapper we
write, which loads the emitted init file (``box.cfg.lua``) in an empty environment where
``box.cfg`` only collects the options, then overrides what belongs to the instance (socket,
work/memtx/vinyl/WAL directories, no feedback daemon phoning home, log on stderr) and calls the
real ``box.cfg``. Tarantool itself checks every option; a refusal ends the process with
Tarantool's own reason (``ER_CFG: Incorrect value for option ...``) in the log.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from pmem_advisor.connection import ConnInfo
from pmem_advisor.engines.tarantool.workload import eval_lua
from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.fileio import held_dir, unlink_at, write_file_safely
from pmem_advisor.instances.base import Instance
from pmem_advisor.instances.discovery import ServerBinary

CONFIG_FILE = "box.cfg.lua"
WRAPPER_FILE = "instance.lua"
SOCKET_NAME = "tarantool.sock"
READY_NAME = "ready"  # written by the wrapper once box.cfg has returned
PACKAGE_HINT = "apt-get install tarantool"
FALLBACK_PATHS = ("/usr/bin/tarantool", "/usr/local/bin/tarantool")
_VERSION = re.compile(r"^Tarantool\s+(\d+\.\d+\.\d+)")
# Tarantool's own reasons, most specific first: the ER_CFG line names the option.
_REASONS = [
    r"ER_CFG: Incorrect value for option[^\n]*",
    r"Incorrect value for option[^\n]*",
    r"F> can't initialize storage:[^\n]*",
    r"F> [^\n]*",
    r"the box\.cfg file failed:[^\n]*",
    r"cannot read the box\.cfg file:[^\n]*",
    r"LuajitError:[^\n]*",
    r"E> [^\n]*",
    r"[^\n]*No space left on device[^\n]*",
]


@lru_cache(maxsize=4)
def _probe_version(path: str) -> str | None:
    try:
        r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    m = _VERSION.match(r.stdout.strip())
    return m.group(1) if m else None


def find_tarantool(path: str | None = None) -> ServerBinary:
    """The tarantool binary (``PMEM_ADVISOR_TARANTOOL``, PATH, /usr/bin); exit 3 when missing."""
    candidates = [path, os.environ.get("PMEM_ADVISOR_TARANTOOL"), _which("tarantool"),
                  *FALLBACK_PATHS]
    for cand in candidates:
        if not cand or not Path(cand).is_file() or not os.access(cand, os.X_OK):
            continue
        real = Path(os.path.realpath(cand))
        version = _probe_version(str(real))
        if version:
            return ServerBinary("tarantool", "tarantool", version, real.parent, "path")
    raise EnvironmentProblem("Tarantool is not installed (no tarantool binary found)",
                             hint=PACKAGE_HINT)


def _which(name: str) -> str | None:
    return shutil.which(name)


def lua_quote(text: str) -> str:
    return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


class TarantoolInstance(Instance):
    engine = "tarantool"
    stop_signal = signal.SIGTERM  # Tarantool exits cleanly on SIGTERM
    start_timeout = 60.0
    stop_timeout = 60.0

    @property
    def socket_path(self) -> Path:
        return self.socket_dir / SOCKET_NAME

    @property
    def ready_path(self) -> Path:
        return self.socket_dir / READY_NAME

    @property
    def server_path(self) -> Path:
        return self.bindir / "tarantool"

    # --- hooks -----------------------------------------------------------------------------
    def normalize_init_settings(self, settings: dict[str, Any]) -> dict[str, str]:
        if settings:
            raise UsageError("Tarantool has no init-time settings: every box.cfg option is "
                             f"given at start ({', '.join(sorted(settings))})")
        return {}

    def _init_datadir(self) -> None:
        """Tarantool bootstraps an empty memtx_dir on its first start: nothing to run."""

    def _wrapper(self) -> str:
        wal = self.wal_dir or self.data_dir
        managed = {
            "listen": f"unix/:{self.socket_path}", "work_dir": str(self.home),
            "memtx_dir": str(self.data_dir), "vinyl_dir": str(self.data_dir),
            "wal_dir": str(wal),
        }
        fields = ", ".join(f"{k} = {lua_quote(v)}" for k, v in managed.items())
        cfg = self.home / CONFIG_FILE
        return "\n".join([
            "-- managed by pmem-advisor: the emitted box.cfg file, then the instance's own",
            "-- placement, socket and logging (they outrank the file)",
            "local user = {}",
            f"local chunk, err = loadfile({lua_quote(cfg)})",
            "if chunk == nil then error('cannot read the box.cfg file: ' .. tostring(err), 0) end",
            "setfenv(chunk, {box = {cfg = function(t) for k, v in pairs(t) do user[k] = v end"
            " end}})",
            "local ok, why = pcall(chunk)",
            "if not ok then error('the box.cfg file failed: ' .. tostring(why), 0) end",
            f"for k, v in pairs({{{fields}}}) do user[k] = v end",
            "user.background, user.pid_file, user.log = false, nil, nil",
            "user.feedback_enabled = false  -- no phoning home from a benchmark",
            "box.cfg(user)",
            "box.once('pmem-advisor-access', function()",
            "    -- reachable only through the socket in a 0700 directory",
            "    box.schema.user.grant('guest', 'super')",
            "end)",
            "-- box.cfg returned: recovery is done (Tarantool listens before it has finished)",
            f"local ready = io.open({lua_quote(self.ready_path)}, 'w')",
            "ready:close()",
            "",
        ])

    def _write_config(self, config_text: str) -> None:
        with held_dir(self.ready_path.parent) as dfd:  # the next start writes it again
            unlink_at(dfd, self.ready_path.name)
        # owned by the server user from creation: no chown by name in its home (issue 50)
        write_file_safely(self.home / CONFIG_FILE, config_text or "box.cfg{}\n", backup=False,
                          owner=self._owner)
        write_file_safely(self.home / WRAPPER_FILE, self._wrapper(), backup=False,
                          owner=self._owner)

    def _server_command(self) -> list[str]:
        return [str(self.server_path), str(self.home / WRAPPER_FILE)]

    def _ready(self) -> bool:
        if not (self.ready_path.exists() and self.socket_path.exists()):
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(1.0)
                s.connect(str(self.socket_path))
                greeting = s.recv(64)
        except OSError:
            return False
        return greeting.startswith(b"Tarantool")

    def _after_start(self) -> None:
        """Access is granted by the wrapper (box.once); nothing else to create."""

    def refusal_reason(self, log_text: str) -> str:
        found = self.first_match(_REASONS, log_text)
        if found:
            return re.sub(r"^[FE]> ", "", found).strip()
        lines = [ln.strip() for ln in log_text.splitlines() if ln.strip()]
        return lines[-1] if lines else "no reason in the log"

    @property
    def conninfo(self) -> ConnInfo:
        return ConnInfo(engine="tarantool", flavour="tarantool", version=self.binary.version,
                        user="guest", dbname="", socket_path=str(self.socket_path),
                        bindir=str(self.bindir))

    def connect(self) -> Any:
        raise UsageError("Tarantool has no DB-API connection here: use the Lua client "
                         "(engines.tarantool.workload.eval_lua)")

    def settings(self) -> dict[str, str]:
        """box.cfg as the running server reads it back (names lowercase, values as text)."""
        out = eval_lua(self.conninfo, "local t = {} for k, v in pairs(box.cfg) do "
                       "t[k] = tostring(v) end return t")
        return {str(k).lower(): str(v) for k, v in (out or {}).items()}

    def log_files(self) -> list[Path]:
        return []
