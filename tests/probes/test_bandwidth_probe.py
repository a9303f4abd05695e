"""The bandwidth probe end to end on /dev/shm (quick mode), and its failure paths."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

from pmem_advisor.errors import (
    CapabilityMissing,
    EnvironmentProblem,
    Interrupted,
    UsageError,
)
from pmem_advisor.probes.bandwidth import plan, runner, scratch
from pmem_advisor.probes.bandwidth.topology import Topology

SHM = "/dev/shm"
REQUIRED = ("path", "is_pmem", "persist_method", "peak_read_gbps", "peak_write_gbps",
            "best_write_threads", "best_write_access_bytes", "random_read_ratio",
            "idle_latency_ns", "persist_latency_ns", "points")


def _kernel_or_skip():
    try:
        return runner.load_kernel()
    except CapabilityMissing as e:
        pytest.skip(str(e))


def _shm_dir():
    if not os.path.isdir(SHM) or not os.access(SHM, os.W_OK):
        pytest.skip("no writable /dev/shm")
    need = plan.working_set_bytes(Topology.live().llc_bytes) + scratch.FREE_MARGIN
    if scratch.free_bytes(SHM) < need:
        pytest.skip(f"/dev/shm has less than the {need >> 20} MiB the probe needs")
    return tempfile.mkdtemp(prefix="pmem-advisor-test-", dir=SHM)


def _leftovers(d: str) -> list[str]:
    return [n for n in os.listdir(d) if n.startswith(scratch.SCRATCH_PREFIX)]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    _kernel_or_skip()
    d = _shm_dir()
    png = tmp_path_factory.mktemp("plot") / "heat.png"
    seen: list[tuple[str, float]] = []
    try:
        t0 = time.monotonic()
        res = runner.measure_paths([d], quick=True, plot=str(png),
                                   progress=lambda m, f: seen.append((m, f)))
        elapsed = time.monotonic() - t0
        yield res, d, png, seen, elapsed
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_quick_probe_entry(quick_run):
    res, d, _, _, elapsed = quick_run
    assert len(res) == 1
    e = res[0]
    for key in REQUIRED:
        assert key in e, key
    assert e["path"] == d
    assert e["persist_method"] in ("libpmem-nt", "msync")
    assert e["is_pmem"] == (e["persist_method"] == "libpmem-nt")
    assert e["fstype"] == "tmpfs"
    assert e["quick"] is True
    assert elapsed < 30  # a sanity bound: the < 10 s target is checked by make bench-probe
    assert _leftovers(d) == []  # the scratch file is gone


def test_quick_probe_numbers_are_sane(quick_run):
    e = quick_run[0][0]
    pts = e["points"]
    assert {p["op"] for p in pts} == {"read", "write", "mixed"}
    assert {p["pattern"] for p in pts} == {"seq", "rand"}
    for p in pts:
        assert set(p) >= {"op", "pattern", "access_bytes", "threads", "gbps"}
        assert math.isfinite(p["gbps"]) and p["gbps"] > 0.05, p
        # the reported speed is the data moved over the time it took
        assert p["seconds"] >= 0.9 * e["point_seconds"], p
        assert p["gbps"] == pytest.approx(p["bytes"] / p["seconds"] / 1e9, rel=1e-2)
    reads = [p for p in pts if p["op"] == "read" and p["pattern"] == "seq"]
    writes = [p for p in pts if p["op"] == "write" and p["pattern"] == "seq"]
    assert e["peak_read_gbps"] == max(p["gbps"] for p in reads)
    assert e["peak_write_gbps"] == max(p["gbps"] for p in writes)
    best = max(writes, key=lambda p: p["gbps"])
    assert (e["best_write_threads"], e["best_write_access_bytes"]) == (
        best["threads"], best["access_bytes"])
    # memory moves GB/s, not MB/s nor TB/s
    assert 0.5 < e["peak_read_gbps"] < 2000 and 0.2 < e["peak_write_gbps"] < 2000
    assert 0 < e["random_read_ratio"] < 3
    assert 0 < e["write_read_ratio"] < 5
    # a dependent DRAM load is tens to hundreds of ns; a 64 B persist is not free
    assert 5 < e["idle_latency_ns"] < 20000
    assert 1 < e["persist_latency_ns"] < 1e7
    assert e["working_set_bytes"] >= 256 * 2**20


def test_more_time_moves_more_data():
    kernel = _kernel_or_skip()
    d = _shm_dir()
    f = os.path.join(d, "ws")
    try:
        with open(f, "wb") as fh:
            os.posix_fallocate(fh.fileno(), 0, 64 * 2**20)
        m = kernel.Mapping(f)
        try:
            m.prefault(0, m.size, [0])
            cpus = sorted(os.sched_getaffinity(0))[:1]
            for op in ("read", "write"):
                short = m.run(op, "seq", False, 4096, cpus, 0.03, m.size)
                long = m.run(op, "seq", False, 4096, cpus, 0.24, m.size)
                moved = [r["read_bytes"] + r["write_bytes"] for r in (short, long)]
                assert short["seconds"] < long["seconds"]
                assert 0 < moved[0] < moved[1], (op, short, long)
                assert (short["read_bytes"] > 0) == (op == "read")
        finally:
            m.close()
        with pytest.raises(ValueError, match="closed"):
            m.run("read", "seq", False, 4096, [0], 0.01, 4096 * 4)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_kernel_rejects_bad_arguments(tmp_path):
    kernel = _kernel_or_skip()
    f = tmp_path / "ws"
    f.write_bytes(b"\0" * (1 << 20))
    m = kernel.Mapping(str(f))
    try:
        for args in (("read", "seq", False, 100, [0], 0.01, 1 << 20),  # not a multiple of 64
                     ("copy", "seq", False, 4096, [0], 0.01, 1 << 20),
                     ("read", "zigzag", False, 4096, [0], 0.01, 1 << 20),
                     ("read", "seq", False, 4096, [0], 0.01, 2 << 20),  # beyond the mapping
                     ("read", "seq", False, 4096, [], 0.01, 1 << 20),
                     ("read", "seq", False, 4096, [0], -1.0, 1 << 20)):
            with pytest.raises(ValueError):
                m.run(*args)
        # the second thread cannot be pinned: the first is released, nothing hangs
        with pytest.raises(OSError):
            m.run("read", "seq", False, 4096, [0, 1000], 0.01, 1 << 20)
        with pytest.raises(OSError):
            kernel.Mapping(str(tmp_path / "missing"))
    finally:
        m.close()


def test_progress_and_plot(quick_run):
    _, _, png, seen, _ = quick_run
    fracs = [f for _, f in seen]
    assert fracs == sorted(fracs) and 0 <= fracs[0] and fracs[-1] == 1.0
    assert any("pre-faulting" in m for m, _ in seen)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


RUN_SNIPPET = textwrap.dedent("""
    import json, sys
    from pmem_advisor.errors import Interrupted
    from pmem_advisor.probes.bandwidth import measure_paths
    def progress(msg, frac):
        if "write" in msg:
            print("measuring", flush=True)
    try:
        res = measure_paths([sys.argv[1]], quick=True, threads=[1], progress=progress)
    except Interrupted as e:
        print("interrupted:", e, flush=True)
        sys.exit(e.exit_code)
    print(json.dumps({k: v for k, v in res[0].items() if k != "points"}), flush=True)
