"""Regenerate the golden probe outputs on purpose: ``python -m tests.probes.regen_golden``.

Run it after a deliberate change to the probe or to a machine description, then review the
diff (``git diff tests/probes/golden``) before committing: the goldens are the contract.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.probes.goldens import GOLDEN, dump, golden_path, probe_machine
from tests.probes.machine_builder import machine_names


def main(argv: list[str]) -> int:
    names = argv or machine_names()
    GOLDEN.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pmem-golden-") as tmp:
        for name in names:
            text = dump(probe_machine(name, Path(tmp)))
            path = golden_path(name)
            old = path.read_text() if path.exists() else None
            path.write_text(text)
            print(f"{'unchanged' if old == text else 'written  '} {path.relative_to(Path.cwd())}"
                  if path.is_relative_to(Path.cwd()) else path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
