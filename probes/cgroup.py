"""The limits a server really runs under: its cgroup's memory, CPU quota and cpuset.

Where the cgroup is:
- the current process (``/proc/self/cgroup``), a running process (``/proc/<pid>/cgroup``), a
  cgroup path (``/system.slice/postgresql.service``, relative to the hierarchy's root, or the
  full ``/sys/fs/cgroup/...`` path) or a systemd unit (``postgresql@18-main.service``: found
  under the slices of each hierarchy, ``system.slice/system-postgresql.slice/...``);
- each controller (memory, cpu, cpuset) lives in the cgroup v2 hierarchy when the v2 root
  lists it in ``cgroup.controllers``, else in its own v1 hierarchy (hybrid hosts mix both).
  The hierarchies come from ``/proc/self/mountinfo`` (``cgroup2`` / ``cgroup`` mounts, with
  the mount's root so a container that sees ``/docker/<id>`` as ``/`` still resolves).

What is read (the kernel's cgroup-v2 and cgroup-v1 docs):
- v2: ``memory.max``, ``memory.high``, ``memory.swap.max`` (bytes or ``max``), ``cpu.max``
  (``$MAX $PERIOD``, ``max`` = no quota), ``cpuset.cpus.effective``, ``cpuset.mems.effective``;
- v1: ``memory.limit_in_bytes``, ``memory.memsw.limit_in_bytes`` (memory + swap, so swap =
  memsw - memory), ``cpu.cfs_quota_us`` (-1 = none) / ``cpu.cfs_period_us``, ``cpuset.cpus``,
  ``cpuset.mems``.
Memory and CPU limits bind along the whole path, so the tightest value from the cgroup up to
the hierarchy's root wins (a pod's limit sits on the pod's slice, not the container's leaf);
each value keeps the file it came from. A v1 "no limit" is a huge page-aligned number
(9223372036854771712): anything at or above 2**60 bytes counts as none. A missing, unreadable
or malformed file is a warning naming it and the value stays unknown: callers fall back to the
host's value (rules/budget.py), never crash.
"""

from __future__ import annotations

import posixpath
import re

from pmem_advisor.probes.reading import ProbeContext, parse_cpulist

CONTROLLERS = ("memory", "cpu", "cpuset", "hugetlb")
SIZING = ("memory", "cpu", "cpuset")  # the controllers that say which cgroup version "is" used
UNLIMITED_V1 = 1 << 60  # v1 prints PAGE_COUNTER_MAX * PAGE_SIZE (~2**63) for "no limit"
_UNIT_SUFFIXES = (".service", ".slice", ".scope", ".socket", ".mount")
_UNIT_SEARCH_DEPTH = 4  # system.slice/system-postgresql.slice/<unit> is depth 3


def is_unit_name(text: str) -> bool:
    """``postgresql@18-main.service`` (a systemd unit) rather than a cgroup path."""
    return ("/" not in text and text.endswith(_UNIT_SUFFIXES)
            and not any(ch in text for ch in "*?[]"))  # searched by glob: no patterns


def _hierarchies(ctx: ProbeContext, table: list[dict]) -> dict[str, dict]:
    """controller -> {version, mountpoint, root} for memory, cpu and cpuset."""
    v2 = next((m for m in reversed(table) if m["fstype"] == "cgroup2"), None)
    v2_controllers: set[str] = set()
    if v2 is not None:
        text = ctx.text(posixpath.join(v2["mountpoint"], "cgroup.controllers"))
        v2_controllers = set((text or "").split())
    found: dict[str, dict] = {}
    for ctrl in CONTROLLERS:
        v1 = next((m for m in reversed(table)
                   if m["fstype"] == "cgroup" and ctrl in m["options"]), None)
        if v1 is not None:
            found[ctrl] = {"version": 1, "mountpoint": v1["mountpoint"],
                           "root": v1.get("root") or "/"}
        elif v2 is not None and ctrl in v2_controllers:
            found[ctrl] = {"version": 2, "mountpoint": v2["mountpoint"],
                           "root": v2.get("root") or "/"}
    if v2 is not None:
        found["unified"] = {"version": 2, "mountpoint": v2["mountpoint"],
                            "root": v2.get("root") or "/"}
    return found


