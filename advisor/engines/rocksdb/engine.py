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

from pmem_advisor.engines.api import EvalRequest
from pmem_advisor.engines.base import Engine, EngineBinary
from pmem_advisor.engines.rocksdb.baseline import RULE, small_cache_index_off
from pmem_advisor.engines.rocksdb.bench import RocksDBEvaluator, db_bench_version, validate_options
from pmem_advisor.engines.rocksdb.options import (
    emit_options,
    load_rocksdb_catalog,
    parse_options,
    parse_value,
)
from pmem_advisor.engines.rocksdb.workload import MIXES, RocksYcsb
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.emit import Header
from pmem_advisor.rules.fit import put_setting
from pmem_advisor.rules.memory import MemoryEstimate, MemoryPart, SettingValues
from pmem_advisor.rules.model import Bytes, human_bytes

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
# The data directory on tmpfs (/dev/shm standing in for PMEM): every file RocksDB writes there
# is memory, charged to its memory cgroup as it writes it (on real PMEM it is media, not RAM).
TMPFS_ASSUMPTIONS = (
    "data on tmpfs: the files RocksDB writes there are memory; counted: the live WAL "
    "(max_total_wal_size, 0 = 4x the memtables), the L0 files a compaction waits for "
    "(level0_file_num_compaction_trigger memtables) and one L0->L1 compaction's output (those "
    "files plus a full L1, max_bytes_for_level_base) before its inputs are deleted",
    "data on tmpfs: not counted: the database's files written before this process (a load, a "
    "restore) and deeper compactions; a long-running database on tmpfs rewrites every file, "
    "so the data itself must fit in RAM beside this",
)
# RocksDB's own default for max_total_wal_size = 0: "[sum of all write_buffer_size *
# max_write_buffer_number] * 4" (include/rocksdb/options.h, 7.8.3).
WAL_DEFAULT_FACTOR = 4


def tmpfs_files(v: SettingValues) -> list[MemoryPart]:
    """The files RocksDB writes on a tmpfs data directory, worst case (TMPFS_ASSUMPTIONS)."""
    wbs, nbuf = v.get("write_buffer_size"), v.get("max_write_buffer_number")
    wal = v.get("max_total_wal_size") or WAL_DEFAULT_FACTOR * wbs * nbuf
    l0 = v.get("level0_file_num_compaction_trigger") * wbs
    l1 = v.get("max_bytes_for_level_base")
    return [
        MemoryPart("tmpfs: WAL", int(wal), False,
                   "the live WAL on tmpfs (max_total_wal_size; 0 = 4x the memtables)",
                   static=False),  # written under load, not allocated at open
        MemoryPart("tmpfs: flushed and compacted files", int(2 * l0 + l1), False,
                   "L0 files waiting for compaction (trigger x write_buffer_size) plus one "
                   "L0->L1 compaction's output (those files and a full L1) before its "
                   "inputs are deleted", static=False),
    ]


