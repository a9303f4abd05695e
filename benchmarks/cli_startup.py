"""`make bench-cli`: the CPU cost of starting pmem-advisor, side by side with `python -c pass`
in the same run (issue 55). Not a timed test: it prints figures and says whether each goal
is met. CPU = user + system of the child (resource.RUSAGE_CHILDREN), the median of N runs.

Goals: `check FILE` under 0.3 s of CPU; 1,000 files in one run under 20 ms each.

The children run with bytecode caching on (an installed package has its .pyc files; a
session with PYTHONDONTWRITEBYTECODE=1 would otherwise time the compiler), after one warm-up
run that writes them.

Per file: until `check` takes many paths in one run (issue 55's multi-file gate), the figure
is the library path `check FILE` runs, over N files in one process (``--per-file N``, a
child): the host probed and the facts built once, then per file what check does for it
(read_config, build_input, rules.check, run_checks), CPU from time.process_time over the
loop, so the start-up is paid once and reported apart.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
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


def per_file(n: int, engine: str, version: str) -> None:
    """In this process: the library path of `check FILE` over ``n`` files; prints
    'start <s> loop <s>' (CPU seconds: imports + probe + facts; the n files, not
    counting writing them)."""
    t0 = time.process_time()
    from pmem_advisor.cli.check import read_config
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess
    from pmem_advisor.rules import build_facts, check
    from pmem_advisor.rules.checks import build_input, run_checks
    from pmem_advisor.rules.facts import flavour_for

    flavour = flavour_for(engine, None, version)
    facts = build_facts(probe(SysAccess("/"), [], measure=False), engine=engine,
                        flavour=flavour, version=version, target=True)
    t1 = time.process_time()
    template = MYCNF if engine == "mysql" else PGCONF
    with tempfile.TemporaryDirectory(prefix="pmem-advisor-bench-") as tmp:
        paths = []
        for i in range(n):
            path = Path(tmp) / f"f{i}.{'cnf' if engine == 'mysql' else 'conf'}"
            # every other file turns durability off: half the files have a finding
            path.write_text(template.format(n=100 + i, flush=1 + i % 2,
                                            fsync=("on", "off")[i % 2]))
            paths.append(str(path))
        t2 = time.process_time()
        found = 0
        for path in paths:
            settings, where, loose = read_config(path, engine, flavour, version)
            inp, rule_facts = build_input(facts, settings, source="config", where=where,
                                          loose=loose, target=True, notes=[])
            found += len(run_checks(inp, check(rule_facts, settings, catalog=inp.catalog)))
        t3 = time.process_time()
    assert found >= n // 2, f"{found} findings in {n} files: the loop did not check them"
    print(f"start {t1 - t0:.4f} loop {t3 - t2:.4f}")


def _per_file_child(engine: str, version: str) -> tuple[float, float]:
    r = subprocess.run([sys.executable, __file__, "--per-file", str(FILES), engine, version],
                       capture_output=True, text=True, check=True, env=ENV)
    words = r.stdout.split()
    return float(words[1]), float(words[3])


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
        start, loop = _per_file_child(engine, version)
        each.append(loop / FILES)
        print(f"{FILES} {engine} files, library path in one process: start {start * 1000:.0f} "
              f"ms CPU, then {loop / FILES * 1000:.2f} ms CPU per file")
    verdict = ("meets" if max(each) < 0.02 else
               f"misses by {(max(each) - 0.02) * 1000:.1f} ms")
    print(f"goal {FILES} files < 20 ms CPU each: {verdict} (the library path in one process: "
          "`check` takes one --config per run on this branch)")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--per-file"]:
        per_file(int(sys.argv[2]), sys.argv[3], sys.argv[4])
        sys.exit(0)
    sys.exit(main())
