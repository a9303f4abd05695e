"""RocksDB on the Engine interface: an OPTIONS file, measured through db_bench.

RocksDB is a library: there is no server to start. pmem-advisor measures it with RocksDB's
own benchmark tool (db_bench, Debian rocksdb-tools) opening a copy of a loaded database with
the OPTIONS file under test, and validates an emitted file by opening a scratch database
with it. The pieces, each a module of this package: the format (options.py), the runner and
evaluator (bench.py), the workloads (workload.py), the baseline (baseline.py) and the paper
rules PM060-PM069.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pmem_advisor.engines.base import Engine, EngineBinary
from pmem_advisor.errors import UsageError
from pmem_advisor.rules.model import Bytes

MB = 1 << 20
WRITABLE_FILE_BUFFER = 1 * MB  # DBOptions.writable_file_max_buffer_size default (7.8)
OTHER_OVERHEAD = 32 * MB  # table cache handles, version sets, arenas' slack: not a knob
ASSUMPTIONS = (
    "one column family (the default one)",
    "index and filter blocks count only inside the block cache when "
    "cache_index_and_filter_blocks=true; otherwise they grow with the data and are not counted",
    "the LRU block cache is not strict by default: pinned blocks may exceed it briefly",
    "not counted: the application's own memory and iterators it keeps open",
)


class RocksDBEngine(Engine):
    # -- knobs ---------------------------------------------------------------------------
    def catalog(self, flavour: str | None = None, version: str | None = None):
        from pmem_advisor.engines.rocksdb.options import load_rocksdb_catalog

        self.resolve_flavour(flavour, version)
        return load_rocksdb_catalog(version)

    def emit(self, settings, header=None, *, catalog=None, fragment=True):
        """A complete OPTIONS file (``fragment`` is ignored: RocksDB reads whole files)."""
        from pmem_advisor.engines.rocksdb.options import emit_options
        from pmem_advisor.knobs.emit import Header

        header = header or Header(flavour="rocksdb")
        catalog = catalog or self.catalog(None, header.version or None)
        return emit_options(settings, header, catalog=catalog)

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        from pmem_advisor.engines.rocksdb.options import parse_options

        return parse_options(text, origin, catalog=self.catalog())

    # -- rules ---------------------------------------------------------------------------
    def baseline_rules(self) -> tuple[Any, ...]:
        from pmem_advisor.engines.rocksdb.baseline import RULE

        return (RULE,)

    def memory(self, settings: Mapping[str, Any], *, flavour: str | None = None,
               version: str | None = None, catalog=None, host_memory_bytes: int | None = None):
        """Worst case: block cache + every memtable + background buffers + fixed overhead."""
        from pmem_advisor.rules.memory import MemoryEstimate, MemoryPart

        catalog = catalog or self.catalog(flavour, version)
        v = _Values(catalog, settings)
        cache = v.get("block_cache")
        wbs, nbuf = v.get("write_buffer_size"), v.get("max_write_buffer_number")
        jobs = v.get("max_background_jobs")
        per_job = WRITABLE_FILE_BUFFER + v.get("compaction_readahead_size") + 2 * v.get(
            "block_size")
        parts = [
            MemoryPart("block_cache", int(cache), False,
                       "LRU block cache capacity (data blocks; index and filter blocks too "
                       "with cache_index_and_filter_blocks)"),
            MemoryPart("memtables", int(wbs * nbuf), False,
                       f"write_buffer_size x max_write_buffer_number ({nbuf}) x 1 column "
                       "family: every memtable full while flushes lag"),
            MemoryPart("background: flush/compaction buffers", int(jobs * per_job), False,
                       f"{jobs} background jobs x (1 MB write buffer + compaction read-ahead "
                       "+ two blocks)"),
            MemoryPart("other", OTHER_OVERHEAD, False,
                       "table cache handles, version metadata and arena slack"),
        ]
        total = sum(p.bytes for p in parts)
        background = parts[2].bytes
        return MemoryEstimate("rocksdb", total, 0, 0, parts, background, ASSUMPTIONS)

    def fit_memory(self, rec: Any, view: Any, budget_bytes: int) -> None:
        """Shrink the block cache first (it only caches), then the memtables."""
        from pmem_advisor.rules.fit import _put
        from pmem_advisor.rules.model import human_bytes

        def estimate():
            return self.memory({s.name: s.value for s in rec.settings}, catalog=view.catalog)

        est = estimate()
        if est.total_bytes <= budget_bytes:
            return
        cache = next(p.bytes for p in est.parts if p.name == "block_cache")
        rest = est.total_bytes - cache
        new = max(8 * MB, (budget_bytes - rest) // MB * MB)
        if new < cache:
            _put(rec, view, "block_cache", Bytes(new),
                 f"lowered from {human_bytes(cache)} so the worst case fits the "
                 f"{human_bytes(budget_bytes)} budget")
        est = estimate()
        if est.total_bytes > budget_bytes:
            s = rec.setting("write_buffer_size")
            wbs = int(s.value) if s is not None else 64 * MB
            _put(rec, view, "max_write_buffer_number", 2,
                 "two memtables: the smallest RocksDB allows, to fit the budget")
            _put(rec, view, "write_buffer_size", Bytes(max(4 * MB, wbs // 4 // MB * MB)),
                 "smaller memtables to fit the budget")

    def apply_lines(self, path: str, settings: Mapping[str, str], restart: list[str],
                    flavour: str | None = None) -> list[str]:
        """How a DBA deploys the tuned OPTIONS file (for tune's report)."""
        out = [f"apply: open the database with these options: rocksdb::LoadOptionsFromFile("
               f"\"{path}\", ...) then DB::Open (db_bench: --options_file={path}); RocksDB "
               "reads them when the database is opened, so reopen it"]
        writes = [k for k in settings if k in ("sync", "disable_wal")]
        if writes:
            out.append("  write options are per write, not in the file: set "
                       + ", ".join(f"WriteOptions.{'disableWAL' if k == 'disable_wal' else k}"
                                   f" = {_cpp_bool(settings[k])}" for k in writes)
                       + " in the application")
        out.append("  the block cache is created by the application: "
                   "BlockBasedTableOptions.block_cache with the block_cache capacity")
        return out

    # -- running it ----------------------------------------------------------------------
    def binary_version(self, path: Path | None) -> str:
        from pmem_advisor.engines.rocksdb.bench import db_bench_version

        return db_bench_version(path) if path is not None else "unknown"

    def validate_by_starting(self, config_text: str, workdir: str | Path, *,
                             binary: Any = None) -> None:
        """Open a scratch database with the OPTIONS file (db_bench, 100 keys written and
        read); UsageError with RocksDB's reason when it refuses."""
        from pmem_advisor.engines.rocksdb.bench import validate_options
        from pmem_advisor.engines.rocksdb.options import parse_options

        parse_options(config_text, "OPTIONS", catalog=self.catalog())  # our own checks first
        binary = binary or self.find_binary()
        validate_options(binary.path, config_text, workdir)

    def workload(self, name: str, **options: Any) -> Any:
        from pmem_advisor.engines.rocksdb.workload import MIXES, RocksYcsb

        if name not in MIXES:
            raise UsageError(f"workload {name} does not run on RocksDB",
                             hint=f"rocksdb runs: {', '.join(MIXES)}")
        return RocksYcsb(name, **options)

    def evaluator(self, binary: Any, workload: Any, *, scale: int, clients: int,
                  duration: float, warmup: float, data_dir: str | Path | None,
                  wal_dir: str | Path | None, workdir: str | Path | None, catalog: Any,
                  cgroup: Any = None):
        from pmem_advisor.engines.rocksdb.bench import RocksDBEvaluator

        if wal_dir is not None and data_dir is not None and Path(wal_dir) != Path(data_dir):
            raise UsageError("RocksDB keeps its WAL with the data here: wal_dir is not an "
                             "OPTIONS-file option; leave --wal-dir out")
        if not hasattr(workload, "mix"):
            workload = self.workload(getattr(workload, "name", str(workload)))
        return RocksDBEvaluator(self, binary, workload, scale=scale, clients=clients,
                                duration=duration, warmup=warmup, data_dir=data_dir,
                                workdir=workdir, catalog=catalog, cgroup=cgroup)


def _cpp_bool(text: str) -> str:
    """A rendered bool ("on", "true", "1") as the application's C++ spells it."""
    low = str(text).strip().lower()
    return {"on": "true", "1": "true", "yes": "true", "off": "false", "0": "false",
            "no": "false"}.get(low, low)


class _Values:
    """Option values in base units from settings (Bytes, text, numbers), else defaults."""

    def __init__(self, catalog, settings: Mapping[str, Any]) -> None:
        self.catalog, self.settings = catalog, dict(settings)

    def get(self, name: str) -> float:
        knob = self.catalog.get(name)
        raw = self.settings.get(name, knob.default)
        if isinstance(raw, Bytes):
            return raw.n
        if isinstance(raw, str):
            from pmem_advisor.engines.rocksdb.options import parse_value

            return parse_value(knob, raw)
        return knob.coerce(raw)


def scratch_dir(prefix: str = "pmem-advisor-rocksdb-") -> Path:
    """A private scratch directory (tests and one-off validation)."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


__all__ = ["EngineBinary", "RocksDBEngine"]