class RocksDBEngine(Engine):
    # -- knobs ---------------------------------------------------------------------------
    def catalog(self, flavour: str | None = None, version: str | None = None):
        self.resolve_flavour(flavour, version)
        return load_rocksdb_catalog(version)

    def emit(self, settings, header=None, *, catalog=None, fragment=True):
        """A complete OPTIONS file (``fragment`` is ignored: RocksDB reads whole files)."""
        header = header or Header(flavour="rocksdb")
        catalog = catalog or self.catalog(None, header.version or None)
        return emit_options(settings, header, catalog=catalog)

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        return parse_options(text, origin, catalog=self.catalog())

    # -- rules ---------------------------------------------------------------------------
    def baseline_rules(self) -> tuple[Any, ...]:
        return (RULE,)

    counts_files_in_memory = True

    def memory(self, settings: Mapping[str, Any], *, flavour: str | None = None,
               version: str | None = None, catalog=None, host_memory_bytes: int | None = None,
               files_in_memory: bool = False):
        """Worst case: block cache + every memtable + background buffers + fixed overhead;
        with ``files_in_memory`` (the data directory is tmpfs) the files RocksDB writes there
        too (``tmpfs_files``)."""
        catalog = catalog or self.catalog(flavour, version)
        v = SettingValues(catalog, settings, parse_text=parse_value)
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
        assumptions = ASSUMPTIONS
        if files_in_memory:
            parts += tmpfs_files(v)
            assumptions += TMPFS_ASSUMPTIONS
        total = sum(p.bytes for p in parts)
        background = parts[2].bytes
        return MemoryEstimate("rocksdb", total, 0, 0, parts, background, assumptions)

    def fit_memory(self, rec: Any, view: Any, budget_bytes: int) -> None:
        """Shrink the block cache first (it only caches), then the memtables; then keep
        index and filter blocks out of a block cache too small to hold them beside the data
        blocks (baseline.CACHE_INDEX_MIN)."""
        def estimate():
            return self.memory({s.name: s.value for s in rec.settings}, catalog=view.catalog,
                               files_in_memory=rec.facts.data_in_memory)

        self._fit(rec, view, budget_bytes, estimate)
        small_cache_index_off(rec, view)

    def _fit(self, rec: Any, view: Any, budget_bytes: int, estimate) -> None:
        est = estimate()
        if est.total_bytes <= budget_bytes:
            return
        cache = next(p.bytes for p in est.parts if p.name == "block_cache")
        rest = est.total_bytes - cache
        new = max(8 * MB, (budget_bytes - rest) // MB * MB)
        if new < cache:
            put_setting(rec, view, "block_cache", Bytes(new),
                 f"lowered from {human_bytes(cache)} so the worst case fits the "
                 f"{human_bytes(budget_bytes)} budget")
        est = estimate()
        if est.total_bytes > budget_bytes:
            s = rec.setting("write_buffer_size")
            wbs = int(s.value) if s is not None else 64 * MB
            put_setting(rec, view, "max_write_buffer_number", 2,
                 "two memtables: the smallest RocksDB allows, to fit the budget")
            put_setting(rec, view, "write_buffer_size", Bytes(max(4 * MB, wbs // 4 // MB * MB)),
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
        return db_bench_version(path) if path is not None else "unknown"

    def validate_by_starting(self, config_text: str, workdir: str | Path, *,
                             binary: Any = None) -> None:
        """Open a scratch database with the OPTIONS file (db_bench, 100 keys written and
        read); UsageError with RocksDB's reason when it refuses."""
        parse_options(config_text, "OPTIONS", catalog=self.catalog())  # our own checks first
        binary = binary or self.find_binary()
        validate_options(binary.path, config_text, workdir)

    def workload(self, name: str, **options: Any) -> Any:
        if name not in MIXES:
            raise UsageError(f"workload {name} does not run on RocksDB",
                             hint=f"rocksdb runs: {', '.join(MIXES)}")
        return RocksYcsb(name, **options)

    def evaluator(self, request: EvalRequest):
        r = request
        if r.wal_dir is not None and r.data_dir is not None \
                and Path(r.wal_dir) != Path(r.data_dir):
            raise UsageError("RocksDB keeps its WAL with the data here: wal_dir is not an "
                             "OPTIONS-file option; leave --wal-dir out")
        workload = r.workload
        if not hasattr(workload, "mix"):
            workload = self.workload(getattr(workload, "name", str(workload)))
        return RocksDBEvaluator(self, r.binary, workload, scale=r.scale, clients=r.clients,
                                duration=r.duration, warmup=r.warmup, data_dir=r.data_dir,
                                workdir=r.workdir, catalog=r.catalog, cgroup=r.cgroup)


def _cpp_bool(text: str) -> str:
    """A rendered bool ("on", "true", "1") as the application's C++ spells it."""
    low = str(text).strip().lower()
    return {"on": "true", "1": "true", "yes": "true", "off": "false", "0": "false",
            "no": "false"}.get(low, low)


def scratch_dir(prefix: str = "pmem-advisor-rocksdb-") -> Path:
    """A private scratch directory (tests and one-off validation)."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


__all__ = ["EngineBinary", "RocksDBEngine"]
