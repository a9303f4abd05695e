"""CK030 A hot table or index on the slower of the server's storage tiers while a faster one the
server already uses has room for it (check --dsn).

Anti-pattern: a server whose tablespaces (PostgreSQL, MySQL's general tablespaces) or DATA
DIRECTORY tables (InnoDB) span several mounts, with one of the objects that take the most I/O
past the server's cache left on the slower mount while a faster mount the server already keeps
data on has the free space to hold it. K23 moved data files onto PMEM and measured +36% to
+117% TPC-C throughput (Table 5, K23-2); Weisgut et al. (PVLDB 18(9), 2025) kept most table data
on the slower CXL tier at about 85% of all-local speed by placing objects by access frequency:
what matters is where the hot objects are, not where most bytes are. An index is the cheaper
object to move (A21-2).

Recommendation: move the hot object to the faster location; ``pmem-advisor place`` plans the
whole move (a knapsack on the I/O time each object would save per byte, its SQL and locks).

What the finding rests on, all from the server and this host (nothing is assumed):
- per-object I/O and size through the readers ``place`` uses (rules/placement_postgres.py
  ``pg_snapshot``/``pg_objects``, rules/placement_mariadb.py and rules/placement_mysql.py
  ``snapshot``/``objects``): block reads past shared_buffers plus estimated page writes
  (PostgreSQL), file operations on each .ibd (performance_schema, MariaDB and MySQL 8);
  lifetime counters, as the finding says;
- each object's location: its tablespace's ``pg_tablespace_location`` or the data directory;
  the directory an .ibd's ``DATA DIRECTORY`` put it in, or the data directory; on MySQL 8 a
  general tablespace's datafile directory (INNODB_TABLESPACES/INNODB_DATAFILES), whose file
  counts place mysql shares out over its tables by row operations (an estimate, said);
- each location's medium from the probe profile ``check`` already builds (the location is one
  of its probed paths: the kernel's device kind, a measurement where the kernel's flag cannot
  be trusted, tmpfs from the filesystem, ``--medium PATH=CLASS`` from the user), and its free
  space from statvfs.

"Fast tier" without ``--fast``: among the locations the server already uses, one is faster than
another when its medium class ranks higher (PMEM/CXL/tmpfs > NVMe > SSD > HDD), or, in one
class, when both were measured and its random read is at least ``FASTER_RATIO`` times quicker.
Two locations on one filesystem (same st_dev) are one tier; an unknown or unverified medium
ranks nowhere. A non-durable location (tmpfs, memmap= PMEM) is a target only with
``--allow-unsafe``, as ``place`` and CK003 judge it. Nothing is said with too little I/O
(``MIN_IO``), one location, or no faster location with room.

Sources: K23 Table 5 (K23-2); Weisgut et al., PVLDB 18(9), 2025; A21 (A21-2); PostgreSQL
manual "Tablespaces", ALTER TABLE ... SET TABLESPACE; MariaDB KB "InnoDB File-Per-Table
Tablespaces" (DATA DIRECTORY); MySQL 8.0 manual "General Tablespaces" (ALTER TABLE ...
TABLESPACE=innodb_file_per_table). MySQL's reading has met only a recorded snapshot
(tests/placement/data/mysql8_snapshot.json), not a live server.
"""

from __future__ import annotations

import os

from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding

MIN_IO = 1000  # fewer reads + writes over all tables and indexes: no evidence of a hot one
HOT_SHARE = 0.10  # an object with a tenth of the tables' and indexes' I/O is a hot one
HOT_TOP = 5  # and only the hottest few: the rest is place's job, not a check's
FASTER_RATIO = 2.0  # one medium class, both measured: twice as quick a random read is faster
RESERVE = 0.10  # the move must leave a tenth of the faster filesystem free
RANK = {"pmem": 0, "cxl": 0, "tmpfs": 0, "nvme": 1, "ssd": 2, "hdd": 3}
TIERS_KEY = "tiers"  # CheckInput.status[TIERS_KEY]: what read_tiers gathered


# -- what the gate gathers from a live server (check --dsn, the server on this host) ----------
def read_tiers(dsn: str, server: dict, notes: list[str]) -> dict | None:
    """The objects with their I/O, size and location, and every location the server uses with
    its free space; None (a note says why when it matters) when it cannot be read."""
    from pmem_advisor.errors import AdvisorError

    try:
        if server.get("engine") == "postgres":
            return _read_pg(dsn, server)
        if server.get("flavour") == "mariadb":
            return _read_mariadb(dsn, server, notes)
        if server.get("engine") == "mysql":
            return _read_mysql(dsn, server, notes)
    except AdvisorError as e:
        notes.append(f"hot objects on the slow tier (CK030) not checked: {e.message}")
    except Exception as e:  # noqa: BLE001 - the drivers' errors; check goes on without CK030
        from pmem_advisor.connection import scrub

        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        notes.append(f"hot objects on the slow tier (CK030) not checked: {scrub(first, dsn)}")
    return None


