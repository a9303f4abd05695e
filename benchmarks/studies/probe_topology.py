"""Wall time of the topology probe (no bandwidth): `python -m benchmarks.studies.probe_topology`.

Prints the cold first run (imports, tool start-up) and the median of warm runs; the target is
well under a second.
"""

from __future__ import annotations

import statistics
import sys
import time


def main(runs: int = 20) -> int:
    start = time.perf_counter()
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess

    probe(SysAccess("/"), ["/dev/shm", "/"])
    cold = time.perf_counter() - start
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        probe(SysAccess("/"), ["/dev/shm", "/"])
        times.append(time.perf_counter() - t0)
    print(f"probe topology: cold {cold * 1000:.1f} ms (incl. imports), "
          f"warm median {statistics.median(times) * 1000:.1f} ms, "
          f"max {max(times) * 1000:.1f} ms over {runs} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
