"""Running DuckDB in a child process: validation and the tuner's evaluator.

Every open of a database goes through ``run_child`` (advisor/engines/duckdb/child.py): the
child gets a deadline and a memory cap; its resident memory is watched, and it is killed when
it passes the cap, so a DuckDB that ignores its memory_limit (allocations outside the buffer
manager) fails its trial instead of taking the machine or the tuner down. With a cgroup
(``tune --memory``) every trial's child also runs inside it; the golden copy's load does not
(it is not measured, and on tmpfs its file would stay charged to the group). The child runs as
the invoking user: DuckDB is a library, it has no server that refuses root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pmem_advisor.engines.duckdb.baseline import DUCKDB_SHARE
from pmem_advisor.engines.duckdb.catalog import ram_bytes
from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.fileio import copy_file_fd
from pmem_advisor.instances.cgroup import evict_page_cache
from pmem_advisor.instances.registry import RunScratch
from pmem_advisor.tuner.evaluator import Evaluator, Measurement, TrialConfig

POLL_S = 0.05
GRACE_S = 60.0  # beyond warmup + duration: opening, settings, the slowest query's tail


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as f:  # by-name-safe: procfs
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def run_child(request: dict[str, Any], *, timeout: float, memory_cap: int | None = None,
              cgroup: Any = None) -> dict[str, Any]:
    """The child's JSON answer; a kill (timeout, memory cap, crash) is an answer too."""
    proc = subprocess.Popen([sys.executable, "-m", "pmem_advisor.engines.duckdb.child"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if cgroup is not None:
        try:
            cgroup.add(proc.pid)
        except Exception:  # noqa: BLE001 - the cgroup is a bound, not a requirement to run
            pass
    peak, killed = 0, None
    try:
        proc.stdin.write(json.dumps(request))
        proc.stdin.close()
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            rss = rss_bytes(proc.pid)
            peak = max(peak, rss)
            if memory_cap is not None and rss > memory_cap:
                killed = (f"DuckDB used {rss >> 20} MiB, more than the memory budget's "
                          f"{memory_cap >> 20} MiB (killed)")
                proc.kill()
            elif time.monotonic() > deadline:
                killed = f"DuckDB did not finish within {timeout:.0f} s (killed)"
                proc.kill()
            time.sleep(POLL_S)
        out, err = proc.stdout.read(), proc.stderr.read()  # one short JSON line; exited
        proc.stdout.close()
        proc.stderr.close()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if killed:
        return {"ok": False, "stage": request.get("op"), "failure": killed, "peak_rss": peak}
    lines = [ln for ln in (out or "").splitlines() if ln.strip()]
    try:
        answer = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = [ln for ln in (err or "").splitlines() if ln.strip()]
        why = tail[-1] if tail else f"exit code {proc.returncode}"
        return {"ok": False, "stage": request.get("op"), "peak_rss": peak,
                "failure": f"DuckDB's process died ({why})"}
    answer["peak_rss"] = peak
    return answer


def load_limit_statement(memory_cap: int) -> str:
    """The load's memory_limit: DuckDB's own default share (80%) of the cap it runs under,
    the value it picks by itself inside a memory cgroup of that size."""
    return f"SET memory_limit = '{int(memory_cap * DUCKDB_SHARE) >> 20}MiB'"


def host_memory_cap() -> int:
    """Without a cgroup: 90% of the RAM DuckDB would see (rules/memory.py's budget share)."""
    return ram_bytes() * 9 // 10


class DuckDBEvaluator(Evaluator):
    """Per trial: a copy of the golden database file, the trial's SET statements, one run of
    the workload in a child process. The golden copy is loaded once, per default_block_size
    (the one reinit setting: it shapes the file)."""

    engine = flavour = "duckdb"

    def __init__(self, duck: Any, binary: Any, workload: Any, *, scale: int, clients: int,
                 duration: float, warmup: float, data_dir: str | Path | None,
                 workdir: str | Path | None, catalog: Any, cgroup: Any = None,
                 memory_cap: int | None = None) -> None:
        self.duck, self.binary, self.workload = duck, binary, workload
        self.version = getattr(binary, "version", "unknown")
        self.scale, self.clients = int(scale), max(1, int(clients))
        self.duration, self.warmup = float(duration), float(warmup)
        self.catalog, self.cgroup = catalog, cgroup
        limit = cgroup.limit() if cgroup is not None and hasattr(cgroup, "limit") else None
        self.memory_cap = memory_cap or limit or host_memory_cap()
        self._closed = False
        root = Path(data_dir or workdir or tempfile.gettempdir())
        root.mkdir(parents=True, exist_ok=True)
        # Golden and trial copies live on the data directory's filesystem: the medium measured.

        self._scratch = RunScratch(root, "duckdb tune scratch: golden and trial databases")
        self.scratch = self._scratch.path
        self.goldens: dict[tuple, Path] = {}
        self.initialisations = 0
        self.load_seconds: float | None = None

    def _golden(self, init: dict[str, Any]) -> Path:
        key = tuple(sorted((k, str(v)) for k, v in init.items()))
        if key in self.goldens:
            return self.goldens[key]
        path = self.scratch / f"golden-{len(self.goldens)}.duckdb"
        stmts = self.duck.statements(init, self.catalog)
        t0 = time.monotonic()
        # The load is not measured and runs outside the budget's cgroup (as RocksDB's does):
        # on tmpfs the file's pages stay charged to whoever wrote them, so a golden written in
        # the group would hold its size of the budget through every later trial, and data
        # larger than the budget (a spilling scale) would get the loader killed. It keeps the
        # memory_limit DuckDB takes inside the group (80% of its limit, measured on 2.0.1)
        # and the memory cap.
        ans = run_child({"op": "load", "db": str(path),
                         "statements": [load_limit_statement(self.memory_cap), *stmts],
                         "scale": self.scale}, timeout=3600, memory_cap=self.memory_cap)
        if not ans.get("ok"):
            for p in self.scratch.glob(path.name + "*"):
                p.unlink(missing_ok=True)
            raise EnvironmentProblem(f"DuckDB could not load the {self.workload.name} data: "
                                     f"{ans.get('failure')}")
        # its dirty pages written back now (charged outside the budget), not in a trial
        evict_page_cache([path])
        self.load_seconds = time.monotonic() - t0
        self.initialisations += 1
        self.goldens[key] = path
        return path

    def evaluate(self, config: TrialConfig) -> Measurement:
        if self._closed:
            raise UsageError("internal: evaluate() after close()")
        params = {k: v for k, v in config.params.items()}
        init = dict(config.init_params)
        for name in list(params):  # a reinit setting shapes the golden file, not the run
            knob = self.catalog.find(name)
            if knob is not None and knob.scope == "reinit":
                init[name] = params.pop(name)
        try:
            stmts = self.duck.statements(params, self.catalog)
        except UsageError as e:  # a value the catalog refuses: the trial fails, no raise
            return Measurement(ok=False, failure=e.message, raw={"stage": "settings"})
        try:
            golden = self._golden(init)
        except EnvironmentProblem as e:
            if not init:
                raise  # the default file cannot be loaded: nothing can be measured
            return Measurement(ok=False, failure=e.message, raw={"stage": "load"})
        trial = Path(tempfile.mkdtemp(prefix="trial-", dir=self.scratch))
        try:
            db = trial / "db.duckdb"
            copy_file_fd(golden, db)  # by descriptor: a link or FIFO at either name refused
            # the copy's pages sit in the page cache: drop them so the trial reads the medium
            # under test (a no-op on tmpfs, where the data is the cache)
            evicted = evict_page_cache([db])
            ans = run_child({"op": "run", "db": str(db), "statements": stmts,
                             "clients": self.clients, "duration": self.duration,
                             "warmup": self.warmup, "workload": self.workload.name},
                            timeout=self.warmup + self.duration + GRACE_S,
                            memory_cap=self.memory_cap, cgroup=self.cgroup)
            raw = {k: v for k, v in ans.items() if k not in ("ok", "failure", "latency_ms")}
            raw.update({"clients": self.clients, "scale": self.scale,
                        "unit": f"{self.workload.unit}/s",
                        "statements": stmts, "medium_dir": str(self.scratch),
                        "page_cache_evicted_bytes": evicted})
            if not ans.get("ok"):
                return Measurement(ok=False, failure=str(ans.get("failure")), raw=raw)
            rate = ans.get("throughput_tps", ans.get("throughput_qps"))
            return Measurement(ok=True, throughput_tps=rate,
                               latency_ms=ans["latency_ms"], errors=0,
                               duration_s=ans["duration_s"], raw=raw)
        finally:
            shutil.rmtree(trial, ignore_errors=True)

    def close(self) -> None:
        self._closed = True
        self._scratch.close()


def validate_statements(statements: list[str], names: list[str], workdir: str | Path,
                        *, timeout: float = 60.0) -> dict[str, str]:
    """Open a scratch database with the statements, SELECT 1, read the settings back."""
    root = Path(workdir)
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="pmem-advisor-duckdb-validate-", dir=root))
    try:
        ans = run_child({"op": "validate", "db": str(scratch / "validate.duckdb"),
                         "statements": statements, "names": names}, timeout=timeout,
                        memory_cap=host_memory_cap())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not ans.get("ok"):
        stmt = ans.get("statement")
        where = f" at `{stmt}`" if stmt else ""
        raise UsageError(f"DuckDB refused the config{where}: {ans.get('failure')}")
    return dict(ans.get("settings") or {})
