"""`make bench-cli`: the CPU cost of starting pmem-advisor, side by side with `python -c pass`
in the same run (issue 55). Not a timed test: it prints figures and says whether each goal
is met. CPU = user + system of the child (resource.RUSAGE_CHILDREN), the median of N runs.

Goals: `check FILE` under 0.3 s of CPU; 1,000 files in one run under 20 ms each.

The children run with bytecode caching on (an installed package has its .pyc files; a
session with PYTHONDONTWRITEBYTECODE=1 would otherwise time the compiler), after one warm-up
run that writes them.

Per file: the real `check` over a directory of N files in one run (the CLI, as CI runs it),
against the same run over one file: (CPU(N files) - CPU(1 file)) / (N - 1), so the start-up
is paid once and reported apart. Half the files turn durability off, so the run has
findings to report (exit 1) and the count is checked.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RUNS = 5
FILES = 1000
CLI = [sys.executable, "-m", "pmem_advisor"]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
MYCNF = "[mysqld]\ninnodb_flush_log_at_trx_commit = {flush}\nmax_connections = {n}\n"
PGCONF = "shared_buffers = '1GB'\nfsync = {fsync}\nmax_connections = {n}\n"


def cpu_of(cmd: list[str]) -> float:
    """Median CPU seconds (user+sys) of ``cmd`` over RUNS runs (after one warm-up)."""
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   env=ENV)
    samples = []
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                       env=ENV)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(samples)


def _write(tmp: Path, n: int, engine: str) -> Path:
    """A directory of ``n`` configs; every other one turns durability off."""
    d = tmp / f"{engine}-{n}"
    d.mkdir()
    template = MYCNF if engine == "mysql" else PGCONF
    for i in range(n):
        name = f"f{i}.cnf" if engine == "mysql" else f"postgresql-{i}.conf"
        (d / name).write_text(template.format(n=100 + i, flush=1 + i % 2,
                                              fsync=("on", "off")[i % 2]))
    return d


def per_file(engine: str, version: str) -> tuple[float, float]:
    """(CPU of one file's run, CPU per further file) of `check DIR` run as CI does."""
    with tempfile.TemporaryDirectory(prefix="pmem-advisor-bench-") as tmp:
        one, many = _write(Path(tmp), 1, engine), _write(Path(tmp), FILES, engine)
        flags = ["check", "--db", engine, "--version", version, "--no-project", "--no-measure",
                 "--format", "json"]
        r = subprocess.run([*CLI, *flags, str(many)], capture_output=True, text=True, env=ENV)
        failing = {f.get("file") for f in json.loads(r.stdout)["findings"]
                   if f["severity"] == "fail" and f.get("file")}
        assert len(failing) >= FILES // 2, f"{len(failing)} files failed of {FILES}"
        base = cpu_of([*CLI, *flags, str(one)])
        total = cpu_of([*CLI, *flags, str(many)])
    return base, (total - base) / (FILES - 1)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pmem-advisor-bench-") as tmp:
        cnf = Path(tmp) / "my.cnf"
        cnf.write_text(MYCNF.format(n=100, flush=1))
        conf = Path(tmp) / "postgresql.conf"
        conf.write_text(PGCONF.format(n=100, fsync="on"))
        rows = [
            ("python -c pass", cpu_of([sys.executable, "-c", "pass"])),
            ("pmem-advisor --version", cpu_of([*CLI, "--version"])),
            ("pmem-advisor check my.cnf", cpu_of([*CLI, "check", "--config", str(cnf),
                                                  "--db", "mysql", "--version", "8.4"])),
            ("pmem-advisor check pg.conf", cpu_of([*CLI, "check", "--config", str(conf),
                                                   "--db", "postgres", "--version", "16"])),
        ]
    base = rows[0][1]
    for name, cpu in rows:
        print(f"{name:28s} {cpu * 1000:7.0f} ms CPU  ({(cpu - base) * 1000:+6.0f} ms over python)")
    worst = max(cpu for name, cpu in rows if "check" in name)
    verdict = "meets" if worst < 0.3 else f"misses by {(worst - 0.3) * 1000:.0f} ms"
    print(f"goal check FILE < 300 ms CPU: {verdict}")
    each = []
    for engine, version in (("mysql", "8.4"), ("postgres", "16")):
        start, per = per_file(engine, version)
        each.append(per)
        print(f"check DIR of {FILES} {engine} files: {start * 1000:.0f} ms CPU for one file, "
              f"then {per * 1000:.2f} ms CPU per further file")
    verdict = ("meets" if max(each) < 0.02 else
               f"misses by {(max(each) - 0.02) * 1000:.1f} ms")
    print(f"goal {FILES} files < 20 ms CPU each: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
