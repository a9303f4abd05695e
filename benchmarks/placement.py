"""The placement benchmark (issue 52): does ``place``'s plan beat placing by size or at random?

    python -m benchmarks.placement [--rounds 3] [--duration 10] [--out bench-out/placement.json]
    make bench-place

A managed PostgreSQL (its own unprivileged uid, temporary directories, nothing left after the
run) holds a schema with skewed access: small hot tables and large cold ones (``SCHEMA``), read
by weighted pgbench scripts of point selects (and a few updates), ~190 MB in all against a
16 MB shared_buffers. Two tablespaces are the tiers:

- **fast**: a directory on /dev/shm. tmpfs stands in for PMEM (memory speed, NOT durable):
  every output says so.
- **slow**: an ext4 file system on a loop device (``losetup --direct-io=on`` over a file in
  /tmp, so no second page cache sits under it), whose reads by the server are capped by a
  cgroup I/O limit (v1 ``blkio.throttle.read_iops_device``, v2 ``io.max riops``) at
  ``--slow-iops``. Only reads are capped: cgroup v1 does not attribute buffered writeback to
  a group, so writes go at the loop device's own speed (the workload is read-mostly).

The OS page cache would make the tiers equal (a read it serves never reaches the device), so
the server runs in a memory cgroup (instances/cgroup.py) whose limit is set, for every arm, to
what the server holds in memory other than file cache (its processes, shared_buffers and the
tmpfs pages of the fast tier, all charged to it) plus ``--cache-mb`` of page cache: every arm
gets the same page cache for the slow tier, and the slow tier's pages are evicted
(``evict_page_cache``, our files only) before each run.

Arms, each applied by ``ALTER TABLE|INDEX ... SET TABLESPACE`` (throttle lifted while moving):
all slow, all fast (the ceiling), and at 10 %, 25 % and 50 % of the database's size: the
advisor's plan (``rules.placement.plan`` on an ``--interval`` window under the load, the slow
tier measured as the server sees it: the probe runs inside the throttled group), a size-greedy
plan (largest object first while it fits: "put the big tables on the fast disk") and a random
plan (a seeded shuffle, first fit). Rounds are interleaved and rotated; each run is a warm-up
then a measured pgbench run; per arm the median TPS with a distribution-free interval (order
statistics, its exact coverage stated), its share of the all-fast median, and for the plan
the paired t-test on per-round log ratios against greedy and random at the same capacity
(``tuner.stats.compare_paired``).

Needs root (loop devices, mounts, cgroups). A run killed with SIGKILL can leave the loop
device mounted (``losetup -a`` shows the image under /tmp/pmem-advisor-place-slow-*) and an
empty blkio group ``pmem-advisor-place-<pid>`` (the memory group is reaped by the next run).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CAPACITIES = (10, 25, 50)  # percent of the database's size
ALPHA = 0.05
TMPFS_CAVEAT = ("fast tier = tmpfs on /dev/shm standing in for PMEM (memory speed, NOT "
                "durable); slow tier = loop-device ext4 with reads capped by a cgroup I/O limit")


@dataclass(frozen=True)
class Table:
    name: str
    rows: int
    weight: int  # pgbench script weight of its point select
    update_weight: int = 0  # pgbench script weight of its point update


# Small hot tables and large cold ones (the premise of the issue, and of TPC-C's warehouse /
# order_line): rows of ~236 bytes, ~34 to an 8 KiB page, ~4300 rows a MiB.
SCHEMA = (
    Table("t_hot1", 26_000, 30),
    Table("t_hot2", 52_000, 25, update_weight=10),
    Table("t_warm1", 86_000, 15),
    Table("t_warm2", 104_000, 10),
    Table("t_log", 69_000, 2),
    Table("t_cold1", 207_000, 5),
    Table("t_cold2", 276_000, 3),
)
FILLER = 200  # characters of each row's text column


@dataclass(frozen=True)
class Obj:
    """A movable object: a table (heap + TOAST) or an index, as rules.placement names it."""

    name: str
    kind: str  # table | index
    size: int


@dataclass
class Arm:
    name: str  # all-slow | all-fast | plan | greedy | random
    pct: int | None  # capacity in percent of the database's size
    capacity: int | None  # bytes
    fast: frozenset[str]  # objects on the fast tier
    runs: list[float | None] = field(default_factory=list)
    limits: list[int] = field(default_factory=list)  # the server's memory limit in each run

    @property
    def label(self) -> str:
        return self.name if self.pct is None else f"{self.name}@{self.pct}%"

    def fast_bytes(self, sizes: dict[str, int]) -> int:
        return sum(sizes[n] for n in self.fast)


# -- the pure parts ---------------------------------------------------------------------------
def greedy_by_size(objects: Sequence[Obj], capacity: int) -> frozenset[str]:
    """Largest first, each taken while it still fits (ties by name: reproducible)."""
    chosen, used = [], 0
    for o in sorted(objects, key=lambda o: (-o.size, o.name)):
        if used + o.size <= capacity:
            chosen.append(o.name)
            used += o.size
    return frozenset(chosen)


def random_pick(objects: Sequence[Obj], capacity: int, rng: random.Random) -> frozenset[str]:
    """A random order (``rng``), each object taken while it still fits."""
    order = sorted(objects, key=lambda o: o.name)
    rng.shuffle(order)
    chosen, used = [], 0
    for o in order:
        if used + o.size <= capacity:
            chosen.append(o.name)
            used += o.size
    return frozenset(chosen)


def capacities(objects: Sequence[Obj], pcts: Sequence[int] = CAPACITIES) -> dict[int, int]:
    total = sum(o.size for o in objects)
    return {p: total * p // 100 for p in pcts}


def build_arms(objects: Sequence[Obj], plans: dict[int, frozenset[str]], seed: int,
               pcts: Sequence[int] = CAPACITIES) -> list[Arm]:
    """All slow, all fast, then plan / greedy / random at each capacity. ``plans`` maps a
    percent to the objects the advisor put on the fast tier at that capacity."""
    caps = capacities(objects, pcts)
    names = {o.name for o in objects}
    for p, chosen in plans.items():
        if not chosen <= names:
            raise ValueError(f"plan at {p}% names objects not in the database: "
                             f"{sorted(chosen - names)}")
    rng = random.Random(seed)
    arms = [Arm("all-slow", None, None, frozenset()),
            Arm("all-fast", None, sum(o.size for o in objects), frozenset(names))]
    for p in pcts:
        cap = caps[p]
        arms.append(Arm("plan", p, cap, frozenset(plans[p])))
        arms.append(Arm("greedy", p, cap, greedy_by_size(objects, cap)))
        arms.append(Arm("random", p, cap, random_pick(objects, cap, rng)))
    return arms


def rotation(n_arms: int, rnd: int) -> list[int]:
    """Round ``rnd``'s order of the arms: the list rotated by the round (each arm changes
    position from round to round, so a slow drift of the machine hits every arm alike)."""
    k = rnd % n_arms if n_arms else 0
    return list(range(k, n_arms)) + list(range(k))


def median_ci(values: Sequence[float], confidence: float = 0.95) -> dict[str, Any]:
    """The median and a distribution-free interval from order statistics: the narrowest
    symmetric [x(k), x(n-k+1)] whose coverage (binomial, p = 1/2) reaches ``confidence``, or
    [min, max] with its coverage when no interval reaches it (n = 3: 75 %)."""
    xs = sorted(float(v) for v in values if v is not None)
    n = len(xs)
    if not n:
        return {"median": None, "low": None, "high": None, "coverage": None, "n": 0}

    def coverage(k: int) -> float:  # P(x(k) <= median <= x(n-k+1))
        return 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k)) / 2.0 ** n

    k = 1
    while k + 1 <= (n + 1) // 2 and coverage(k + 1) >= confidence:
        k += 1
    return {"median": statistics.median(xs), "low": xs[k - 1], "high": xs[n - k],
            "coverage": round(coverage(k), 4), "n": n}


def summarise(arms: Sequence[Arm], alpha: float = ALPHA) -> list[dict[str, Any]]:
    """One row per arm: median [interval], share of all-fast and of the gap all-slow to
    all-fast, and for the plan the paired test against greedy and random."""
    from pmem_advisor.tuner.stats import compare_paired

    by = {a.label: a for a in arms}
    fast = median_ci(by["all-fast"].runs)["median"] if "all-fast" in by else None
    slow = median_ci(by["all-slow"].runs)["median"] if "all-slow" in by else None
    rows = []
    for a in arms:
        m = median_ci(a.runs, 1 - alpha)
        row: dict[str, Any] = {"arm": a.label, "name": a.name, "pct": a.pct,
                               "capacity": a.capacity, "objects_on_fast": sorted(a.fast),
                               "runs": a.runs, "memory_limits": a.limits,
                               **{f"tps_{k}": v for k, v in m.items()}}
        row["share_of_all_fast"] = (m["median"] / fast if fast and m["median"] else None)
        row["gap_closed"] = ((m["median"] - slow) / (fast - slow)
                             if fast and slow and m["median"] and fast != slow else None)
        if a.name == "plan":
            for other in ("greedy", "random"):
                b = by.get(f"{other}@{a.pct}%")
                if b is not None:
                    v = compare_paired(a.runs, b.runs, alpha=alpha)
                    row[f"vs_{other}"] = {k: v[k] for k in ("gain_pct", "ci_low_pct",
                                                           "ci_high_pct", "p_value",
                                                           "decision", "n_a")}
        rows.append(row)
    return rows


def render_table(rows: Sequence[dict[str, Any]]) -> str:
    def num(x: Any, fmt: str = "{:.0f}") -> str:
        return "-" if x is None else fmt.format(x)

    def vs(r: dict[str, Any], key: str) -> str:
        v = r.get(key)
        if not v or v.get("gain_pct") is None:
            return "-"
        p = "-" if v["p_value"] is None else f"{v['p_value']:.2g}"
        return f"{v['gain_pct']:+.0f}% p={p}"

    head = ("arm", "capacity", "TPS median [CI]", "of all-fast", "gap closed", "vs greedy",
            "vs random")
    body = []
    for r in rows:
        cap = "-" if r["capacity"] is None else f"{r['capacity'] / 2**20:.0f} MiB"
        ci = (f"{num(r['tps_median'])} [{num(r['tps_low'])}, {num(r['tps_high'])}]"
              if r["tps_median"] is not None else "failed")
        body.append((r["arm"], cap, ci, num(r["share_of_all_fast"], "{:.0%}"),
                     num(r["gap_closed"], "{:.0%}"), vs(r, "vs_greedy"), vs(r, "vs_random")))
    widths = [max(len(str(x[i])) for x in (head, *body)) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in (head, *body)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def pgbench_scripts(schema: Sequence[Table] = SCHEMA) -> dict[str, tuple[str, int]]:
    """File name -> (script text, weight) for pgbench ``-f file@weight``."""
    out = {}
    for t in schema:
        out[f"{t.name}_select.sql"] = (f"\\set id random(1, {t.rows})\n"
                                       f"SELECT length(v) FROM {t.name} WHERE id = :id;\n",
                                       t.weight)
        if t.update_weight:
            out[f"{t.name}_update.sql"] = (f"\\set id random(1, {t.rows})\n"
                                           f"UPDATE {t.name} SET n = n + 1 WHERE id = :id;\n",
                                           t.update_weight)
    return out


# -- the slow tier: a loop device with a cgroup read cap ---------------------------------------
def _own_cgroup(controller: str) -> tuple[int, Path] | None:
    """(version, the caller's cgroup directory) for ``controller`` (v1 ``blkio``, v2 ``io``)."""
    with open("/proc/self/cgroup", encoding="ascii") as f:
        lines = f.read().splitlines()
    for line in lines:
        hid, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(","):
            mount = Path("/sys/fs/cgroup") / controller
            if mount.is_dir():
                return 1, mount / path.lstrip("/")
    for line in lines:
        hid, ctrls, path = line.split(":", 2)
        if hid == "0" and ctrls == "":
            for mount in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
                if (mount / "cgroup.controllers").exists() and "io" in (
                        mount / "cgroup.controllers").read_text().split():
                    return 2, mount / path.lstrip("/")
    return None


class ReadCap:
    """A cgroup of ours capping reads on one block device; v1 blkio or v2 io."""

    def __init__(self, device: str, iops: int, name: str) -> None:
        from pmem_advisor.errors import EnvironmentProblem

        found = _own_cgroup("blkio")
        if found is None:
            raise EnvironmentProblem("no blkio (v1) or io (v2) cgroup controller: cannot slow "
                                     "the slow tier for real")
        self.version, parent = found
        self.path = parent / name
        st = os.stat(device)
        self.dev = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        self.iops = iops
        if self.version == 2:
            ctl = parent / "cgroup.subtree_control"
            if "io" not in ctl.read_text().split():
                ctl.write_text("+io\n")
        self.path.mkdir()
        self.on()

    def on(self) -> None:
        self._write(self.iops)

    def off(self) -> None:
        self._write(0)

    def _write(self, iops: int) -> None:
        if self.version == 1:
            (self.path / "blkio.throttle.read_iops_device").write_text(f"{self.dev} {iops}\n")
        else:
            (self.path / "io.max").write_text(f"{self.dev} riops={iops or 'max'}\n")

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(f"{pid}\n")

    def leave(self, pid: int) -> None:
        (self.path.parent / "cgroup.procs").write_text(f"{pid}\n")

    def remove(self) -> None:
        if not self.path.exists():
            return
        deadline = time.monotonic() + 5
        while True:
            for pid in (self.path / "cgroup.procs").read_text().split():
                try:
                    self.leave(int(pid))
                except OSError:
                    pass
            try:
                self.path.rmdir()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


class SlowTier:
    """An ext4 image on a loop device (direct I/O to its file), mounted under a temporary
    directory of ours; ``dir`` is the tablespace directory, owned by the server's uid."""

    def __init__(self, size: int, uid: int, gid: int) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="pmem-advisor-place-slow-"))
        self.loop: str | None = None
        self.mounted = False
        image = self.root / "slow.img"
        with open(image, "xb") as f:
            f.truncate(size)
        _run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0",
              str(image)])
        self.loop = _run(["losetup", "-f", "--show", "--direct-io=on", str(image)]).strip()
        mnt = self.root / "mnt"
        mnt.mkdir()
        _run(["mount", "-o", "noatime", self.loop, str(mnt)])
        self.mounted = True
        self.dir = mnt / "tier"
        self.dir.mkdir(mode=0o700)
        os.chown(self.dir, uid, gid)
        for d in (self.root, mnt):  # the server's uid must reach its directory
            os.chmod(d, 0o711)

    def remove(self) -> None:
        if self.mounted:
            _run(["umount", str(self.root / "mnt")])
            self.mounted = False
        if self.loop:
            _run(["losetup", "-d", self.loop])
            self.loop = None
        shutil.rmtree(self.root, ignore_errors=True)


