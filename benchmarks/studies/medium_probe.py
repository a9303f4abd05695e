"""The medium probe's own reader next to fio, on the same scratch file (issue 19).

    .venv/bin/python benchmarks/studies/medium_probe.py [DIR] [--rounds N] [--seconds S]

Lays out one scratch file in DIR (default /var/tmp) exactly as the probe does, then runs the
native reader and fio alternately (interleaved rounds, so drift hits both) and prints the
median of each metric and the ratio native / fio. The classification boundaries
(probes/medium.py) are an order of magnitude apart, so the native reader is good enough where
its median latency stays within ~1.5x of fio's. Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time

from pmem_advisor.probes import medium as m


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", nargs="?", default="/var/tmp")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=m.PHASE_SECONDS)
    args = ap.parse_args(argv)
    if shutil.which("fio") is None:
        print("fio is not installed: nothing to compare with", file=sys.stderr)
        return 3
    runs: dict[str, list[dict]] = {"native": [], "fio": []}
    try:
        with m.scratch_file(args.directory) as file:
            for r in range(args.rounds):
                for method in (("native", "fio") if r % 2 == 0 else ("fio", "native")):
                    deadline = time.monotonic() + m.DEADLINE_SECONDS
                    run = m._run_fio if method == "fio" else m._run_native
                    runs[method].append(run(file, m.SCRATCH_BYTES, args.seconds, deadline))
                    print(f"round {r + 1} {method}: {runs[method][-1]}", file=sys.stderr)
    except m.MeasureError as e:
        print(f"cannot measure {args.directory}: {e}", file=sys.stderr)
        return 3
    print(f"{'metric':<22}{'native':>12}{'fio':>12}{'native/fio':>12}")
    for key in ("read_lat_ms", "read_lat_mean_ms", "read_iops", "write_iops"):
        nat = statistics.median(x[key] or 0 for x in runs["native"])
        fio = statistics.median(x[key] or 0 for x in runs["fio"])
        ratio = f"{nat / fio:.2f}" if fio else "-"
        fmt = ".4f" if "lat" in key else ".0f"
        print(f"{key:<22}{nat:>12{fmt}}{fio:>12{fmt}}{ratio:>12}")
    med = {k: {key: statistics.median(x[key] or 0 for x in v) for key in v[0]
               if key in ("read_lat_ms", "read_iops")} for k, v in runs.items()}
    print(f"(median of {args.rounds} interleaved rounds of {args.seconds:g} s per phase; "
          f"native depth {m.NATIVE_THREADS} threads, fio iodepth {m.DEPTH}; class: native "
          f"{m.classify(med['native']['read_lat_ms'], None)}, fio "
          f"{m.classify(med['fio']['read_lat_ms'], med['fio']['read_iops'])})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
