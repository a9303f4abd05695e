"""Managed-instance costs that every tuning trial pays: golden restore and restart.

    .venv/bin/python -m benchmarks.studies.instances_perf [--engine postgres|mysql] [--size-mb 1024]
        [--dir /dev/shm] [--reps 3] [--json]

Loads about ``--size-mb`` of table data into an instance whose data (and WAL/redo) live under
``--dir``, snapshots it, then times restores and restarts. Target (issue 6): a restore of 1 GB
in under 2 s on /dev/shm.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from pmem_advisor.instances import create_instance, pick_server

ROW_BYTES = 400  # on-disk bytes per filler row: heap, primary key and the WAL of the load


def _dir_bytes(*dirs: Path | None) -> int:
    return sum(p.stat().st_size for d in dirs if d for p in d.rglob("*") if p.is_file()
               and not p.is_symlink())


def _load(inst, size_mb: int) -> None:
    rows = size_mb * 1024**2 // ROW_BYTES
    if inst.engine == "postgres":
        inst.query("CREATE TABLE filler (id bigint PRIMARY KEY, pad text)")
        inst.query("INSERT INTO filler SELECT g, repeat(md5(g::text), 3) "
                   f"FROM generate_series(1, {rows}) g")
        inst.query("CHECKPOINT")
    else:
        inst.query("CREATE TABLE filler (id bigint PRIMARY KEY, pad varchar(120))")
        step = 500_000
        for lo in range(1, rows + 1, step):
            hi = min(rows, lo + step - 1)
            inst.query("INSERT INTO filler SELECT seq, repeat(md5(seq), 3) "
                       f"FROM seq_{lo}_to_{hi}")


def run(engine: str, size_mb: int, base: Path, reps: int) -> dict:
    binary = pick_server(engine)
    tmp = Path(tempfile.mkdtemp(prefix="pmem-advisor-perf-", dir=base))
    tmp.chmod(0o755)
    try:
        with create_instance(binary, data_dir=tmp / "data", wal_dir=tmp / "wal",
                             golden_dir=tmp / "golden") as inst:
            t = time.monotonic()
            inst.initialize()
            init_s = time.monotonic() - t
            inst.start()
            t = time.monotonic()
            _load(inst, size_mb)
            load_s = time.monotonic() - t
            t = time.monotonic()
            inst.snapshot()
            snapshot_s = time.monotonic() - t
            size = _dir_bytes(inst.data_dir, inst.wal_dir)
            restores, starts, restarts = [], [], []
            for _ in range(reps):
                t = time.monotonic()
                inst.restore()
                restores.append(time.monotonic() - t)
                t = time.monotonic()
                inst.start()
                starts.append(time.monotonic() - t)
                t = time.monotonic()
                inst.restart()
                restarts.append(time.monotonic() - t)
            return {
                "server": binary.describe(), "dir": str(base), "bytes": size,
                "init_s": round(init_s, 3), "load_s": round(load_s, 3),
                "snapshot_s": round(snapshot_s, 3),
                "restore_s": round(statistics.median(restores), 3),
                "start_after_restore_s": round(statistics.median(starts), 3),
                "restart_s": round(statistics.median(restarts), 3),
                "restore_s_per_gb": round(statistics.median(restores) / (size / 1024**3), 3),
            }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=["postgres", "mysql"], default="postgres")
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--dir", type=Path, default=Path("/dev/shm"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    result = run(a.engine, a.size_mb, a.dir, a.reps)
    if a.json:
        print(json.dumps(result, indent=2))
        return
    for k, v in result.items():
        print(f"{k:24} {v}")
    ok = result["restore_s_per_gb"] < 2
    print(f"target restore < 2 s per GB on /dev/shm: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