def _read_pg(dsn: str, server: dict) -> dict:
    import psycopg

    from pmem_advisor.rules.placement_postgres import COUNTERS, pg_objects, pg_snapshot

    data = server["data_dir"]
    with psycopg.connect(dsn, connect_timeout=5, autocommit=True) as conn:
        spaces = conn.execute("SELECT spcname, pg_tablespace_location(oid) FROM pg_tablespace "
                              "WHERE spcname <> 'pg_global'").fetchall()
        snap = pg_snapshot(conn)
    where = {name: (loc or data) for name, loc in spaces}  # '' is pg_default: the data dir
    objects = [o for o in pg_objects(None, snap) if o.kind in ("table", "index")]
    age = snap["stats_age_s"]
    window = (f"counters since the statistics reset {age / 3600:.1f} h ago" if age else
              "counters since the server's statistics began")
    return _tiers("postgres", "blocks", window, COUNTERS, data,
                  {loc: (name if loc != data else None) for name, loc in where.items()},
                  [(o, where.get(o.tablespace, data)) for o in objects])


def _read_mariadb(dsn: str, server: dict, notes: list[str]) -> dict | None:
    from pmem_advisor.errors import AdvisorError
    from pmem_advisor.rules import placement_mariadb as m

    data = server["data_dir"]
    conn = m._connect(dsn)
    try:
        cur = conn.cursor()
        try:
            files = [f for (f,) in m._rows(cur, "SELECT FILENAME FROM information_schema."
                                                "INNODB_SYS_TABLESPACES")]
            dirs = {os.path.dirname(os.path.dirname(os.path.normpath(os.path.join(data, f))))
                    for f in files if f and f.endswith(".ibd")}
            try:
                m._preconditions(cur, server)  # performance_schema and its file instrument
            except AdvisorError as e:
                if len(dirs | {data}) > 1:  # several locations: the user should know why
                    notes.append(f"hot objects on the slow tier (CK030) not checked: "
                                 f"{e.message}")
                return None
            snap = m.snapshot(cur, data)
        finally:
            cur.close()
    finally:
        conn.close()
    objects, _facts = m.objects(None, snap)
    window = _uptime_window(snap["uptime_s"])
    # objects() names a table's location the directory above its schema's: DATA DIRECTORY
    pairs = [(o, data if o.tablespace == "ibdata1" else o.tablespace)
             for o in objects if o.kind == "table"]
    return _tiers("mariadb", "file operations", window, m.COUNTERS, data,
                  {d: None for d in dirs | {data}}, pairs)


def _read_mysql(dsn: str, server: dict, notes: list[str]) -> dict | None:
    """MySQL 8 through place mysql's reader: a table's location is its general tablespace's
    datafile directory, the directory its own .ibd's DATA DIRECTORY put it in, or the data
    directory (INNODB_TABLES/INNODB_TABLESPACES/INNODB_DATAFILES, as placement_mysql reads
    them)."""
    from pmem_advisor.errors import AdvisorError
    from pmem_advisor.rules import placement_mariadb as m
    from pmem_advisor.rules import placement_mysql as y

    y.check_server(server)  # 5.7 has the old catalogs: a note says so
    data = os.path.normpath(server["data_dir"])
    conn = m._connect(dsn)
    try:
        cur = conn.cursor()
        try:
            try:
                y._preconditions(cur, server["settings"])  # performance_schema, its instrument
            except AdvisorError as e:
                dirs = {_mysql_dir(data, stype, path)
                        for _t, _s, stype, path, _z in m._rows(cur, y.Q_SPACES)}
                if len(dirs | {data}) > 1:  # several locations: the user should know why
                    notes.append(f"hot objects on the slow tier (CK030) not checked: "
                                 f"{e.message}")
                return None
            cur.execute(y.Q_STATS_NOW)  # TABLES' sizes as they are, not a day-old cache
            snap = y.snapshot(cur, server)
        finally:
            cur.close()
    finally:
        conn.close()
    objects, facts, _notes = y.objects(None, snap)
    locations: dict[str, str | None] = {data: None}
    for name, path, _size in snap["general"]:  # every general tablespace the server has
        d = _mysql_dir(data, "General", os.path.join(data, path) if path else "")
        if d != data:
            locations[d] = ", ".join(x for x in (locations.get(d), name) if x)
    pairs, general, fixed = [], set(), set()
    for o in objects:
        f = facts.get(o.name)
        if o.kind != "table" or not f:
            continue  # the redo log and temp files move by config lines: place's job
        where = _mysql_dir(data, f["space_type"], f["path"])
        locations.setdefault(where, None)  # a DATA DIRECTORY table's own directory
        pairs.append((o, where))
        if f["space_type"] == "General":
            general.add(o.name)
        if not o.movable:  # partitions: no general tablespace holds one (8.0.13+)
            fixed.add(o.name)
    tiers = _tiers("mysql", "file operations", _uptime_window(snap["uptime_s"]), y.COUNTERS,
                   data, locations, pairs)
    for o in tiers["objects"]:  # its counts a share of one file's: the finding says so
        if o["name"] in general:
            o["tablespace"] = facts[o["name"]]["space"]
        if o["name"] in fixed:
            o["movable"] = False
    return tiers


