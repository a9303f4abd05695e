"""Measuring RocksDB: db_bench on a golden copy of a loaded database, one copy per trial.

db_bench opens the database with the trial's OPTIONS file (``--options_file``) and runs the
workload's mix (workload.py). It runs as the unprivileged server user like the managed
servers (advisor/instances/privileges.py): every directory it touches is handed over.
The block cache is the one option db_bench takes from its command line even with an options
file (``--cache_size``), and the write options (``sync``, ``disableWAL``) are per write:
both are passed as flags. Writes are synced unless the trial asks otherwise (only possible
with --allow-unsafe, as ``sync=false`` is a durability risk in the catalog).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from pmem_advisor.engines.rocksdb.workload import KEY_NOTE, failure_reason, parse_output
from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.fileio import copy_tree_fd, write_file_safely
from pmem_advisor.instances.cgroup import evict_page_cache
from pmem_advisor.instances.privileges import (
    RunAs,
    chown_tree,
    hand_over,
    lease_server_user,
    release_server_user,
    require_reachable,
    server_user,
)
from pmem_advisor.instances.registry import RunScratch
from pmem_advisor.knobs.emit import Header, Setting
from pmem_advisor.tuner.evaluator import Evaluator, Measurement, TrialConfig

# db_bench gets this long beyond its own --duration before it is killed (open, compaction
# catch-up at close).
GRACE_S = 60.0


def run_db_bench(db_bench: Path, args: list[str], *, cwd: Path, timeout: float,
                 cgroup: Any = None, user: RunAs | None = None) -> tuple[int, str]:
    """db_bench as ``user`` (the caller's leased server uid; the shared server user when
    None); (exit code, stdout+stderr). A timeout kills it."""
    user = user or server_user()
    proc = subprocess.Popen([str(db_bench), *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **user.popen_kwargs())
    if cgroup is not None:
        try:
            cgroup.add(proc.pid)
        except Exception:  # noqa: BLE001 - the cgroup is a bound, not a requirement to run
            pass
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        return -9, (out or "") + f"\ndb_bench did not finish within {timeout:.0f} s (killed)"
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc.returncode, out or ""


class RocksDBEvaluator(Evaluator):
    """Per trial: a copy of the golden database, the trial's OPTIONS file, one db_bench run."""

    engine = flavour = "rocksdb"

    def __init__(self, engine: Any, binary: Any, workload: Any, *, scale: int, clients: int,
                 duration: float, warmup: float, data_dir: str | Path | None,
                 workdir: str | Path | None, catalog: Any, cgroup: Any = None) -> None:
        self.rocks = engine
        self.binary = binary
        self.version = binary.version
        self.db_bench = binary.path
        self.workload, self.scale, self.clients = workload, int(scale), int(clients)
        self.duration, self.warmup = float(duration), float(warmup)
        self.catalog, self.cgroup = catalog, cgroup
        # a uid of this study's own: its db_bench runs reach no other study's files
        self.user = lease_server_user()
        self._closed = False
        root = Path(data_dir or workdir or tempfile.gettempdir())
        root.mkdir(parents=True, exist_ok=True)
        require_reachable(root, self.user, "data directory")
        # Everything lives in one scratch directory on the data directory's filesystem, so
        # the golden copy and the trial copies are on the medium being measured.
        try:
            self._scratch = RunScratch(
                root, "rocksdb tune scratch: golden and trial databases", mode=0o711,
                server_uid=self.user.uid if self.user.privileged else None)
        except BaseException:
            release_server_user(self.user)
            raise
        self.scratch = self._scratch.path
        hand_over(self.scratch, self.user, 0o711)
        self.golden = self.scratch / "golden"
        self.initialisations = 0
        self.load_seconds: float | None = None

    # -- golden copy --------------------------------------------------------------------------
    def _load(self) -> None:
        if self.golden.is_dir():
            return
        self.golden.mkdir(mode=0o700)
        hand_over(self.golden, self.user)
        t0 = time.monotonic()
        # The load is not measured and runs outside the budget's cgroup: on tmpfs its files
        # would be charged to the group, and data larger than the budget (the point of the
        # scenario) would get the loader killed.
        rc, out = run_db_bench(self.db_bench,
                               self.workload.load_args(str(self.golden), self.scale),
                               cwd=self.scratch, timeout=3600, user=self.user)
        if rc != 0 or parse_output(out, "fillrandom") is None:
            shutil.rmtree(self.golden, ignore_errors=True)
            why = _why(rc, out)
            raise EnvironmentProblem(f"db_bench could not load the {self.workload.name} data: "
                                     f"{why}")
        # the load's 700 MB of dirty pages are written back now, not during the first trials
        evict_page_cache([self.golden])
        self.load_seconds = time.monotonic() - t0
        self.initialisations += 1

    # -- one trial ----------------------------------------------------------------------------
    def evaluate(self, config: TrialConfig) -> Measurement:
        if self._closed:
            raise UsageError("internal: evaluate() after close()")
        params = dict(config.params)
        params.update(config.init_params)
        sync = bool(params.pop("sync", True))
        disable_wal = bool(params.pop("disable_wal", False))
        try:
            cache = self.catalog.get("block_cache").coerce(
                params.get("block_cache", self.catalog.get("block_cache").default))
            emitted = self.rocks.emit([Setting(k, v, "trial") for k, v in params.items()],
                                      Header(flavour="rocksdb", version=self.version),
                                      catalog=self.catalog)
        except UsageError as e:  # a value or combination RocksDB refuses: the trial fails
            return Measurement(ok=False, failure=e.message, raw={"stage": "options"})
        self._load()
        trial = Path(tempfile.mkdtemp(prefix="trial-", dir=self.scratch))
        try:
            db = trial / "db"
            # the golden tree is the server user's (db_bench loaded it as that user): walked
            # by descriptor, its links copied as links, a FIFO or hard link refused
            db.mkdir(mode=0o700)  # by-name-safe: in root's fresh mkdtemp, mode 0700
            copy_tree_fd(self.golden, db, (self.user.uid, self.user.gid)
                         if self.user.privileged else None, src_owners=(self.user.uid,))
            # the copy's pages sit in the page cache, outside the budget's cgroup: dropped,
            # the block cache and the medium decide the reads (a no-op on tmpfs)
            evicted = evict_page_cache([db])
            options = trial / "OPTIONS.ini"
            write_file_safely(options, emitted.text, backup=False, mode=0o644)
            hand_over(trial, self.user, 0o700)
            chown_tree(trial, self.user)
            flags = [f"--options_file={options}", f"--cache_size={int(cache)}",
                     f"--sync={'true' if sync else 'false'}",
                     f"--disable_wal={'true' if disable_wal else 'false'}"]
            raw: dict[str, Any] = {"sync": sync, "disable_wal": disable_wal, "keys": KEY_NOTE,
                                   "clients": self.clients, "scale": self.scale,
                                   "page_cache_evicted_bytes": evicted}
            if self.warmup > 0:
                rc, out = self._run(db, flags, self.warmup)
                if rc != 0:
                    return Measurement(ok=False, failure=_why(rc, out),
                                       raw={**raw, "stage": "warmup", "exit_code": rc})
            t0 = time.monotonic()
            rc, out = self._run(db, flags, self.duration)
            elapsed = time.monotonic() - t0
            parsed = parse_output(out, self.workload.mix.benchmark)
            if rc != 0 or parsed is None:
                return Measurement(ok=False, duration_s=elapsed, failure=_why(rc, out),
                                   raw={**raw, "stage": "run", "exit_code": rc})
            raw.update({k: v for k, v in parsed.items() if k != "latency_ms"})
            return Measurement(ok=True, throughput_tps=parsed["ops_per_sec"],
                               latency_ms=parsed["latency_ms"], errors=0,
                               duration_s=parsed["seconds"], raw=raw)
        finally:
            shutil.rmtree(trial, ignore_errors=True)

    def _run(self, db: Path, flags: list[str], seconds: float) -> tuple[int, str]:
        args = self.workload.run_args(str(db), self.scale, clients=self.clients,
                                      duration=seconds) + flags
        return run_db_bench(self.db_bench, args, cwd=db.parent, timeout=seconds + GRACE_S,
                            cgroup=self.cgroup, user=self.user)

    def close(self) -> None:
        self._closed = True
        try:
            self._scratch.close()
        finally:
            release_server_user(self.user)


