"""MySQL's and MariaDB's worst-case memory and its fit into the RAM budget (``Engine.memory``
and ``Engine.fit_memory``; the estimate's shape and the budget share are rules/memory.py's).

The worst case: global buffers + per-connection buffers x max_connections. The assumption that
is a choice, not a manual fact, is a module constant:

- ``JOIN_BUFFERS``: MySQL allocates one join buffer per table joined without an index; one per
  query is the common case the manual's examples size for.

Not counted (small or not bounded by a knob): net buffers (grow to max_allowed_packet), the
table cache and the performance_schema. The output says so in ``assumptions``.

The fit: the per-connection buffers (sort, join, read, read_rnd, in-memory temporary tables)
are scaled down together to the server's defaults; then the buffer pool gives, down to one
128 MB chunk; only then the buffers go below their defaults, at most to a quarter.
Per-session buffers below the server's defaults spill ordinary sorts and joins to disk, while
a smaller pool only caches less: the pool gives first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.knobs import units
from pmem_advisor.knobs.version import parse_version
from pmem_advisor.rules.fit import estimate, put_setting
from pmem_advisor.rules.memory import (
    GB,
    KB,
    MB,
    KnobReader,
    MemoryEstimate,
    MemoryPart,
    gib,
)
from pmem_advisor.rules.model import Bytes
from pmem_advisor.rules.result import Recommendation

ENGINE = "mysql"
JOIN_BUFFERS = 1  # one join buffer per query (one table joined without an index)

# Defaults of knobs the catalogs do not list, from the servers' manuals (bytes).
# Version differences are resolved in _fallback_default.
FALLBACK = {
    "mysql": {"key_buffer_size": 8 * MB, "thread_stack": 1 * MB, "binlog_cache_size": 32 * KB,
              "temptable_max_ram": 1 * GB},
    "mariadb": {"key_buffer_size": 128 * MB, "thread_stack": 299008,
                "binlog_cache_size": 32 * KB, "aria_pagecache_buffer_size": 128 * MB,
                "query_cache_size": 1 * MB},
}

ASSUMPTIONS = (f"each connection runs one query with one sort, {JOIN_BUFFERS} join buffer, "
               "both read buffers and one in-memory temporary table at once",
               "not counted: net buffers (up to max_allowed_packet), table cache, "
               "performance_schema")

# Per-connection buffers we may shrink, and the part of the estimate each one feeds.
MY_SCALABLE = {"sort_buffer_size": "sort_buffer_size", "join_buffer_size": "join_buffer_size",
               "read_buffer_size": "read_buffer_size",
               "read_rnd_buffer_size": "read_rnd_buffer_size",
               "tmp_table_size": "tmp tables", "max_heap_table_size": "tmp tables"}
MIN_SCALE = 0.25  # below a quarter of the defaults queries spill to disk for ordinary sorts
POOL_CHUNK = 128 * MB  # InnoDB rounds the pool to chunk x instances; 128 MB is the default chunk


def pool_instances(pool: int, *, version: str | None, chunk: int, cpus: int | None,
                   instances: int | None = None) -> list[int]:
    """The buffer pool instance counts MySQL may run ``pool`` with (one when it is known).
    Under 1 GiB the server uses one instance whatever is set ("Adjusting
    innodb_buffer_pool_instances from 8 to 1 since innodb_buffer_pool_size is less than 1024
    MiB"). Above it, a set count is used; else 8 before 8.4, and from 8.4 the smaller of half
    the pool's chunks and a quarter of the logical CPUs, within 1-64 (the 8.4 manual's
    innodb_buffer_pool_instances). With the CPUs unknown every count up to half the chunks is
    possible: the worst case takes the largest pool any of them runs."""
    if pool < GB or (pool == GB and _at_least(version, (8, 4))):
        return [1]
    if instances:
        return [instances]
    if not _at_least(version, (8, 4)):
        return [8]
    hint = max(1, min(64, pool // chunk // 2))
    if cpus:
        return [max(1, min(hint, cpus // 4))]
    return list(range(1, hint + 1))


def running_pool(pool: int, *, flavour: str, version: str | None, chunk: int = POOL_CHUNK,
                 cpus: int | None = None, instances: int | None = None) -> int:
    """The buffer pool the server runs for a set ``pool`` (its worst case over the instance
    counts it may use). MySQL: "Buffer pool size must always be equal to or a multiple of
    innodb_buffer_pool_chunk_size * innodb_buffer_pool_instances", adjusted up otherwise (8.0
    and 8.4 manuals, "Configuring InnoDB Buffer Pool Size"), the chunk truncated to pool /
    instances when their product is larger than the pool: a 1.5 GB pool with 8.0's default 8
    instances of 128 MB chunks runs 2 GB. MariaDB 10.11 and 11.4 read
    innodb_buffer_pool_chunk_size as a "Deprecated parameter with no effect" (their
    SYSTEM_VARIABLES, knobs/data/generated) and run any whole MiB: 10.11.19 here read back SET
    GLOBAL 471 MiB as 471 MiB, and truncated 493,000,000 bytes to 470 MiB: never more."""
    if flavour == "mariadb" or pool <= 0:
        return pool
    out = pool
    for n in pool_instances(pool, version=version, chunk=chunk, cpus=cpus,
                            instances=instances):
        unit = min(chunk, pool // n) * n
        if unit > 0:
            out = max(out, -(-pool // unit) * unit)
    return out


def largest_running_as_set(allowed: int, *, flavour: str, version: str | None,
                           chunk: int = POOL_CHUNK, cpus: int | None = None,
                           instances: int | None = None) -> int:
    """The largest pool of at most ``allowed`` bytes that the server runs as set (not rounded
    up), at least one chunk: whole MiB on MariaDB; on MySQL whole chunks, and whole chunk x
    instances above 1 GiB (whole GiB with 8.0's 8 instances)."""
    if flavour == "mariadb":
        return max(MB, allowed // MB * MB)
    pool = max(chunk, allowed // chunk * chunk)
    while pool > chunk and running_pool(pool, flavour=flavour, version=version, chunk=chunk,
                                        cpus=cpus, instances=instances) != pool:
        pool -= chunk
    return pool


def _at_least(version: str | None, want: tuple[int, int]) -> bool:
    """Unknown versions are taken as the newest (the catalogs' default)."""
    return version is None or parse_version(version, pad=True) >= want


# ------------------------------------------------------------------ the estimate
def mysql_worst_case(settings: Mapping[str, Any], *, flavour: str, version: str | None,
                     catalog, host_memory_bytes: int | None = None,
                     host_cpus: int | None = None) -> MemoryEstimate:
    """Global buffers + per-connection buffers x max_connections (see ASSUMPTIONS); knobs not
    given take the catalog's default for that flavour/version. ``host_memory_bytes`` sizes
    MySQL 8.4's temptable_max_ram default (3% of RAM, 1-4 GB); ``host_cpus`` its buffer pool
    instances, and so the size the pool is rounded up to (``running_pool``)."""
    settings = dict(settings)
    if (flavour == "mysql" and host_memory_bytes and "temptable_max_ram" not in settings
            and (version is None or parse_version(version, pad=True) >= (8, 4))):
        settings["temptable_max_ram"] = min(max(host_memory_bytes * 3 // 100, 1 * GB), 4 * GB)
    r = KnobReader(flavour, version, settings, catalog,
                   fallback=lambda name: _fallback_default(flavour, version, name),
                   parse_loose=_parse_loose, key=lambda k: k.lower().replace("-", "_"))
    parts = _parts(r, host_cpus)
    return MemoryEstimate.from_parts(ENGINE, parts, int(r.value("max_connections")), ASSUMPTIONS)


def _fallback_default(flavour: str, version: str | None, name: str) -> float:
    v = parse_version(version, pad=True) if version else (99,)
    if flavour == "mysql" and name == "temptable_max_ram" and v >= (8, 4):
        return 1 * GB  # 8.4: 3% of RAM clamped to 1-4 GB (mysql_worst_case's host_memory_bytes)
    table = FALLBACK.get("mariadb" if flavour == "mariadb" else ENGINE, {})
    if name in table:
        return float(table[name])
    return 0.0


def _parse_loose(text: str) -> float | None:
    """Text for a knob the catalog lacks, with MySQL's suffixes (sizes in bytes)."""
    return units.my_number(text)


def _parts(r: KnobReader, host_cpus: int | None = None) -> list[MemoryPart]:
    mariadb = r.flavour == "mariadb"
    set_pool = int(r.value("innodb_buffer_pool_size"))
    chunk = POOL_CHUNK
    if not mariadb and r.has("innodb_buffer_pool_chunk_size"):
        chunk = int(r.value("innodb_buffer_pool_chunk_size")) or POOL_CHUNK
    pool = running_pool(set_pool, flavour=r.flavour, version=r.version, chunk=chunk,
                        cpus=host_cpus, instances=_set_instances(r.settings))
    pool_why = "InnoDB buffer pool, allocated at start"
    if pool != set_pool:
        pool_why += (f"; {gib(set_pool)} set, run as {gib(pool)}: MySQL rounds the pool up "
                     f"to a multiple of innodb_buffer_pool_chunk_size x instances")
    parts = [
        MemoryPart("innodb_buffer_pool_size", pool, False, pool_why,
                   set_bytes=set_pool if set_pool != pool else None),
        MemoryPart("buffer pool control structures", pool // 10, False,
                   "MariaDB KB (InnoDB buffer pool): about 10% more than the pool for control "
                   "structures and buffers"),
        MemoryPart("innodb_log_buffer_size", int(r.value("innodb_log_buffer_size")), False,
                   "redo log buffer"),
        MemoryPart("key_buffer_size", int(r.value("key_buffer_size")), False,
                   "MyISAM index cache (system tables, temporary MyISAM tables)"),
    ]
    if mariadb:
        parts += [
            MemoryPart("aria_pagecache_buffer_size", int(r.value("aria_pagecache_buffer_size")),
                       False, "Aria page cache: MariaDB's internal on-disk temporary tables"),
            MemoryPart("query_cache_size", int(r.value("query_cache_size")), False,
                       "query cache (allocated even when query_cache_type=OFF)"),
            MemoryPart("tmp tables", int(min(r.value("tmp_table_size"),
                                             r.value("max_heap_table_size"))), True,
                       "one in-memory temporary table: min(tmp_table_size, max_heap_table_size)"),
        ]
    else:
        parts.append(MemoryPart("temptable_max_ram", int(r.value("temptable_max_ram")), False,
                                "TempTable engine: all in-memory internal temporary tables "
                                "together (8.0+)", static=False))
    parts += [
        MemoryPart("sort_buffer_size", int(r.value("sort_buffer_size")), True, "one sort"),
        MemoryPart("join_buffer_size", JOIN_BUFFERS * int(r.value("join_buffer_size")), True,
                   f"{JOIN_BUFFERS} join buffer (one per table joined without an index)"),
        MemoryPart("read_buffer_size", int(r.value("read_buffer_size")), True,
                   "sequential scan buffer"),
        MemoryPart("read_rnd_buffer_size", int(r.value("read_rnd_buffer_size")), True,
                   "sorted-order row reads (MRR)"),
        MemoryPart("thread_stack", int(r.value("thread_stack")), True, "each connection's "
                   "thread stack"),
        MemoryPart("binlog_cache_size", int(r.value("binlog_cache_size")), True,
                   "transaction's binary log cache"),
    ]
    return parts


def _set_instances(settings: Mapping[str, Any]) -> int | None:
    """innodb_buffer_pool_instances as set (None: the server's default decides)."""
    raw = {str(k).lower().replace("-", "_"): v
           for k, v in settings.items()}.get("innodb_buffer_pool_instances")
    if raw is None:
        return None
    try:
        return max(1, min(64, int(str(raw).strip().strip("'\""))))
    except ValueError:
        raise UsageError(f"innodb_buffer_pool_instances: {raw!r} is not a number") from None


# ------------------------------------------------------------------ the fit
def fit_mysql(rec: Recommendation, view, budget: int) -> None:
    """MySQL/MariaDB: the per-connection buffers down to the server's defaults, then the pool,
    then the buffers below their defaults."""
    est = estimate(rec, view)
    if est.total_bytes > budget:
        _scale_mysql_buffers(rec, view, est, budget, at_least_default=True)
        est = estimate(rec, view)
    if est.total_bytes > budget:
        _shrink_pool(rec, view, est, budget)
        est = estimate(rec, view)
    if est.total_bytes > budget:
        _scale_mysql_buffers(rec, view, est, budget, at_least_default=False)


BUFFER_BLOCK = 16 * KB


def _scale_mysql_buffers(rec: Recommendation, view, est: MemoryEstimate, budget: int, *,
                         at_least_default: bool) -> None:
    """Scale the per-connection buffers down together; ``at_least_default``: none below the
    server's default (the pool gives next), else down to MIN_SCALE of each one's value."""
    parts = {p.name: p.bytes for p in est.parts if p.per_connection}
    scalable = sum(parts.get(part, 0) for part in set(MY_SCALABLE.values()))
    fixed = est.per_connection_bytes - scalable
    allowed = (budget - est.global_bytes) // max(1, est.connections)
    if scalable <= 0:
        return
    factor = max(MIN_SCALE, min(1.0, (allowed - fixed) / scalable))
    if factor >= 1.0:
        return
    for knob, part in MY_SCALABLE.items():
        base = parts.get(part)
        if base is None:
            continue
        if knob == "max_heap_table_size" and part not in parts:
            continue
        # a whole number of 16 KiB: the server rounds these buffers to its block size (MariaDB
        # keeps tmp_table_size/max_heap_table_size in 16 KiB steps, read buffers in 4 KiB);
        # a value it would round is not the value it runs with (seen applying the SQL output)
        new = max(BUFFER_BLOCK, int(base * factor) // BUFFER_BLOCK * BUFFER_BLOCK)
        default = _default_bytes(view, knob)
        why = "with the other per-connection buffers"
        if at_least_default and default is not None:
            if base <= default:
                continue  # at or below the server's default already: the pool gives first
            if new < default:
                new, why = default, "to the server's default (the buffer pool gives the rest)"
        elif default is not None and new < default:
            why += (", below the server's default: the buffer pool is at its 128 MB floor; "
                    "pool connections (a thread pool or proxy) to give sorts their memory")
        put_setting(rec, view, knob, Bytes(new),
             f"scaled to {new / base:.0%} {why} so {est.connections} connections fit the "
             f"{gib(budget)} budget (worst case was {gib(est.total_bytes)})")


def _default_bytes(view, name: str) -> int | None:
    """The server's default of a size knob in bytes (None: unknown to the catalog)."""
    try:
        knob = view.knob(name)
    except UnknownKnobError:
        return None
    return units.size_bytes(knob, getattr(knob, "default", None))


def _shrink_pool(rec: Recommendation, view, est: MemoryEstimate, budget: int) -> None:
    pool_part = next(p.bytes for p in est.parts if p.name == "innodb_buffer_pool_size")
    overhead = 1.1  # the pool plus InnoDB's ~10% control structures (see _parts)
    rest = est.total_bytes - int(pool_part * overhead)
    f = rec.facts
    instances = _set_instances({s.name: s.value for s in rec.settings})
    new = largest_running_as_set(int((budget - rest) / overhead),
                                 flavour="mariadb" if f.mariadb else "mysql", version=f.version,
                                 cpus=f.cpus, instances=instances)
    new = max(POOL_CHUNK, new)
    put_setting(rec, view, "innodb_buffer_pool_size", Bytes(new),
         f"lowered from {gib(pool_part)} so the worst case ({gib(est.total_bytes)} with "
         f"{est.connections} connections) fits the {gib(budget)} budget")
    _redo_follows_pool(rec, view, new)


# The redo knobs, as the baseline and PM031 set them (one file per set of ib_logfiles, or the
# 8.0.30+ capacity).
REDO_KNOBS = ("innodb_redo_log_capacity", "innodb_log_file_size")


def _redo_follows_pool(rec: Recommendation, view, pool: int) -> None:
    """The redo was sized for the pool the budget could not hold (PM031: as large as the pool;
    the dedicated-server baseline: by CPUs or RAM, assuming the pool it would get). A redo
    larger than the pool it protects buys few checkpoints and lengthens crash recovery (CK019
    warns on it), so it shrinks with the pool, never below the server's own default."""
    for name in REDO_KNOBS:
        s = rec.setting(name)
        if s is None:
            continue
        have = units.size_bytes(view.knob(name), s.value)
        files = 1
        if name == "innodb_log_file_size" and not rec.facts.mariadb:
            g = rec.setting("innodb_log_files_in_group")
            files = int(g.value) if g is not None else 2
        if have is None or have * files <= pool:
            continue
        floor = _default_bytes(view, name) or 0
        want = max(floor, pool // files // (1 << 20) * (1 << 20))
        if want < have:
            put_setting(rec, view, name, Bytes(want),
                        f"lowered with the buffer pool to {gib(pool)}: a redo larger than the "
                        "pool it protects buys few checkpoints and lengthens crash recovery")
