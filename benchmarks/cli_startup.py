"""`make bench-cli`: the CPU cost of starting pmem-advisor, side by side with `python -c pass`
in the same run (issue 55). Not a timed test: it prints figures and says whether each goal
is met. CPU = user + system of the child (resource.RUSAGE_CHILDREN), the median of N runs.

Goals: `check FILE` under 0.3 s of CPU; 1,000 files in one run under 20 ms each (`check`
takes one --config per run today, so that figure is the per-run cost and is reported as such).
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RUNS = 5
CLI = [sys.executable, "-m", "pmem_advisor"]


def cpu_of(cmd: list[str]) -> float:
    """Median CPU seconds (user+sys) of ``cmd`` over RUNS runs."""
    samples = []
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(samples)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pmem-advisor-bench-") as tmp:
        cnf = Path(tmp) / "my.cnf"
        cnf.write_text("[mysqld]\ninnodb_flush_log_at_trx_commit = 1\nmax_connections = 100\n")
        rows = [
            ("python -c pass", cpu_of([sys.executable, "-c", "pass"])),
            ("pmem-advisor --version", cpu_of([*CLI, "--version"])),
            ("pmem-advisor check FILE", cpu_of([*CLI, "check", "--config", str(cnf),
                                                "--db", "mysql", "--version", "8.4"])),
        ]
    base = rows[0][1]
    for name, cpu in rows:
        print(f"{name:28s} {cpu * 1000:7.0f} ms CPU  ({(cpu - base) * 1000:+6.0f} ms over python)")
    check = rows[2][1]
    verdict = "meets" if check < 0.3 else f"misses by {(check - 0.3) * 1000:.0f} ms"
    print(f"goal check FILE < 300 ms CPU: {verdict}")
    per_file = "meets" if check < 0.02 else "misses (one file per run: start-up is per file)"
    print(f"goal 1000 files < 20 ms CPU each: {per_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
