"""`make demo`: the product's main job on this machine, in a few minutes.

probe -> recommend -> a short `tune postgres` (embedded PostgreSQL 18, data on /dev/shm,
a handful of short trials) writing the tuned config and the report into demo-out/.
The final phase re-measures tuned, rules-only and defaults in DEMO_REPEATS interleaved rounds
(5: the fewest at which the verdict's test can decide anything; see tuner/verdict.py), and
the demo ends with the verdict line every output carries. The tune step prints the /dev/shm
emulation note. DEMO_TRIALS / DEMO_DURATION / DEMO_REPEATS / DEMO_OUT override the defaults.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from pmem_advisor.cli.main import main as cli
from pmem_advisor.cli.output import console
from pmem_advisor.report.describe import outcome_lines

OUT = Path(os.environ.get("DEMO_OUT", "demo-out"))
TRIALS = os.environ.get("DEMO_TRIALS", "6")
DURATION = os.environ.get("DEMO_DURATION", "8")
REPEATS = os.environ.get("DEMO_REPEATS", "5")


def _step(title: str, *args: str) -> None:
    console.rule(title)
    code = cli(list(args))
    if code != 0:
        sys.exit(code)


def main() -> int:
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    work = Path(tempfile.mkdtemp(prefix="pmem-advisor-demo-", dir=shm))
    os.chmod(work, 0o755)  # the unprivileged server user must reach the data directory
    data = work / "data"
    (OUT / "study.db").unlink(missing_ok=True)  # a fresh study on every demo
    OUT.mkdir(exist_ok=True)
    try:
        _step("1/3 probe: this machine's memory, persistent memory and paths",
              "probe", "--path", str(work), "--out", str(OUT / "profile.json"))
        _step("2/3 recommend: the papers' rules for PostgreSQL with data on this path",
              "recommend", "postgres", "--profile", str(OUT / "profile.json"),
              "--data-dir", str(work), "--clients", "4",
              "--out", str(OUT / "postgresql.rules.conf"))
        _step(f"3/3 tune: {TRIALS} trials of pgbench on embedded PostgreSQL 18",
              "tune", "postgres", "--workload", "pgbench-tpcb", "--trials", TRIALS,
              "--duration", DURATION, "--warmup", "2", "--clients", "4", "--repeats", REPEATS,
              "--seed", "7", "--data-dir", str(data), "--out", str(OUT))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    console.rule("verdict")
    summary = json.loads((OUT / "summary.json").read_text(encoding="utf-8"))
    for line in outcome_lines(summary):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    console.rule("done")
    console.print(f"outputs in {OUT}/: postgresql.tuned.conf, report.html, report.md, "
                  "summary.json, postgresql.rules.conf, profile.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