def _membership(ctx: ProbeContext, proc_file: str) -> dict[str, str]:
    """``/proc/<pid>/cgroup`` -> {controller or "unified": cgroup path}."""
    text = ctx.text(proc_file, required=True)
    paths: dict[str, str] = {}
    for n, line in enumerate((text or "").splitlines(), 1):
        parts = line.split(":", 2)
        if len(parts) != 3 or not parts[2].startswith("/"):
            ctx.warn(f"{proc_file}:{n}: malformed line")
            continue
        _, ctrls, path = parts
        if ctrls == "" and parts[0] == "0":
            paths["unified"] = path
        for ctrl in ctrls.split(","):
            if ctrl in CONTROLLERS:
                paths[ctrl] = path
    return paths


def _in_mount(path: str, mount_root: str) -> str:
    """A cgroup path as seen from a mount whose root is ``mount_root`` (containers)."""
    if mount_root not in ("", "/") and (path == mount_root or path.startswith(mount_root + "/")):
        return path[len(mount_root):] or "/"
    return path


def _find_unit(ctx: ProbeContext, mountpoint: str, unit: str) -> str | None:
    """The cgroup path of a systemd unit: slices first (system.slice), then any depth <= 4."""
    candidates = [f"system.slice/{unit}"]
    if "@" in unit:  # template instances live in their own slice: system-<prefix>.slice
        prefix = unit.split("@", 1)[0].replace("-", "\\x2d")
        candidates.append(f"system.slice/system-{prefix}.slice/{unit}")
    for rel in candidates:
        if ctx.access.is_dir(posixpath.join(mountpoint, rel)):
            return "/" + rel
    for depth in range(1, _UNIT_SEARCH_DEPTH + 1):
        pattern = posixpath.join(mountpoint, *(["*"] * (depth - 1)), unit)
        for hit in ctx.access.glob(pattern):
            if ctx.access.is_dir(hit):
                return hit[len(mountpoint.rstrip("/")):]
    return None


def _target_paths(ctx: ProbeContext, hier: dict[str, dict], cgroup: str | None,
                  pid: int | None) -> tuple[dict[str, str], str]:
    """controller -> cgroup path inside its hierarchy, and how it was chosen."""
    if cgroup is None:
        proc = f"/proc/{pid}/cgroup" if pid else "/proc/self/cgroup"
        member = _membership(ctx, proc)
        paths = {}
        for ctrl, h in hier.items():
            key = "unified" if h["version"] == 2 else ctrl
            if key in member:
                paths[ctrl] = _in_mount(member[key], h["root"])
        return paths, f"process {pid}" if pid else "this process"
    if is_unit_name(cgroup):
        paths = {}
        for ctrl, h in hier.items():
            found = _find_unit(ctx, h["mountpoint"], cgroup)
            if found is not None:
                paths[ctrl] = found
        if not paths:
            ctx.warn(f"cgroup of unit {cgroup}: not found under "
                     f"{', '.join(sorted({h['mountpoint'] for h in hier.values()})) or 'any'}"
                     " (is the unit running?); using the host values")
        return paths, f"unit {cgroup}"
    path = "/" + cgroup.strip("/")
    if ".." in path.split("/"):  # a cgroup is a directory below the hierarchy, never above it
        ctx.warn(f"cgroup path {cgroup}: '..' is not allowed; using the host values")
        return {}, f"path {cgroup}"
    paths = {}
    for ctrl, h in hier.items():
        mp = h["mountpoint"].rstrip("/")
        paths[ctrl] = path[len(mp):] or "/" if path.startswith(mp + "/") else path
    return paths, f"path {cgroup}"


def _chain(mountpoint: str, path: str) -> list[str]:
    """The cgroup's directory and its ancestors up to the hierarchy's root, leaf first."""
    parts = [p for p in path.split("/") if p]
    return [posixpath.join(mountpoint, *parts[:k]) for k in range(len(parts), -1, -1)]


