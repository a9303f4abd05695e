"""Per-object placement across two storage tiers (issue 52): which tables, indexes, WAL and
temporary files go on the fast tier, from the server's own statistics and the measured media.

Steps (``plan``):
1. Counters per object: PostgreSQL's pg_statio_user_tables (heap + TOAST + TOAST index blocks
   read and hit), pg_statio_user_indexes, pg_stat_user_tables (tuple changes), sizes from
   pg_table_size / pg_relation_size, tablespaces from pg_tablespace; the WAL (bytes written,
   from the LSN) and temporary files (pg_stat_database.temp_bytes). With ``interval`` two
   snapshots that far apart and their difference (the current load); without, the counters
   since the last statistics reset (the server's lifetime), said in the notes.
2. The media: the medium probe (probes/medium.py, O_DIRECT random 4 KiB reads at depth 1 and
   writes at depth N) on the fast and the slow path. A RAM filesystem refuses O_DIRECT; there
   the same reads are timed through the page cache, which *is* the medium on tmpfs.
3. The choice: a 0/1 knapsack with the fast tier's capacity, each object worth its expected
   saved I/O time: blocks read that missed shared_buffers x (slow - fast read latency) plus
   blocks written x (slow - fast write latency). ``solve`` is exact (dynamic programming over
   the capacity scaled to at most ``DP_UNITS`` units, sizes rounded *up* so the plan always
   fits) when n x units stays under ``DP_CELLS``, else greedy by saving per byte with the
   standard best-single-item fix (at least half the optimum).

What the counters are and are not: a PostgreSQL "block read" is a miss in shared_buffers, which
the OS page cache may still serve; it is the upper bound of what the medium saw. Writes are
estimated from tuple changes (a change dirties a page), capped at one write of every page per
checkpoint, since a page dirtied twice between checkpoints is written once.
"""

from __future__ import annotations

import os
import re
import statistics
import time
from dataclasses import asdict, dataclass, field

from pmem_advisor.errors import EnvironmentProblem, UsageError

BLOCK = 8192  # PostgreSQL's block: the unit of its statio counters
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

    name: str  # schema.relation, or "WAL" / "temp files"
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


# -- PostgreSQL counters ----------------------------------------------------------------------
_PG_DEFAULT_SPC = ("(SELECT spcname FROM pg_tablespace WHERE oid = (SELECT dattablespace "
                   "FROM pg_database WHERE datname = current_database()))")
_PG_OBJECTS = f"""
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), 'table', pg_table_size(c.oid),
       coalesce(t.spcname, {_PG_DEFAULT_SPC}),
       coalesce(s.heap_blks_read, 0) + coalesce(s.toast_blks_read, 0)
         + coalesce(s.tidx_blks_read, 0),
       coalesce(s.heap_blks_hit, 0) + coalesce(s.toast_blks_hit, 0)
         + coalesce(s.tidx_blks_hit, 0),
       u.n_tup_ins + u.n_tup_upd + u.n_tup_del
FROM pg_statio_user_tables s JOIN pg_stat_user_tables u USING (relid)
JOIN pg_class c ON c.oid = s.relid JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace
UNION ALL
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), 'index',
       pg_relation_size(c.oid), coalesce(t.spcname, {_PG_DEFAULT_SPC}),
       coalesce(i.idx_blks_read, 0), coalesce(i.idx_blks_hit, 0),
       u.n_tup_ins + u.n_tup_upd - u.n_tup_hot_upd
FROM pg_statio_user_indexes i JOIN pg_stat_user_tables u ON u.relid = i.relid
JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace
"""


def pg_snapshot(conn) -> dict:
    """Every counter the plan needs, read in one go (one transaction: one consistent view)."""
    version = int(conn.execute("SHOW server_version_num").fetchone()[0])
    rows = conn.execute(_PG_OBJECTS).fetchall()
    wal_lsn, temp_files, temp_bytes, max_wal, reset = conn.execute(
        "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0'), d.temp_files, d.temp_bytes,"
        " pg_size_bytes(current_setting('max_wal_size')), extract(epoch FROM now() -"
        " d.stats_reset) FROM pg_stat_database d WHERE d.datname = current_database()"
    ).fetchone()
    ckpt = ("SELECT num_timed + num_requested FROM pg_stat_checkpointer" if version >= 170000
            else "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")
    checkpoints = conn.execute(ckpt).fetchone()[0]
    return {"at": time.time(), "objects": [list(r) for r in rows],
            "wal_bytes": float(wal_lsn), "temp_files": float(temp_files or 0),
            "temp_bytes": float(temp_bytes or 0), "max_wal_size": int(max_wal),
            "checkpoints": float(checkpoints or 0),
            "stats_age_s": float(reset) if reset is not None else None}