def _run(argv: list[str]) -> str:
    from pmem_advisor.errors import EnvironmentProblem

    p = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    if p.returncode:
        raise EnvironmentProblem(f"{argv[0]} failed: {(p.stderr or p.stdout).strip()[:200]}")
    return p.stdout


# -- the run ----------------------------------------------------------------------------------
@dataclass
class Bench:
    args: argparse.Namespace
    log: Callable[[str], None]
    inst: Any = None
    memcg: Any = None
    cap: ReadCap | None = None
    slow: SlowTier | None = None
    fast_root: Path | None = None
    fast_dir: Path | None = None
    scripts: Path | None = None
    where: dict[str, str] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    background: subprocess.Popen | None = None
    limit_bytes: int = 0  # the memory cgroup's limit for the current arm

    # -- set-up ---------------------------------------------------------------------------
    def start(self) -> None:
        from pmem_advisor.instances import create_instance, pick_server
        from pmem_advisor.instances.cgroup import MemoryCgroup

        binary = pick_server("postgres", None, self.args.version)
        self.log(f"server: {binary.describe()}")
        self.inst = create_instance(binary)
        user = self.inst.user
        self.memcg = MemoryCgroup.create(f"place-bench-{os.getpid()}", 4 << 30)
        self.inst.cgroup = self.memcg
        self.fast_root = Path(tempfile.mkdtemp(prefix="pmem-advisor-place-fast-",
                                               dir="/dev/shm"))
        os.chmod(self.fast_root, 0o711)
        self.fast_dir = self.fast_root / "tier"
        self.fast_dir.mkdir(mode=0o700)
        os.chown(self.fast_dir, user.uid, user.gid)
        self.slow = SlowTier(self.args.slow_mb << 20, user.uid, user.gid)
        self.cap = ReadCap(self.slow.loop, self.args.slow_iops, f"pmem-advisor-place-"
                           f"{os.getpid()}")
        self.inst.initialize()
        self.inst.start(f"shared_buffers = {self.args.shared_buffers_mb}MB\n"
                        "max_wal_size = 1GB\nmin_wal_size = 256MB\n"
                        "synchronous_commit = off\nautovacuum = off\n"
                        "checkpoint_timeout = 30min\n")
        self.cap.add(self.inst.pid)  # first: the children it forks from now on inherit
        for pid in self.memcg.pids():  # the ones it forked before
            try:
                self.cap.add(pid)
            except ProcessLookupError:
                pass  # exited meanwhile
        self.scripts = Path(tempfile.mkdtemp(prefix="pmem-advisor-place-scripts-"))
        for fname, (text, _w) in pgbench_scripts().items():
            (self.scripts / fname).write_text(text)

    def load(self) -> list[Obj]:
        inst = self.inst
        inst.query(f"CREATE TABLESPACE fast LOCATION '{self.fast_dir}'")
        inst.query(f"CREATE TABLESPACE slow LOCATION '{self.slow.dir}'")
        self.cap.off()
        t0 = time.monotonic()
        for t in SCHEMA:
            inst.query(f"CREATE TABLE {t.name} (id int PRIMARY KEY USING INDEX TABLESPACE slow,"
                       f" n int NOT NULL DEFAULT 0, v text) TABLESPACE slow")
            inst.query(f"INSERT INTO {t.name} (id, v) SELECT g, repeat(md5(g::text), "
                       f"{FILLER // 32 + 1})::char({FILLER}) FROM generate_series(1, {t.rows}) g")
        inst.query("VACUUM (ANALYZE)")
        inst.query("CHECKPOINT")
        self.log(f"loaded {len(SCHEMA)} tables in {time.monotonic() - t0:.0f} s")
        self.cap.on()
        from pmem_advisor.rules.placement import pg_objects, pg_snapshot

        with inst.connect() as conn:
            objs = [Obj(o.name, o.kind, o.size) for o in pg_objects(None, pg_snapshot(conn))
                    if o.movable and o.kind in ("table", "index")]
        self.sizes = {o.name: o.size for o in objs}
        self.kinds = {o.name: o.kind for o in objs}
        self.where = dict.fromkeys(self.sizes, "slow")
        return objs

    # -- the load generator ---------------------------------------------------------------
    def _pgbench_argv(self, seconds: float) -> list[str]:
        from pmem_advisor.engines.postgres.pgbench import connection_args, pgbench_binary

        conn = self.inst.conninfo
        files = [f"{self.scripts / n}@{w}" for n, (_t, w) in pgbench_scripts().items()]
        return [pgbench_binary(conn), *connection_args(conn), "-n", "-c",
                str(self.args.clients), "-j", str(self.args.clients), "-T",
                str(math.ceil(seconds)), *[x for f in files for x in ("-f", f)], conn.dbname]

    def pgbench(self, seconds: float) -> float:
        from pmem_advisor.engines.postgres.pgbench import (
            parse_pgbench_summary,
            tool_env,
        )
        from pmem_advisor.errors import EnvironmentProblem

        p = subprocess.run(self._pgbench_argv(seconds), capture_output=True, text=True,
                           env=tool_env(self.inst.conninfo), timeout=seconds + 120, check=False)
        if p.returncode:
            raise EnvironmentProblem(f"pgbench failed: {p.stderr.strip()[-300:]}")
        return float(parse_pgbench_summary(p.stdout)["tps"])

    # -- the plans --------------------------------------------------------------------------
    def plans(self, objs: list[Obj]) -> tuple[dict[int, frozenset[str]], list[dict]]:
        """The advisor's plan at each capacity, each on its own --interval window under the
        load, with everything on the slow tier (the state a DBA would plan from)."""
        from pmem_advisor.engines.postgres.pgbench import tool_env
        from pmem_advisor.rules import placement

        c = self.inst.conninfo
        dsn = f"host={c.socket_dir} port={c.port} user={c.user} dbname={c.dbname}"
        caps = capacities(objs)
        seconds = len(caps) * (self.args.interval + 40) + 30
        self.background = subprocess.Popen(self._pgbench_argv(seconds),
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                           env=tool_env(c))
        out, docs = {}, []
        try:
            self.pgbench_warm_wait()
            for pct, cap in caps.items():
                self.cap.add(os.getpid())  # the probe measures the slow tier as the server does
                try:
                    p = placement.plan(dsn, f"{self.fast_dir}:{cap}", slow_path=str(self.slow.dir),
                                       interval=self.args.interval, allow_unsafe=True)
                finally:
                    self.cap.leave(os.getpid())
                chosen = frozenset(o.name for o in p.objects if o.on_fast and o.movable
                                   and o.kind in ("table", "index"))
                skipped = [o.name for o in p.objects if o.on_fast and not o.movable]
                self.log(f"plan at {pct}% ({cap >> 20} MiB): {sorted(chosen)}"
                         + (f"; chosen but not moved by SQL: {skipped}" if skipped else "")
                         + f"; slow read {p.slow.read_lat_s * 1e3:.2f} ms, fast "
                         f"{p.fast.read_lat_s * 1e3:.3f} ms")
                out[pct] = chosen
                docs.append({"pct": pct, "capacity": cap, **p.as_dict()})
        finally:
            self.stop_background()
        return out, docs

    def pgbench_warm_wait(self) -> None:
        """Until the background load has run a few seconds (its first transactions counted)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            n = self.inst.query("SELECT coalesce(sum(xact_commit), 0) FROM pg_stat_database")[0][0]
            if self.background.poll() is not None:
                break
            if n > 5000:
                return
            time.sleep(0.2)
        if self.background.poll() is not None:
            from pmem_advisor.errors import EnvironmentProblem

            raise EnvironmentProblem("the background pgbench load ended early")

    def stop_background(self) -> None:
        if self.background is not None and self.background.poll() is None:
            self.background.terminate()
            try:
                self.background.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.background.kill()
                self.background.wait()
        self.background = None

    # -- an arm -----------------------------------------------------------------------------
    def apply(self, arm: Arm) -> float:
        """Move the objects to the arm's tiers (throttle lifted, memory unbounded while
        copying), evict the slow tier's cached pages, then bound the page cache; seconds."""
        from pmem_advisor.instances.cgroup import evict_page_cache

        t0 = time.monotonic()
        self.cap.off()
        self._limit(4 << 30)
        with self.inst.connect() as conn:
            for name in sorted(self.sizes):
                want = "fast" if name in arm.fast else "slow"
                if self.where[name] != want:
                    conn.execute(f"ALTER {self.kinds[name].upper()} {name} SET TABLESPACE "
                                 f"{want}")
                    self.where[name] = want
            conn.execute("CHECKPOINT")  # the old files go; dirty pages of the move written
        evict_page_cache([self.slow.dir])
        stat = self._memstat()
        file_cache = stat.get("total_active_file", stat.get("active_file", 0)) + stat.get(
            "total_inactive_file", stat.get("inactive_file", 0))
        held = self.memcg.usage_bytes() - file_cache
        self.limit_bytes = held + (self.args.cache_mb << 20)
        self._limit(self.limit_bytes)
        self.cap.on()
        return time.monotonic() - t0

    def _memstat(self) -> dict[str, int]:
        name = "memory.stat"
        out = {}
        for line in (self.memcg.path / name).read_text().splitlines():
            k, _, v = line.partition(" ")
            if v.strip().isdigit():
                out[k] = int(v)
        return out

    def _limit(self, limit: int) -> None:
        f = "memory.max" if self.memcg.version == 2 else "memory.limit_in_bytes"
        for _ in range(50):  # lowering below usage: the kernel reclaims, EBUSY if it cannot yet
            try:
                (self.memcg.path / f).write_text(f"{limit}\n")
                return
            except OSError:
                time.sleep(0.1)
        (self.memcg.path / f).write_text(f"{limit}\n")

    # -- tear-down --------------------------------------------------------------------------
    def close(self) -> None:
        errors = []
        for step in (self.stop_background,
                     lambda: self.inst and self.inst.destroy(),
                     lambda: self.slow and self.slow.remove(),
                     lambda: self.cap and self.cap.remove(),
                     lambda: self.memcg and self.memcg.remove(),
                     lambda: self.fast_root and shutil.rmtree(self.fast_root),
                     lambda: self.scripts and shutil.rmtree(self.scripts)):
            try:
                step()
            except Exception as e:  # noqa: BLE001 - every step is tried; all said at the end
                errors.append(str(e))
        for e in errors:
            self.log(f"clean-up: {e}")


