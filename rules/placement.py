"""Per-object placement across two storage tiers (issue 52): which tables, indexes, the WAL or
redo log and temporary files go on the fast tier, from the server's own statistics and the
measured media. This module is the engine-neutral part, one for every engine: the candidates
(``Obj``), the solver, the tiers and their medium probe, the checks on the fast path, the plan
and its refusals. What each engine counts and the SQL it takes live beside it
(rules/placement_postgres.py, rules/placement_mariadb.py).

Steps (``plan``):
1. Counters per object, read by the engine's module: one snapshot (the server's lifetime
   counters) or, with ``interval``, two snapshots that far apart and their difference (the
   current load).
2. The media: the medium probe (probes/medium.py, O_DIRECT random 4 KiB reads at depth 1 and
   writes at depth N) on the fast and the slow path. A RAM filesystem refuses O_DIRECT; there
   the same reads are timed through the page cache, which *is* the medium on tmpfs.
3. The choice: a 0/1 knapsack with the fast tier's capacity, each object worth its expected
   saved I/O time: reads past the server's cache x (slow - fast read latency) plus writes x
   (slow - fast write latency). ``solve`` is exact (dynamic programming over the capacity
   scaled to at most ``DP_UNITS`` units, sizes rounded *up* so the plan always fits) when
   n x units stays under ``DP_CELLS``, else greedy by saving per byte with the standard
   best-single-item fix (at least half the optimum).
"""

from __future__ import annotations

import os
import re
import statistics
import time
from dataclasses import asdict, dataclass, field

from pmem_advisor.errors import EnvironmentProblem, UsageError

DP_UNITS = 4096  # capacity buckets of the exact solver
DP_CELLS = 4_000_000  # n x units above this: greedy (a Python loop per cell)
DEFAULT_TABLESPACE = "pmem_fast"
LOCK_TIMEOUT = "10s"  # --apply waits this long for a lock, then gives up (never queues forever)
KINDS = ("table", "index", "wal", "temp")


class NoStatistics(EnvironmentProblem):
    """The server has counted nothing to place by (fresh server, reset counters, idle window)."""


@dataclass
class Obj:
    """One candidate: a table (heap + TOAST), an index, the WAL or the temporary files."""

    name: str  # schema.relation, or "WAL" / "redo log" / "temp files"
    kind: str  # table | index | wal | temp
    size: int  # bytes it takes on the tier
    tablespace: str  # where it is now
    reads: float = 0.0  # blocks read past the server's cache in the window
    hits: float = 0.0
    writes: float = 0.0  # blocks written (estimated for tables and indexes)
    saving_s: float = 0.0
    on_fast: bool = False  # the plan
    movable: bool = True  # by SQL (the WAL is moved with the server stopped)

    @property
    def io(self) -> float:
        return self.reads + self.writes