def _why(rc: int, out: str) -> str:
    """A failed db_bench run's reason: a signal says who ended it (its own output, cut off
    mid-run, would only show the last progress line)."""
    if "did not finish within" in out:
        return out.strip().splitlines()[-1]
    if rc < 0:
        return (f"db_bench was killed by signal {-rc}"
                + (" (out of memory in the budget's cgroup?)" if rc == -9 else ""))
    return failure_reason(out)


def db_bench_version(path: Path) -> str:
    """RocksDB's version as db_bench prints it ("db_bench version 7.8.3")."""
    try:
        r = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    words = (r.stdout + r.stderr).split()
    for i, w in enumerate(words[:-1]):
        if w == "version" and words[i + 1][:1].isdigit():
            return words[i + 1]
    return "unknown"


def validate_options(db_bench: Path, config_text: str, workdir: str | Path) -> None:
    """Open a scratch database with ``config_text`` through db_bench (a 100-key fill and
    reads, as the server user); UsageError with RocksDB's own reason when it refuses."""
    user = lease_server_user()
    root = Path(workdir)
    try:
        root.mkdir(parents=True, exist_ok=True)
        require_reachable(root, user, "work directory")
        scratch = Path(tempfile.mkdtemp(prefix="pmem-advisor-rocksdb-validate-", dir=root))
    except BaseException:
        release_server_user(user)
        raise
    try:
        hand_over(scratch, user, 0o711)
        options = scratch / "OPTIONS.ini"
        write_file_safely(options, config_text, backup=False, mode=0o644)
        db = scratch / "db"
        db.mkdir(mode=0o700)
        chown_tree(scratch, user)
        rc, out = run_db_bench(db_bench, [
            "--benchmarks=fillrandom,readrandom", f"--db={db}", "--num=100",
            "--value_size=100", f"--options_file={options}"], cwd=scratch, timeout=120,
            user=user)
        if rc != 0 or parse_output(out, "readrandom") is None:
            raise UsageError(f"RocksDB refused the options: {failure_reason(out)}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        release_server_user(user)


def is_tmpfs(path: str | Path) -> bool:
    """True when ``path`` lives on tmpfs (/dev/shm stands in for PMEM in live runs)."""
    best, fstype = "", ""
    p = os.path.realpath(path)
    try:
        with open("/proc/self/mounts", encoding="utf-8") as f:  # by-name-safe: procfs
            for line in f:
                parts = line.split()
                if len(parts) > 2 and (p == parts[1] or p.startswith(parts[1].rstrip("/") + "/")):
                    if len(parts[1]) >= len(best):
                        best, fstype = parts[1], parts[2]
    except OSError:
        return False
    return fstype == "tmpfs"