def run(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    started = time.time()
    b = Bench(args, log)
    try:
        b.start()
        objs = b.load()
        total = sum(o.size for o in objs)
        log(f"database: {len(objs)} objects, {total / 2**20:.0f} MiB; shared_buffers "
            f"{args.shared_buffers_mb} MiB, page cache {args.cache_mb} MiB; slow reads capped "
            f"at {args.slow_iops} IOPS")
        plans, plan_docs = b.plans(objs)
        arms = build_arms(objs, plans, args.seed)
        for rnd in range(args.rounds):
            for i in rotation(len(arms), rnd):
                arm = arms[i]
                moved = b.apply(arm)
                try:
                    b.pgbench(args.warmup)
                    tps = b.pgbench(args.duration)
                except Exception as e:  # noqa: BLE001 - a failed run is a gap, said
                    log(f"round {rnd + 1} {arm.label}: failed: {e}")
                    tps = None
                arm.runs.append(tps)
                arm.limits.append(b.limit_bytes)
                log(f"round {rnd + 1}/{args.rounds} {arm.label:<12} "
                    f"{'-' if tps is None else f'{tps:8.0f}'} tps (moves {moved:.1f} s, "
                    f"memory limit {b.limit_bytes / 2**20:.0f} MiB, "
                    f"load {os.getloadavg()[0]:.1f})")
        rows = summarise(arms)
    finally:
        b.close()
    return {"schema": "pmem-advisor.bench-place/1", "caveat": TMPFS_CAVEAT,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "wall_s": round(time.time() - started, 1),
            "settings": {k: v for k, v in vars(args).items() if k != "out"},
            "tables": [asdict(t) for t in SCHEMA],
            "objects": [asdict(o) for o in objs], "database_bytes": total,
            "plans": plan_docs, "rows": rows, "loadavg_end": os.getloadavg()}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.placement",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10.0, help="measured seconds per run")
    ap.add_argument("--warmup", type=float, default=4.0, help="warm-up seconds per run")
    ap.add_argument("--interval", type=float, default=5.0, help="place's --interval window")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--slow-iops", type=int, default=3000, help="read cap of the slow tier")
    ap.add_argument("--slow-mb", type=int, default=1024, help="size of the slow tier's image")
    ap.add_argument("--shared-buffers-mb", type=int, default=16)
    ap.add_argument("--cache-mb", type=int, default=32,
                    help="page cache the server's memory cgroup leaves for the slow tier")
    ap.add_argument("--seed", type=int, default=52, help="of the random plans")
    ap.add_argument("--version", default=None, help="PostgreSQL major (default: the best found)")
    ap.add_argument("--out", type=Path, default=Path("bench-out/placement.json"))
    args = ap.parse_args(argv)
    if args.rounds < 3:
        ap.error("--rounds must be at least 3 (a paired test on fewer says nothing)")
    return args


def _terminate(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # the finally blocks stop the server and remove the tiers


def main(argv: list[str] | None = None) -> int:
    from pmem_advisor.errors import AdvisorError

    args = parse_args(argv)

    def log(msg: str) -> None:
        print(f"[bench-place {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    if os.geteuid() != 0:
        print("bench-place: needs root (a loop device, a mount and cgroups)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _terminate)
    log(TMPFS_CAVEAT)
    try:
        result = run(args, log)
    except AdvisorError as e:
        print(f"bench-place: {e}", file=sys.stderr)
        return getattr(e, "exit_code", 3)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"# placement benchmark {result['date']} ({result['wall_s']:.0f} s): {TMPFS_CAVEAT}")
    print(f"# database {result['database_bytes'] / 2**20:.0f} MiB, {args.rounds} interleaved "
          f"rounds x {args.duration:g} s, pgbench {args.clients} clients; CI: order "
          "statistics (coverage in the JSON); p: paired t-test on per-round log ratios")
    print(render_table(result["rows"]))
    log(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