def pg_objects(before: dict | None, after: dict) -> list[Obj]:
    """The candidates from one snapshot (lifetime) or the difference of two (the window)."""
    old = {(r[0], r[1]): r for r in (before or {}).get("objects", [])}
    zero = [None, None, 0, None, 0, 0, 0]
    ckpts = after["checkpoints"] - (before["checkpoints"] if before else 0)
    out = []
    for r in after["objects"]:
        o = old.get((r[0], r[1]), zero) if before else zero
        size = int(r[2])
        changes = max(0.0, float(r[6]) - float(o[6]))
        # a page dirtied again before the next checkpoint is written once
        writes = min(changes, (size / BLOCK) * (ckpts + 1))
        out.append(Obj(r[0], r[1], size, r[3], reads=max(0.0, float(r[4]) - float(o[4])),
                       hits=max(0.0, float(r[5]) - float(o[5])), writes=writes))
    wal = after["wal_bytes"] - (before["wal_bytes"] if before else 0)
    out.append(Obj("WAL", "wal", after["max_wal_size"], "pg_wal", writes=wal / BLOCK,
                   movable=False))
    files = after["temp_files"] - (before["temp_files"] if before else 0)
    tbytes = after["temp_bytes"] - (before["temp_bytes"] if before else 0)
    if files > 0 and tbytes > 0:
        # temp files are written once and read back once; the mean file is what must fit
        out.append(Obj("temp files", "temp", int(tbytes / files), "temp_tablespaces",
                       reads=tbytes / BLOCK, writes=tbytes / BLOCK))
    return out


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
    (PostgreSQL's CREATE TABLESPACE demands its owner); one-line UsageError otherwise."""
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
        raise UsageError(f"--fast {path} is not empty: CREATE TABLESPACE needs an empty "
                         "directory (give a new subdirectory)")


# -- the plan ---------------------------------------------------------------------------------
@dataclass
class Plan:
    objects: list[Obj]
    fast: Tier
    slow: Tier
    window: str  # "interval 30 s" or "lifetime (...)"
    method: str
    tablespace: str
    existing_tablespace: str | None  # a tablespace already at the fast path
    notes: list[str] = field(default_factory=list)
    unsafe: bool = False

    @property
    def fast_share(self) -> float:
        total = sum(o.io for o in self.objects)
        return sum(o.io for o in self.objects if o.on_fast) / total if total else 0.0

    def as_dict(self) -> dict:
        return {"window": self.window, "method": self.method, "tablespace": self.tablespace,
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


def plan(dsn: str, fast_arg: str, *, slow_path: str | None = None, interval: float | None = None,
         allow_unsafe: bool = False, tablespace: str = DEFAULT_TABLESPACE,
         sleep=time.sleep) -> Plan:
    """Read the server, measure both tiers and choose; raises one-line errors for bad input."""
    import psycopg

    from pmem_advisor.connection import parse_dsn, redact_dsn, scrub
    from pmem_advisor.instances.live import read_server

    parse_dsn(dsn)
    fast_path, size = parse_fast(fast_arg)
    fast_path = os.path.abspath(fast_path)
    server = read_server(dsn, "postgres")
    try:
        with psycopg.connect(dsn, connect_timeout=5, autocommit=True) as conn:
            existing = conn.execute("SELECT spcname FROM pg_tablespace WHERE "
                                    "pg_tablespace_location(oid) = %s", (fast_path,)).fetchone()
            # before the window: a bad path must not cost the user the interval first
            server_can_write(fast_path, server["pid"],
                             tablespace=existing[0] if existing else None)
            first = pg_snapshot(conn)
            if interval:
                sleep(interval)
                second = pg_snapshot(conn)
    except psycopg.Error as e:
        raise EnvironmentProblem(f"cannot read the statistics at {redact_dsn(dsn)}: "
                                 f"{scrub(str(e).strip().splitlines()[0], dsn)}") from None
    notes = []
    if interval:
        objects, window = pg_objects(first, second), f"interval {interval:g} s"
    else:
        age = first["stats_age_s"]
        objects = pg_objects(None, first)
        window = ("lifetime counters" + (f" (since the statistics reset {age / 3600:.1f} h ago)"
                                          if age else " (since the server's statistics began)"))
        notes.append("counters since the last reset, not the current load: give --interval "
                     "SECONDS to plan on what the server does now")
    if not any(o.io for o in objects):
        raise NoStatistics(f"no statistics to place by: every read and write counter is zero "
                           f"over the {window} (fresh server, reset counters or no load)",
                           hint="run the workload, then place with --interval SECONDS")
    smallest = min(o.size for o in objects if o.io)
    fast = measure_tier(fast_path, size)
    if fast.capacity is not None and fast.capacity < smallest:
        raise UsageError(f"the fast tier's {fast.capacity} bytes hold no object: the smallest "
                         f"with I/O takes {smallest} bytes")
    unsafe = False
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
    method = choose(objects, fast, slow)
    notes.append("exact: dynamic programming over the capacity in "
                 f"{DP_UNITS} units, sizes rounded up" if method == "exact" else
                 "greedy by saving per byte with the best-single-item fix (>= 1/2 optimum)")
    notes.append("block reads are misses in shared_buffers (the OS cache may have served "
                 "some); table and index writes are estimated from tuple changes")
    return Plan(objects, fast, slow, window, method, tablespace,
                existing[0] if existing else None, notes, unsafe)


# -- SQL --------------------------------------------------------------------------------------
def _duration(size: int, p: Plan) -> str:
    s = size / min(p.fast.bandwidth, p.slow.bandwidth)
    return f"~{s:.2g} s" if s < 120 else f"~{s / 60:.1f} min"


def statements(p: Plan) -> list[tuple[str, str]]:
    """(comment, statement) pairs; a statement of "" is advice only (the WAL)."""
    spc = p.existing_tablespace or p.tablespace
    out: list[tuple[str, str]] = []
    moves = [o for o in p.objects if o.movable and o.kind in ("table", "index")
             and (o.on_fast != (o.tablespace == spc))]
    temp = next((o for o in p.objects if o.kind == "temp" and o.on_fast), None)
    if p.existing_tablespace is None and (any(o.on_fast for o in moves) or temp):
        out.append(("the fast tier as a tablespace (the directory must be empty and owned by "
                    "the server's user)",
                    f"CREATE TABLESPACE {_ident(spc)} LOCATION {_literal(p.fast.path)}"))
    for o in moves:
        dest = spc if o.on_fast else "pg_default"
        out.append((f"lock: ACCESS EXCLUSIVE on {o.name} (reads and writes wait) for "
                    f"{_duration(o.size, p)} ({o.size} bytes at the measured "
                    f"{min(p.fast.bandwidth, p.slow.bandwidth) / 1e6:.0f} MB/s); pg_repack "
                    "--tablespace moves it holding the lock only briefly",
                    f"ALTER {o.kind.upper()} {o.name} SET TABLESPACE {_ident(dest)}"))
    if temp:
        out.append(("temporary files on the fast tier (no lock; new sessions)",
                    f"ALTER SYSTEM SET temp_tablespaces = {_literal(spc)}"))
        out.append(("", "SELECT pg_reload_conf()"))
    wal = next((o for o in p.objects if o.kind == "wal" and o.on_fast), None)
    if wal:
        out.append(("the WAL moves with the server stopped, not by SQL: stop it, move pg_wal "
                    "to the fast tier and leave a symlink (initdb --waldir does it at init)", ""))
    return out


def render_sql(p: Plan) -> str:
    lines = [f"-- pmem-advisor place: {p.window}; {p.fast_share:.0%} of I/O expected on "
             f"{p.fast.path}", "-- backups and replicas: a tablespace is a path on every "
             "standby too (pg_basebackup maps it with --tablespace-mapping)"]
    lines += [f"-- {n}" for n in p.notes if n.startswith("UNSAFE")]
    for comment, stmt in statements(p):
        if comment:
            lines.append(f"-- {comment}")
        if stmt:
            lines.append(stmt + ";")
    return "\n".join(lines) + "\n"


def apply(dsn: str, p: Plan) -> list[str]:
    """Run the plan's statements one by one, each waiting at most LOCK_TIMEOUT for its lock
    (the server's own locking: a busy table makes it fail, it never blocks the load behind a
    queued ACCESS EXCLUSIVE). Returns the statements run; a failure is one line, exit 3."""
    import psycopg

    from pmem_advisor.connection import scrub

    done = []
    with psycopg.connect(dsn, connect_timeout=5, autocommit=True) as conn:
        conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        for _comment, stmt in statements(p):
            if not stmt:
                continue
            try:
                conn.execute(stmt)
            except psycopg.Error as e:
                raise EnvironmentProblem(f"{stmt} failed after {len(done)} statements: "
                                         f"{scrub(str(e).strip().splitlines()[0], dsn)}"
                                         ) from None
            done.append(stmt)
    return done


def _ident(name: str) -> str:
    return name if re.fullmatch(r"[a-z_][a-z0-9_]*", name) else '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
