"""`make bench-probe`: our bandwidth probe against fio and sysbench on the same files.

On one file in /dev/shm (emulated PMEM: PMEM_IS_PMEM_FORCE=1 so libpmem, ours and fio's,
takes its non-temporal persistent path) and one on the disk, it runs: this probe (quick and
full, destructive on that file), fio --ioengine=libpmem and --ioengine=mmap at the same
block sizes and job counts (one region per job, like our "individual" layout), and
sysbench memory (a DRAM reference, not file-backed). It prints each figure side by side with
the ratio ours/fio; the target is >= 0.95x for sequential read and write at 4 KB and 64 KB,
1 and 2 threads, quick mode < 10 s and the full sweep < 60 s.

    python -m benchmarks.probe_bandwidth [--disk-dir /var/tmp] [--runtime 1] [--reps 2]
                                         [--no-full] [--no-disk]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

SIZES = (4096, 65536)
JOBS = (1, 2)
OPS = ("read", "write")
TARGET = 0.95
QUICK_LIMIT_S, FULL_LIMIT_S = 10.0, 60.0


@dataclass
class Medium:
    name: str
    directory: str
    force_pmem: bool  # PMEM_IS_PMEM_FORCE=1 for ours and fio's libpmem
    file: str = ""
    ours: dict = field(default_factory=dict)  # mode -> probe entry (+ "elapsed_s")
    kernel: dict = field(default_factory=dict)  # (op, bs, jobs) -> best GB/s
    fio: dict = field(default_factory=dict)  # (engine, op, bs, jobs) -> GB/s or error text


def _env(force: bool) -> dict:
    env = dict(os.environ)
    env.pop("PMEM_IS_PMEM_FORCE", None)
    if force:
        env["PMEM_IS_PMEM_FORCE"] = "1"
    return env


def run_ours(file: str, *, full: bool, force: bool) -> dict:
    """One probe run in a child process (libpmem reads PMEM_IS_PMEM_FORCE when it loads)."""
    cmd = [sys.executable, "-m", "benchmarks.probe_bandwidth", "--child", file]
    if full:
        cmd.append("--full")
    t0 = time.monotonic()
    r = subprocess.run(cmd, env=_env(force), capture_output=True, text=True, timeout=900)
    elapsed = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"probe failed on {file}: {r.stderr.strip().splitlines()[-1:]}")
    entry = json.loads(r.stdout)
    entry["elapsed_s"] = round(elapsed, 2)
    return entry


def child(file: str, full: bool) -> None:
    from pmem_advisor.probes.bandwidth import measure_paths

    res = measure_paths([file], quick=not full, destructive=True, threads=list(JOBS))
    print(json.dumps(res[0]))


def child_points(file: str, duration: float) -> None:
    """The probe's own kernel call (Mapping.run) for the compared points, each as long as a
    fio run, so both sides see the same background noise."""
    from pmem_advisor.probes.bandwidth import load_kernel, runner
    from pmem_advisor.probes.bandwidth.topology import Topology, fs_type

    topo = Topology.live()
    cpus = topo.nodes[topo.default_node()]
    m = load_kernel().Mapping(file)
    try:
        m.prefault(0, m.size, cpus)
        real_io = m.persist_method == "msync" and fs_type(file) not in ("tmpfs", "ramfs")
        out = {}
        for op, bs, jobs in _keys():
            if jobs <= len(cpus):
                r = m.run(op, "seq", False, bs, cpus[:jobs], duration, m.size,
                          max_bytes=runner.MSYNC_DEVICE_CAP if real_io else 0)
                out[f"{op}/{bs}/{jobs}"] = (r["read_bytes"] + r["write_bytes"]) / r["seconds"] / 1e9
        print(json.dumps({"persist_method": m.persist_method, "gbps": out}))
    finally:
        m.close()


def _reallocate(file: str, size: int) -> None:
    with open(file, "r+b") as f:
        os.posix_fallocate(f.fileno(), 0, size)


def run_points(file: str, duration: float, force: bool) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.probe_bandwidth", "--child-points", file,
           "--runtime", str(duration)]
    r = subprocess.run(cmd, env=_env(force), capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"kernel points failed on {file}: {r.stderr.strip()[-200:]}")
    res = json.loads(r.stdout)
    return {tuple(_key(k)): v for k, v in res["gbps"].items()}


def _keys():
    return [(op, bs, jobs) for op in OPS for bs in SIZES for jobs in JOBS]


def _key(text: str) -> tuple[str, int, int]:
    op, bs, jobs = text.split("/")
    return op, int(bs), int(jobs)


def run_fio(file: str, size: int, engine: str, op: str, bs: int, jobs: int, runtime: float,
            force: bool) -> float | str:
    """Aggregate GB/s of one fio run, or the reason it did not run.

    One region per job, like our "individual" layout. fio's libpmem engine maps each job
    with PMEM_FILE_CREATE, which truncates the file to that job's size, so the file is
    re-allocated first: otherwise the next run would page-fault a sparse file.
    """
    _reallocate(file, size)
    per_job = size // jobs // bs * bs
    cmd = ["fio", "--name=bench", f"--filename={file}", f"--ioengine={engine}",
           f"--rw={op}", f"--bs={bs}", f"--numjobs={jobs}", f"--size={per_job}",
           f"--offset_increment={per_job}",
           "--thread", "--group_reporting",
           "--time_based", f"--runtime={runtime}s", "--ramp_time=0.3s",
           "--output-format=json"]
    # libpmem: direct=1 selects non-temporal stores (its persistent path). mmap: direct=1
    # would msync every block, so it runs buffered and fio does not time the final msync.
    cmd.append(f"--direct={int(engine == 'libpmem')}")
    r = subprocess.run(cmd, env=_env(force), capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        m = re.search(r"func=([^,]+), error=(.+)", r.stderr + r.stdout)
        lines = (r.stderr or r.stdout).strip().splitlines()
        why = m.group(1) if m else (lines[0] if lines else f"exit {r.returncode}")
        return "refused: " + why.strip()[:70]
    try:
        start = r.stdout.index("{")
        job = json.loads(r.stdout[start:])["jobs"][0]
    except (ValueError, KeyError, IndexError):
        return "unparsable fio output"
    return job[op]["bw_bytes"] / 1e9


def run_sysbench(op: str, bs: int, jobs: int, runtime: float) -> float | str:
    cmd = ["sysbench", "memory", f"--memory-block-size={bs}", "--memory-total-size=1T",
           f"--memory-oper={op}", "--memory-access-mode=seq", f"--threads={jobs}",
           f"--time={max(1, round(runtime))}", "run"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    m = re.search(r"\(([\d.]+) MiB/sec\)", r.stdout)
    if r.returncode != 0 or not m:
        return "failed"
    return float(m.group(1)) * 2**20 / 1e9


def our_gbps(entry: dict, op: str, bs: int, jobs: int) -> float | None:
    for p in entry.get("points", []):
        if (p["op"], p["pattern"], p["access_bytes"], p["threads"], p["layout"]) == (
                op, "seq", bs, jobs, "individual"):
            return p["gbps"]
    return None


def _best(old, new):
    """Best of the repetitions (noise only ever slows a run down); errors kept if no number."""
    if isinstance(old, float) and isinstance(new, float):
        return max(old, new)
    return new if isinstance(new, float) or old is None else old


def _fmt(v) -> str:
    if isinstance(v, str):
        return f"{v[:8]:>8}"
    return f"{v:8.2f}" if isinstance(v, float) else f"{'-':>8}"


def _ratio(ours, theirs) -> str:
    if isinstance(ours, float) and isinstance(theirs, float) and theirs > 0:
        r = ours / theirs
        return f"{r:6.2f}x{' ' if r >= TARGET else '!'}"
    return f"{'-':>8}"


def report(media: list[Medium], sysbench: dict, reps: int) -> int:
    misses = 0
    head = (f"{'medium':<6} {'op':<5} {'bs':>4} {'jobs':>4} | {'probe':>8} {'kernel':>8} | "
            f"{'fio-pmem':>8} {'ratio':>8} | {'fio-mmap':>8} {'ratio':>8} | {'sysb-mem':>8}")
    print(f"\nsequential bandwidth, GB/s. probe: the quick probe run; kernel: the probe's kernel "
          f"on the same points for as long as fio, best of {reps} interleaved with fio "
          f"(best of {reps} too). ratio = kernel/fio, '!' = below {TARGET}x")
    print(head)
    print("-" * len(head))
    for m in media:
        for op, bs, jobs in _keys():
            probe = our_gbps(m.ours["quick"], op, bs, jobs)
            ours = m.kernel.get((op, bs, jobs))
            pm = m.fio.get(("libpmem", op, bs, jobs))
            mm = m.fio.get(("mmap", op, bs, jobs))
            # like for like: fio-libpmem vs our libpmem-nt path, fio-mmap vs our msync path
            ref = pm if m.ours["quick"]["persist_method"] == "libpmem-nt" else mm
            # the target is for emulated PMEM; on disk our writes include the msync
            if m.force_pmem and isinstance(ref, float) and isinstance(ours, float) \
                    and ours < TARGET * ref:
                misses += 1
            print(f"{m.name:<6} {op:<5} {bs // 1024:>3}K {jobs:>4} | {_fmt(probe)} "
                  f"{_fmt(ours)} | {_fmt(pm)} {_ratio(ours, pm)} | {_fmt(mm)} "
                  f"{_ratio(ours, mm)} | {_fmt(sysbench.get((op, bs, jobs)))}")
    print("\nprobe runs (quick target < 10 s, full < 60 s)")
    for m in media:
        for mode, e in m.ours.items():
            limit = QUICK_LIMIT_S if mode == "quick" else FULL_LIMIT_S
            mark = "ok" if e["elapsed_s"] < limit else "SLOW"
            print(f"  {m.name:<5} {mode:<5} {e['persist_method']:<10} is_pmem={e['is_pmem']!s:<5} "
                  f"{e['elapsed_s']:6.2f} s [{mark}]  peak read {e['peak_read_gbps']} / write "
                  f"{e['peak_write_gbps']} GB/s, idle {e['idle_latency_ns']} ns, persist "
                  f"{e['persist_latency_ns']} ns, best write {e['best_write_threads']} thr x "
                  f"{e['best_write_access_bytes']} B")
    for m in media:
        for why in sorted({v for v in m.fio.values() if isinstance(v, str)}):
            print(f"  note: fio on {m.name}: {why}")
    print("  note: disk rows are informational: our msync path times the msync that makes "
          "writes durable, fio's buffered mmap engine does not")
    print(f"\n{misses} like-for-like comparison(s) on emulated PMEM below {TARGET}x of fio")
    return misses


def measure_medium(m: Medium, size: int, args) -> None:
    m.file = os.path.join(m.directory, f"pmem-advisor-bench-{os.getpid()}.dat")
    with open(m.file, "wb") as f:
        os.posix_fallocate(f.fileno(), 0, size)
    print(f"[{m.name}] {m.file}: {size / 2**30:.2f} GiB", file=sys.stderr, flush=True)
    m.ours["quick"] = run_ours(m.file, full=False, force=m.force_pmem)
    if not args.no_full and m.force_pmem:  # a full sweep on disk is msync-bound
        m.ours["full"] = run_ours(m.file, full=True, force=m.force_pmem)
    reps = args.reps if m.force_pmem else 1
    for rep in range(reps):
        print(f"[{m.name}] comparison round {rep + 1}/{reps}", file=sys.stderr, flush=True)
        _reallocate(m.file, size)  # fio may have truncated it
        for key, v in run_points(m.file, args.runtime, m.force_pmem).items():
            m.kernel[key] = _best(m.kernel.get(key), v)
        for engine in ("libpmem", "mmap"):
            for op, bs, jobs in _keys():
                k = (engine, op, bs, jobs)
                m.fio[k] = _best(m.fio.get(k), run_fio(m.file, size, engine, op, bs, jobs,
                                                       args.runtime, m.force_pmem))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-points", help=argparse.SUPPRESS)
    ap.add_argument("--full", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--shm-dir", default="/dev/shm")
    ap.add_argument("--disk-dir", default="/var/tmp")
    ap.add_argument("--runtime", type=float, default=1.0, help="seconds per compared run")
    ap.add_argument("--reps", type=int, default=2, help="interleaved rounds on /dev/shm")
    ap.add_argument("--no-full", action="store_true", help="skip the full sweep")
    ap.add_argument("--no-disk", action="store_true", help="only /dev/shm")
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.full)
        return 0
    if args.child_points:
        child_points(args.child_points, args.runtime)
        return 0
    for tool in ("fio", "sysbench"):
        if not shutil.which(tool):
            print(f"{tool} not found (apt-get install {tool}, or make deps)", file=sys.stderr)
            return 3
    from pmem_advisor.probes.bandwidth import load_kernel, plan
    from pmem_advisor.probes.bandwidth.topology import Topology

    load_kernel()
    size = plan.working_set_bytes(Topology.live().llc_bytes)
    media = [Medium("shm", args.shm_dir, True)]
    if not args.no_disk:
        media.append(Medium("disk", args.disk_dir, False))
    try:
        for m in media:
            measure_medium(m, size, args)
    finally:
        for m in media:
            if m.file and os.path.exists(m.file):
                os.unlink(m.file)
    sysbench = {(op, bs, jobs): run_sysbench(op, bs, jobs, args.runtime)
                for op, bs, jobs in _keys()}
    report(media, sysbench, args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