def _bytes_value(ctx: ProbeContext, file: str, *, v1: bool) -> tuple[bool, int | None]:
    """(read?, bytes or None for no limit); malformed -> warned and (False, None)."""
    raw = ctx.text(file)
    if raw is None:
        return False, None
    if raw == "max":
        return True, None
    if re.fullmatch(r"-?\d+", raw):
        value = int(raw)
        if value < 0 or (v1 and value >= UNLIMITED_V1):
            return True, None
        return True, value
    ctx.warn(f"{file}: malformed (expected bytes or 'max', got {raw[:40]!r}); "
             "using the host value")
    return False, None


def _tightest_bytes(ctx: ProbeContext, dirs: list[str], name: str, *,
                    v1: bool) -> tuple[int | None, str | None, str | None]:
    """(tightest limit, its file, the leaf file read) along a chain of cgroup directories."""
    best: tuple[int | None, str | None] = (None, None)
    leaf_file = None
    for d in dirs:
        file = posixpath.join(d, name)
        read, value = _bytes_value(ctx, file, v1=v1)
        if read and leaf_file is None:
            leaf_file = file
        if value is not None and (best[0] is None or value < best[0]):
            best = (value, file)
    return best[0], best[1], leaf_file


def _cpu_quota(ctx: ProbeContext, dirs: list[str], v1: bool) -> tuple[float | None, str | None]:
    """Tightest CPU quota in CPUs (quota / period) along the chain."""
    best: tuple[float | None, str | None] = (None, None)
    for d in dirs:
        if v1:
            qfile, pfile = f"{d}/cpu.cfs_quota_us", f"{d}/cpu.cfs_period_us"
            quota_raw, period_raw = ctx.text(qfile), ctx.text(pfile)
            if quota_raw is None:
                continue
            try:
                quota, period = int(quota_raw), int(period_raw or "100000")
            except ValueError:
                ctx.warn(f"{qfile}: malformed (expected microseconds, got {quota_raw[:40]!r} / "
                         f"{(period_raw or '')[:20]!r}); using the host CPUs")
                continue
            if quota < 0 or period <= 0:
                continue
            cpus, file = quota / period, qfile
        else:
            file = f"{d}/cpu.max"
            raw = ctx.text(file)
            if raw is None:
                continue
            m = re.fullmatch(r"(max|\d+)(?:\s+(\d+))?", raw)
            if not m or (m.group(2) is not None and int(m.group(2)) == 0):
                ctx.warn(f"{file}: malformed (expected '$MAX $PERIOD', got {raw[:40]!r}); "
                         "using the host CPUs")
                continue
            if m.group(1) == "max":
                continue
            cpus = int(m.group(1)) / int(m.group(2) or 100000)
        if best[0] is None or cpus < best[0]:
            best = (round(cpus, 3), file)
    return best


def _cpuset(ctx: ProbeContext, dirs: list[str], v1: bool, what: str
            ) -> tuple[list[int] | None, str | None]:
    """The cpuset's CPUs or memory nodes: the nearest non-empty list, leaf first."""
    name = f"cpuset.{what}" if v1 else f"cpuset.{what}.effective"
    for d in dirs:
        file = f"{d}/{name}"
        raw = ctx.text(file)
        if raw is None or raw == "":
            continue
        values = parse_cpulist(raw)
        if values is None:
            ctx.warn(f"{file}: malformed (expected a list like 0-3,8, got {raw[:40]!r}); "
                     "using the host's")
            return None, None
        return values, file
    return None, None


def _hugetlb(ctx: ProbeContext, dirs: list[str], v1: bool, src: dict) -> dict[str, int]:
    """Huge pages the cgroup may hold, per page size label ("2MB", "1GB"): v2
    ``hugetlb.<size>.max``, v1 ``hugetlb.<size>.limit_in_bytes``; tightest along the chain.
    Huge pages are charged here, not to memory.max: a container needs this allowance too."""
    suffix = "limit_in_bytes" if v1 else "max"
    labels = sorted({name.split(".")[1] for name in ctx.access.listdir(dirs[0])
                     if name.startswith("hugetlb.") and name.endswith("." + suffix)
                     and name.count(".") == 2})
    out = {}
    for label in labels:
        value, file, _ = _tightest_bytes(ctx, dirs, f"hugetlb.{label}.{suffix}", v1=v1)
        if value is not None:
            out[label] = value
            src[f"hugetlb_max_bytes.{label}"] = file
    return out