def _mysql_dir(data: str, space_type: str | None, path: str | None) -> str:
    """The directory a MySQL table lives in: its general tablespace's file's, the one above
    its schema's directory for its own .ibd (the data directory or DATA DIRECTORY's), or the
    data directory (the system tablespace)."""
    if not path or space_type == "System":  # ibdata1: counted as no I/O of the table's
        return data
    full = os.path.normpath(os.path.join(data, path))
    return os.path.dirname(full) if space_type == "General" else (
        os.path.dirname(os.path.dirname(full)))


def _uptime_window(up: float) -> str:
    from pmem_advisor.rules.placement_mariadb import since_start

    return f"counters {since_start(up)}"


def _tiers(engine: str, unit: str, window: str, counters: str, data: str,
           locations: dict[str, str | None], pairs: list) -> dict:
    """The JSON-ready facts CK030 reads (a YAML case gives the same shape)."""
    locs = []
    for path, name in sorted(locations.items()):
        free = total = dev = None
        try:
            st = os.statvfs(path)
            free, total = st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
            dev = os.stat(path).st_dev
        except OSError:
            pass  # not reachable from here: no room known, never a target
        locs.append({"path": path, "tablespace": name, "free_bytes": free,
                     "total_bytes": total, "dev": dev})
    return {"engine": engine, "unit": unit, "window": window, "counters": counters,
            "data_dir": data, "locations": locs,
            "objects": [{"name": o.name, "kind": o.kind, "size": o.size, "location": loc,
                         "reads": o.reads, "writes": o.writes} for o, loc in pairs]}


def tier_paths(tiers: dict | None) -> list[str]:
    """The locations the probe profile must classify (the gate adds them to its paths)."""
    return [loc["path"] for loc in (tiers or {}).get("locations") or []]