# -- the knapsack -----------------------------------------------------------------------------
def solve(sizes: list[int], values: list[float], capacity: int) -> tuple[list[int], str]:
    """The indices to take (sum of sizes <= capacity, value as high as the method allows) and
    the method's name: ``exact`` or ``greedy``."""
    items = [i for i, (s, v) in enumerate(zip(sizes, values, strict=True))
             if v > 0 and s <= capacity]
    if not items:
        return [], "exact"
    if sum(sizes[i] for i in items) <= capacity:
        return items, "exact"
    unit = max(1, -(-capacity // DP_UNITS))
    units = capacity // unit
    if len(items) * units <= DP_CELLS:
        return _dp(items, sizes, values, unit, units), "exact"
    return _greedy(items, sizes, values, capacity), "greedy"


def _dp(items, sizes, values, unit, units) -> list[int]:
    # best[c] = best value within c units; keep[k] marks the capacities where item k was taken
    best = [0.0] * (units + 1)
    keep = []
    for i in items:
        w = -(-sizes[i] // unit)  # rounded up: the scaled plan never overflows the real tier
        took = bytearray(units + 1)
        v = values[i]
        for c in range(units, w - 1, -1):
            cand = best[c - w] + v
            if cand > best[c]:
                best[c] = cand
                took[c] = 1
        keep.append((i, w, took))
    chosen, c = [], units
    for i, w, took in reversed(keep):
        if took[c]:
            chosen.append(i)
            c -= w
    return sorted(chosen)


def _greedy(items, sizes, values, capacity) -> list[int]:
    order = sorted(items, key=lambda i: values[i] / max(sizes[i], 1), reverse=True)
    chosen, used = [], 0
    for i in order:
        if used + sizes[i] <= capacity:
            chosen.append(i)
            used += sizes[i]
    single = max(items, key=lambda i: values[i])  # the fix: greedy alone can be arbitrarily bad
    if values[single] > sum(values[i] for i in chosen):
        return [single]
    return sorted(chosen)


# -- the tiers --------------------------------------------------------------------------------
@dataclass
class Tier:
    path: str
    capacity: int | None  # bytes the plan may use (fast tier only)
    read_lat_s: float
    write_lat_s: float
    bandwidth: float  # bytes/s, from the 4 KiB IOPS: a pessimistic bound for a sequential copy
    durable: bool
    medium: str
    method: str


def parse_fast(text: str) -> tuple[str, int | None]:
    """``PATH[:SIZE]`` with SIZE in bytes or with K/M/G/T (powers of 1024)."""
    m = re.fullmatch(r"(.+?)(?::(\d+(?:\.\d+)?)([KMGT]i?B?)?)?", text.strip(), re.IGNORECASE)
    if not m or not m.group(1):
        raise UsageError(f"--fast {text!r}: give PATH or PATH:SIZE (e.g. /mnt/pmem:200G)")
    if m.group(2) is None:
        return m.group(1), None
    mult = 1024 ** ("BKMGT".index(m.group(3)[0].upper()) if m.group(3) else 0)
    size = int(float(m.group(2)) * mult)
    if size <= 0:
        raise UsageError(f"--fast {text!r}: the size must be above zero")
    return m.group(1), size


def _medium_entry(path: str) -> dict:
    """The mount facts of a path, as probe and check read them (tmpfs, emulated PMEM)."""
    from pmem_advisor.probes.mounts import MediumResolver, read_mount_table
    from pmem_advisor.probes.reading import ProbeContext
    from pmem_advisor.probes.sysaccess import SysAccess

    ctx = ProbeContext(SysAccess())
    return MediumResolver(ctx, {}, read_mount_table(ctx)).path_facts(path)


def measure_tier(path: str, capacity: int | None = None) -> Tier:
    """The medium under ``path``, measured; capacity defaults to the filesystem's free space."""
    from pmem_advisor.probes import medium as probe

    entry = _medium_entry(path)
    durable = not (entry.get("medium") == "tmpfs" or entry.get("fstype") in ("tmpfs", "ramfs")
                   or entry.get("emulated_pmem"))
    try:
        m = probe.measure(path)
        depth = m.get("depth") or probe.DEPTH
        read_lat = m["read_lat_ms"] / 1e3
        # Little's law: depth I/Os in flight at write_iops per second
        write_lat = depth / m["write_iops"] if m.get("write_iops") else read_lat
        bw = min(m.get("read_iops") or 0, m.get("write_iops") or 0) * probe.BLOCK
        method = m["method"]
    except probe.MeasureError as e:
        if durable:
            raise EnvironmentProblem(f"cannot measure the medium under {path}: {e}") from None
        read_lat, write_lat, bw = _time_buffered(path)
        method = "buffered (tmpfs: the page cache is the medium)"
    if capacity is None:
        st = os.statvfs(path)
        capacity = st.f_bavail * st.f_frsize
    return Tier(path, capacity, read_lat, write_lat, max(bw, 1.0), durable,
                entry.get("medium") or "unknown", method)


def _time_buffered(path: str, size: int = 8 << 20, count: int = 2000
                   ) -> tuple[float, float, float]:
    """Median 4 KiB pread / pwrite time of a scratch file beside ``path`` (held directories,
    O_EXCL|O_NOFOLLOW: no name is reached twice)."""
    import random

    from pmem_advisor.fileio import make_temp_dir, open_dir, unlink_at
    from pmem_advisor.probes.medium import scratch_parent

    pfd = open_dir(scratch_parent(path))
    try:
        dfd, name = make_temp_dir(pfd, ".pmem-advisor-place-")
        try:
            fd = os.open("probe.dat", os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                         0o600, dir_fd=dfd)
            try:
                os.write(fd, os.urandom(size))
                blocks, buf = size // 4096, os.urandom(4096)
                reads, writes = [], []
                for _ in range(count):
                    off = random.randrange(blocks) * 4096
                    t = time.perf_counter_ns()
                    os.pread(fd, 4096, off)
                    reads.append(time.perf_counter_ns() - t)
                    t = time.perf_counter_ns()
                    os.pwrite(fd, buf, off)
                    writes.append(time.perf_counter_ns() - t)
            finally:
                os.close(fd)
                unlink_at(dfd, "probe.dat")
        finally:
            os.close(dfd)
            os.rmdir(name, dir_fd=pfd)
    finally:
        os.close(pfd)
    r, w = statistics.median(reads) / 1e9, statistics.median(writes) / 1e9
    return r, w, 4096 / max(r, w)


def server_can_write(path: str, pid: int | None, *, tablespace: str | None = None) -> None:
    """The fast path must be a directory on this host owned by the server's OS user
    (PostgreSQL's CREATE TABLESPACE demands its owner; InnoDB creates its files there) and
    empty unless ``tablespace`` says the server already keeps objects there; one-line
    UsageError otherwise."""
    if pid is None:
        raise UsageError("the server's process is not on this host (no pid file readable): "
                         "place needs the server local to check and measure the fast path")
    if not os.path.isdir(path):
        raise UsageError(f"--fast {path} is not a directory")
    uid = None
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("Uid:"):
                    uid = int(line.split()[1])
    except OSError:
        pass
    if uid is None:
        raise UsageError(f"cannot read the server's user (pid {pid})")
    st = os.stat(path)
    if st.st_uid != uid:
        from pmem_advisor.fileio import who

        raise UsageError(f"--fast {path} belongs to {who(st.st_uid)}, not to the server's user "
                         f"{who(uid)}: the server cannot make it a tablespace",
                         hint=f"chown {who(uid)} {path}")
    if tablespace is None and os.listdir(path):  # a tablespace there already: reused
        raise UsageError(f"--fast {path} is not empty: the fast tier must be an empty "
                         "directory (give a new subdirectory)")


# -- the plan ---------------------------------------------------------------------------------
@dataclass
class Plan:
    engine: str  # postgres | mariadb: whose module renders and applies the SQL
    objects: list[Obj]
    fast: Tier
    slow: Tier
    window: str  # "interval 30 s" or "lifetime (...)"
    method: str
    tablespace: str
    existing_tablespace: str | None  # a tablespace already at the fast path
    notes: list[str] = field(default_factory=list)
    unsafe: bool = False
    extra: dict = field(default_factory=dict)  # the engine's own (MariaDB: each table's DDL)

    @property
    def fast_share(self) -> float:
        total = sum(o.io for o in self.objects)
        return sum(o.io for o in self.objects if o.on_fast) / total if total else 0.0

    def as_dict(self) -> dict:
        return {"engine": self.engine, "window": self.window, "method": self.method,
                "tablespace": self.tablespace,
                "fast": asdict(self.fast), "slow": asdict(self.slow),
                "fast_share_of_io": round(self.fast_share, 4),
                "saving_s": round(sum(o.saving_s for o in self.objects if o.on_fast), 6),
                "objects": [asdict(o) | {"io": o.io} for o in self.objects],
                "notes": self.notes, "unsafe": self.unsafe}


def choose(objects: list[Obj], fast: Tier, slow: Tier) -> str:
    """Price every object and mark the plan's choice; returns the solver's method."""
    dr = slow.read_lat_s - fast.read_lat_s
    dw = slow.write_lat_s - fast.write_lat_s
    for o in objects:
        o.saving_s = o.reads * dr + o.writes * dw
    chosen, method = solve([o.size for o in objects], [o.saving_s for o in objects],
                           int(fast.capacity or 0))
    for i in chosen:
        objects[i].on_fast = True
    return method



@dataclass
class Reading:
    """What an engine's module read from the server for ``plan``."""

    objects: list[Obj]
    window: str
    notes: list[str]
    existing: str | None  # the server already keeps objects at the fast path (its name)
    tablespace: str
    counters: str  # what the counters are and are not, for the notes
    extra: dict = field(default_factory=dict)


def plan(mod, dsn: str, fast_arg: str, *, slow_path: str | None = None,
         interval: float | None = None, allow_unsafe: bool = False,
         tablespace: str = DEFAULT_TABLESPACE, sleep=time.sleep) -> Plan:
    """Read the server through ``mod`` (rules/placement_postgres.py or placement_mariadb.py:
    its ``NAME``, ``SERVER``, ``check_dsn`` and ``read``), measure both tiers and choose;
    raises one-line errors for bad input. The module renders and applies the plan."""
    from pmem_advisor.instances.live import read_server

    mod.check_dsn(dsn)
    fast_path, size = parse_fast(fast_arg)
    fast_path = os.path.abspath(fast_path)
    server = read_server(dsn, mod.SERVER)
    r = mod.read(dsn, server, fast_path, interval=interval, tablespace=tablespace, sleep=sleep)
    if not any(o.io for o in r.objects):
        raise NoStatistics(f"no statistics to place by: every read and write counter is zero "
                           f"over the {r.window} (fresh server, reset counters or no load)",
                           hint="run the workload, then place with --interval SECONDS")
    smallest = min(o.size for o in r.objects if o.io)
    fast = measure_tier(fast_path, size)
    if fast.capacity is not None and fast.capacity < smallest:
        raise UsageError(f"the fast tier's {fast.capacity} bytes hold no object: the smallest "
                         f"with I/O takes {smallest} bytes")
    notes, unsafe = list(r.notes), False
    if not fast.durable:
        if not allow_unsafe:
            raise UsageError(f"--fast {fast_path} is {fast.medium} (memory, lost at reboot): "
                             "refused for data, as check refuses it (CK003)",
                             hint="give durable storage, or --allow-unsafe on a test host")
        unsafe = True
        notes.append(f"UNSAFE: {fast_path} is {fast.medium}; every object placed there is lost "
                     "at power off or reboot (--allow-unsafe)")
    slow = measure_tier(slow_path or server["data_dir"])
    slow.capacity = None
    if slow.read_lat_s <= fast.read_lat_s:
        notes.append("the slow path measured no slower than the fast one: little to gain")
    method = choose(r.objects, fast, slow)
    notes.append("exact: dynamic programming over the capacity in "
                 f"{DP_UNITS} units, sizes rounded up" if method == "exact" else
                 "greedy by saving per byte with the best-single-item fix (>= 1/2 optimum)")
    notes.append(r.counters)
    return Plan(mod.NAME, r.objects, fast, slow, r.window, method, r.tablespace, r.existing,
                notes, unsafe, r.extra)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def sql_comment(text: str) -> str:
    """One ``--`` comment line of the emitted SQL. Object names come from the server and may
    hold a newline (a quoted identifier can): unescaped, the rest of such a name would be a
    statement of its own when the DBA pipes the file into psql or mariadb."""
    return "-- " + _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def duration(size: int, p: Plan) -> str:
    """How long copying ``size`` bytes between the tiers takes at the measured bandwidth."""
    s = size / min(p.fast.bandwidth, p.slow.bandwidth)
    return f"~{s:.2g} s" if s < 120 else f"~{s / 60:.1f} min"
