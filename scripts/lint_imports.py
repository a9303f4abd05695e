"""Run import-linter's contracts (.importlinter) over the source tree.

setup.py maps the design card's folders (advisor/ knobs/ probes/ rules/ workloads/) into the
one package ``pmem_advisor``; import-linter reads a package from one folder. So the modules
are copied into a temporary ``pmem_advisor/`` laid out as installed, and ``lint-imports``
runs on that copy (its exit code is ours).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOTS = {"": "advisor", "knobs": "knobs", "probes": "probes", "rules": "rules",
         "workloads": "workloads"}


def build_view(dest: Path) -> Path:
    pkg = dest / "pmem_advisor"
    for sub, folder in ROOTS.items():
        src = REPO / folder
        for path in src.rglob("*.py"):
            rel = path.relative_to(src)
            if any(part.startswith(".") for part in rel.parts):
                continue
            out = pkg / sub / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)
    return pkg


def main() -> int:
    lint = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    with tempfile.TemporaryDirectory(prefix="pmem-advisor-imports-") as tmp:
        build_view(Path(tmp))
        env = dict(os.environ, PYTHONPATH=tmp)
        cmd = [lint, str(REPO / ".importlinter"), "--no-cache", *sys.argv[1:]]
        return subprocess.run(cmd, cwd=tmp, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