# -- the check --------------------------------------------------------------------------------
class HotObjectOnSlowTier(Check):
    id = "CK030"
    title = "A hot table or index on the slower tier while a faster one the server uses has room"
    source = ("K23 Table 5; Weisgut et al. PVLDB 18(9) 2025; A21; PostgreSQL manual "
              "Tablespaces; MariaDB KB DATA DIRECTORY; MySQL manual General Tablespaces")
    insights = ("K23-2", "A21-2")
    engines = ("postgres", "mysql")

    def run(self, inp: CheckInput) -> list[Finding]:
        tiers = (inp.status or {}).get(TIERS_KEY)
        if not tiers:
            return []
        locs = {loc["path"]: loc for loc in tiers.get("locations") or []}
        objs = [o for o in tiers.get("objects") or [] if o.get("location") in locs]
        total = sum(o["reads"] + o["writes"] for o in objs)
        if len(locs) < 2 or total < MIN_IO:
            return []  # one location, or no statistics to tell a hot object by
        from pmem_advisor.rules.facts import resolve_path

        media = {p: resolve_path(inp.facts.profile, p, "data") for p in locs}
        room = {p: _room(loc) for p, loc in locs.items()}
        hot = sorted(objs, key=lambda o: -(o["reads"] + o["writes"]))[:HOT_TOP]
        out = []
        for o in hot:
            share = (o["reads"] + o["writes"]) / total
            if share < HOT_SHARE:
                break
            here = o["location"]
            if o.get("movable") is False:
                continue  # its I/O counts in the total, but no SQL moves it: no fix to give
            targets = [p for p in locs if p != here and room[p] is not None
                       and room[p] >= o["size"] and _faster(media[p], media[here])
                       and not _same_fs(locs[p], locs[here])
                       and (inp.allow_unsafe or not _volatile(inp, media[p]))]
            if not targets:
                continue
            best = min(targets, key=lambda p: (_rank(media[p]), -room[p]))
            room[best] -= o["size"]
            out.append(self._finding(inp, tiers, o, share, locs[here], media[here],
                                     locs[best], media[best]))
        return out

    def _finding(self, inp, tiers, o, share, here, slow, there, fast) -> Finding:
        unit, engine = tiers.get("unit", "blocks"), tiers.get("engine", "postgres")
        from pmem_advisor.rules.placement_mysql import FILE_PER_TABLE  # place mysql's name

        volatile = _volatile(inp, fast)
        # PostgreSQL counts no page writes per table: place estimates them from row changes;
        # MySQL counts a general tablespace's file, which place shares out by row operations
        guess = (" (estimated from row changes)" if engine == "postgres" else
                 f" (a share of tablespace {o['tablespace']}'s file operations, split by row "
                 "operations: an estimate)" if o.get("tablespace") else "")
        message = (
            f"{o['name']} ({o['kind']}, {_size(o['size'])}) takes {share:.0%} of the tables' "
            f"and indexes' I/O ({o['reads']:.0f} {unit} read past the server's cache, "
            f"{o['writes']:.0f} written{guess}; "
            f"{tiers.get('window', 'lifetime counters')}) on "
            f"{_where(here, slow)}, while {_where(there, fast)}, which the server already "
            f"uses, has {_size(there['free_bytes'])} free"
            + (" (tmpfs: lost at reboot, accepted with --allow-unsafe)" if volatile else ""))
        if there["path"] == tiers.get("data_dir"):
            fix = (f"move it back to the data directory: ALTER {o['kind'].upper()} {o['name']} "
                   "SET TABLESPACE pg_default (an ACCESS EXCLUSIVE lock while it copies)"
                   if engine == "postgres" else
                   f"move it back to its own file in the data directory: ALTER TABLE "
                   f"{o['name']} TABLESPACE=`{FILE_PER_TABLE}`, ALGORITHM=COPY (a full "
                   "rebuild: other sessions read it, their writes wait for the copy)"
                   if o.get("tablespace") else
                   "rebuild it in the data directory, without DATA DIRECTORY (InnoDB ignores "
                   "DATA DIRECTORY in ALTER TABLE: a copy, as docs/placement.md shows)")
        else:
            fix = (f"run `pmem-advisor place {engine} --dsn ... --fast {there['path']}"
                   + (" --allow-unsafe" if volatile else "") + "` for a plan (every object "
                   "weighed by the I/O time it would save per byte, with its SQL and locks)")
        return self.finding("warn", f"tier:{o['name']}", message, fix)


def _room(loc: dict) -> int | None:
    """Bytes a move may take there: the free space less the reserve."""
    free, total = loc.get("free_bytes"), loc.get("total_bytes")
    if free is None:
        return None
    return int(free - RESERVE * (total or 0))


def _same_fs(a: dict, b: dict) -> bool:
    return a.get("dev") is not None and a.get("dev") == b.get("dev")


def _rank(p) -> int | None:
    if p.medium_source == "unverified":
        return None  # the kernel's flag, which the probe could not confirm
    return RANK.get(p.medium)


def _latency(p) -> float | None:
    m = p.measured or {}
    return m.get("read_lat_ms") if p.medium_source == "measured" else None


def _faster(a, b) -> bool:
    """Whether location ``a`` (PathFacts) is a faster tier than ``b``."""
    ra, rb = _rank(a), _rank(b)
    if ra is None or rb is None:
        return False  # an unknown medium is never called faster or slower
    if ra != rb:
        return ra < rb
    la, lb = _latency(a), _latency(b)
    return bool(la and lb and lb / la >= FASTER_RATIO)


def _volatile(inp: CheckInput, p) -> bool:
    from pmem_advisor.rules.checks.CK003_volatile_medium import memmap_emulated

    return p.emulated_pmem or p.memory_backed or memmap_emulated(inp.facts.profile, p)


def _where(loc: dict, p) -> str:
    name = f"tablespace {loc['tablespace']} at " if loc.get("tablespace") else ""
    how = {"measured": f"measured {_latency(p):.2g} ms random read" if _latency(p) else
           "measured", "filesystem": "the filesystem", "override": "--medium",
           "kernel": "the kernel"}.get(p.medium_source or "", "its mount")
    return f"{name}{loc['path']} ({p.medium}, {how})"


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


CHECK = HotObjectOnSlowTier()