""")


def test_forced_pmem_takes_the_libpmem_path():
    kernel = _kernel_or_skip()
    if not kernel.HAVE_LIBPMEM:
        pytest.skip("kernel built without libpmem")
    d = _shm_dir()
    try:
        env = {**os.environ, "PMEM_IS_PMEM_FORCE": "1"}  # read by libpmem when it loads
        r = subprocess.run([sys.executable, "-c", RUN_SNIPPET, d], env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        e = json.loads(r.stdout.strip().splitlines()[-1])
        assert (e["is_pmem"], e["persist_method"], e["pmem_is_pmem_forced"]) == (
            True, "libpmem-nt", True)
        assert e["peak_write_gbps"] > 0 and e["persist_latency_ns"] > 0
        assert _leftovers(d) == []
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_ctrl_c_stops_promptly_and_removes_the_scratch_file():
    _kernel_or_skip()
    d = _shm_dir()
    try:
        p = subprocess.Popen([sys.executable, "-c", RUN_SNIPPET, d], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            assert p.stdout.readline().strip() == "measuring"
            assert _leftovers(d)  # the scratch file exists while measuring
            p.send_signal(signal.SIGINT)
            t0 = time.monotonic()
            out, err = p.communicate(timeout=20)
            assert time.monotonic() - t0 < 5
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == Interrupted.exit_code, (out, err)
        assert "interrupted" in out and "Traceback" not in err
        assert _leftovers(d) == []
    finally:
        shutil.rmtree(d, ignore_errors=True)


class _FakeMapping:
    """Stands in for the C Mapping to drive the runner's failure paths."""

    fail_with: BaseException = OSError(5, "Input/output error")

    def __init__(self, path, size=0):
        self.size = os.stat(path).st_size
        self.is_pmem, self.persist_method, self.closed = False, "msync", False

    def prefault(self, offset, length, cpus):
        pass

    def run(self, *args, **kw):
        raise self.fail_with

    def close(self):
        self.closed = True


class _FakeKernel:
    HAVE_LIBPMEM = 0
    Mapping = _FakeMapping


@pytest.mark.parametrize(("error", "expected"), [
    (OSError(5, "Input/output error"), EnvironmentProblem),
    (KeyboardInterrupt(), Interrupted),
])
def test_failure_mid_run_removes_the_scratch_file(tmp_path, monkeypatch, error, expected):
    monkeypatch.setattr(runner, "load_kernel", lambda: _FakeKernel)
    monkeypatch.setattr(runner.plan, "MIN_WORKING_SET", 8 * 2**20)
    monkeypatch.setattr(runner.plan, "LLC_FACTOR", 0)  # smallest working set: fast
    monkeypatch.setattr(_FakeMapping, "fail_with", error)
    with pytest.raises(expected):
        runner.measure_paths([str(tmp_path)])
    assert _leftovers(str(tmp_path)) == []


def test_missing_kernel_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pmem_advisor.probes._pmembw", None)
    with pytest.raises(CapabilityMissing, match="not built") as ei:
        runner.measure_paths([SHM])
    assert "libpmem-dev" in str(ei.value)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"paths": []}, "no path"),
    ({"paths": ["/nonexistent/pmem"]}, "does not exist"),
    ({"paths": [SHM], "threads": [10_000]}, "threads asked"),
    ({"paths": [SHM], "threads": [0]}, "positive"),
    ({"paths": [SHM], "numa_node": 999}, "NUMA node 999"),
])
def test_bad_input_is_a_usage_error(kwargs, match):
    _kernel_or_skip()
    paths = kwargs.pop("paths")
    with pytest.raises(UsageError, match=match):
        runner.measure_paths(paths, **kwargs)
    assert not any(n.startswith(scratch.SCRATCH_PREFIX) for n in os.listdir(SHM))