def read_limits(ctx: ProbeContext, table: list[dict], *, cgroup: str | None = None,
                pid: int | None = None) -> dict:
    """The ``limits`` section's cgroup part (contract 2 in coord NOTES); never raises."""
    start = len(ctx.warnings)
    hier = _hierarchies(ctx, table)
    paths, how = _target_paths(ctx, hier, cgroup, pid) if hier else ({}, "none")
    limits: dict = {
        "cgroup": None, "memory_max_bytes": None, "memory_high_bytes": None,
        "swap_max_bytes": None, "cpu_quota_cpus": None, "cpuset_cpus": None,
        "cpuset_mems": None, "hugetlb_max_bytes": {}, "sources": {}, "notes": [],
    }
    if not hier:
        limits["notes"].append("no cgroup hierarchy mounted: the host's resources apply")
    controllers: dict[str, dict] = {}
    missing: list[tuple[str, str]] = []
    for ctrl in CONTROLLERS:
        h = hier.get(ctrl)
        if h is None or ctrl not in paths:
            continue
        dirs = _chain(h["mountpoint"], paths[ctrl])
        leaf = dirs[0]
        if not ctx.access.is_dir(leaf):
            missing.append((ctrl, leaf))
            continue
        controllers[ctrl] = {"version": h["version"], "path": paths[ctrl], "dir": leaf}
        v1 = h["version"] == 1
        src = limits["sources"]
        if ctrl == "memory":
            mem, file, leaf_file = _tightest_bytes(
                ctx, dirs, "memory.limit_in_bytes" if v1 else "memory.max", v1=v1)
            limits["memory_max_bytes"], src["memory_max_bytes"] = mem, file or leaf_file
            if mem is None and leaf_file is not None:
                limits["notes"].append(f"{leaf_file} = {'max' if not v1 else 'unlimited'}: "
                                       "no memory limit, the host's memory applies")
            if not v1:
                high, file, _ = _tightest_bytes(ctx, dirs, "memory.high", v1=False)
                limits["memory_high_bytes"], src["memory_high_bytes"] = high, file
                swap, file, _ = _tightest_bytes(ctx, dirs, "memory.swap.max", v1=False)
                limits["swap_max_bytes"], src["swap_max_bytes"] = swap, file
            else:
                memsw, file, _ = _tightest_bytes(ctx, dirs, "memory.memsw.limit_in_bytes",
                                                 v1=True)
                if memsw is not None and mem is not None:
                    limits["swap_max_bytes"] = max(0, memsw - mem)
                    src["swap_max_bytes"] = file
        elif ctrl == "cpu":
            limits["cpu_quota_cpus"], src["cpu_quota_cpus"] = _cpu_quota(ctx, dirs, v1)
        elif ctrl == "hugetlb":
            limits["hugetlb_max_bytes"] = _hugetlb(ctx, dirs, v1, src)
        else:
            limits["cpuset_cpus"], src["cpuset_cpus"] = _cpuset(ctx, dirs, v1, "cpus")
            limits["cpuset_mems"], src["cpuset_mems"] = _cpuset(ctx, dirs, v1, "mems")
    missing = [(c, leaf) for c, leaf in missing if c in SIZING]  # hugetlb is optional
    # v1 hierarchies are independent: a cgroup made for memory alone (a managed server's) has
    # no cpu twin. Only a cgroup found nowhere is a problem worth a warning.
    if controllers:
        limits["notes"] += [f"no {ctrl} cgroup {leaf}: the host's {ctrl} limits apply"
                            for ctrl, leaf in missing]
    elif missing:
        ctx.warn(f"cgroup {paths[missing[0][0]]}: no such directory "
                 f"({', '.join(leaf for _, leaf in missing)}); using the host values")
    limits["sources"] = {k: v for k, v in limits["sources"].items() if v}
    versions = sorted({c["version"] for k, c in controllers.items() if k in SIZING})
    main = controllers.get("memory") or next(
        (c for k, c in controllers.items() if k in SIZING), None)
    if main is not None or hier:
        limits["cgroup"] = {
            "version": versions[0] if len(versions) == 1 else ("hybrid" if versions else None),
            "path": main["path"] if main else None,
            "source": how,
            "controllers": controllers,
        }
    limits["warnings"] = ctx.warnings[start:]
    return limits
