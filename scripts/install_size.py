"""Fresh runtime install size and time of pmem-advisor, base vs extras, in throwaway venvs.

    python3 scripts/install_size.py                 # base, [tune], [demo], [dev]
    python3 scripts/install_size.py --extras "" plot

Each variant gets a new venv in a temporary folder; the time is that of
``pip install '<repo>[extras]'`` alone (wheels come from pip's usual index/cache), the size is
what the install added to the empty venv. Nothing is kept.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = ("", "tune", "demo", "dev")


def du(path: Path) -> int:
    """Bytes used by the files below ``path`` (symlinks not followed)."""
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def measure(extras: str, python: str, repo: Path = REPO) -> tuple[float, int, int]:
    """(seconds, bytes added, packages installed) for one fresh install of ``.[extras]``."""
    with tempfile.TemporaryDirectory(prefix="pmem-advisor-size-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
        empty = du(venv)
        # A copy of the sources, so that the build leaves nothing in the repository.
        src = Path(tmp) / "src"
        shutil.copytree(repo, src, ignore=shutil.ignore_patterns(
            ".venv", ".git", "build", "*.egg-info", "__pycache__", ".pytest_cache",
            "tests", "benchmarks", "demo-out", "tune-out"))
        spec = f"{src}[{extras}]" if extras else str(src)
        start = time.monotonic()
        r = subprocess.run(pip + ["install", "-q", spec], capture_output=True, text=True)
        seconds = time.monotonic() - start
        if r.returncode != 0:
            sys.stderr.write(r.stderr[-2000:])
            raise SystemExit(f"pip install {spec} failed")
        listed = subprocess.run(pip + ["list", "--format=freeze"], capture_output=True,
                                text=True, check=True).stdout.split()
        return seconds, du(venv) - empty, len(listed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--extras", nargs="*", default=list(DEFAULT),
                    help='extras to measure, "" for the base install')
    ap.add_argument("--python", default=sys.executable, help="interpreter for the venvs")
    ap.add_argument("--repo", type=Path, default=REPO,
                    help="source tree to install (e.g. an older checkout, to compare)")
    args = ap.parse_args(argv)
    print(f"{'install':<28} {'seconds':>8} {'MB added':>9} {'packages':>9}")
    for extras in args.extras:
        print(f"measuring {extras or 'base'} ...", file=sys.stderr, flush=True)
        seconds, size, count = measure(extras, args.python, args.repo)
        name = f"pmem-advisor[{extras}]" if extras else "pmem-advisor"
        print(f"{name:<28} {seconds:8.1f} {size / 1e6:9.0f} {count:9d}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
