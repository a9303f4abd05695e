"""Facts: what the rules read. Built from a probe profile plus the user's engine and overrides.

Paths (data, WAL) are resolved against the profile: first its ``paths[]`` entries, then the
longest mountpoint prefix in ``mounts[]``. tmpfs paths (``/dev/shm``) count as emulated PMEM
so the PMEM rules fire for live runs on machines without PMEM; outputs say so.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any

from pmem_advisor.engines import api
from pmem_advisor.errors import InputError, UsageError
from pmem_advisor.knobs.version import parse_version

PROFILE_SCHEMA = "pmem-advisor.probe/1"
WORKLOADS = ("oltp", "olap", "mixed", "kv")
PMEM_MEDIA = ("pmem", "cxl")


@dataclass(frozen=True)
class PathFacts:
    """Where one database directory lives: its mount, medium and DAX state."""

    role: str  # data | wal
    path: str
    mountpoint: str | None = None
    fstype: str | None = None
    device: str | None = None
    medium: str = "unknown"  # pmem|nvme|ssd|hdd|tmpfs|cxl|unknown
    dax: str | None = None  # always|inode|never|None (unknown)
    block_size: int | None = None
    numa_node: int | None = None
    emulated_pmem: bool = False
    namespace_mode: str | None = None  # fsdax|devdax|sector|raw when the device is a pmem ns
    namespace: str | None = None  # the pmem namespace's name (namespace0.0) when known
    size_bytes: int | None = None  # the device's (namespace's, else filesystem's) size
    matched: str = "path"  # path: probed itself; mount: longest mountpoint prefix; none
    medium_source: str | None = None  # kernel|measured|override|filesystem|unverified (probe)
    medium_note: str | None = None  # the probe's sentence about how the medium was found
    measured: dict | None = None  # the probe's measured latency/IOPS of the device

    @property
    def is_pmem(self) -> bool:
        """Real PMEM/CXL media, or tmpfs standing in for it (emulation)."""
        return self.medium in PMEM_MEDIA or self.emulated_pmem

    @property
    def real_pmem(self) -> bool:
        return self.medium in PMEM_MEDIA

    @property
    def dax_on(self) -> bool:
        return self.dax == "always"

    @property
    def memory_backed(self) -> bool:
        """The directory is memory (tmpfs): every file the server writes there takes RAM,
        charged to the server's memory cgroup as it writes it (real PMEM's media is not)."""
        return self.medium == "tmpfs" or self.fstype == "tmpfs"

    @property
    def page_cache_bypassed(self) -> bool:
        """No OS page cache between the server and the medium (DAX, or tmpfs which is memory)."""
        return self.dax_on or self.emulated_pmem


@dataclass(frozen=True)
class Facts:
    profile: dict
    engine: str | None
    flavour: str | None
    version: str | None
    workload: str
    memory_bytes: int
    cpus: int  # logical CPUs the server may use
    physical_cores: int
    sockets: int
    clients: int | None
    allow_unsafe: bool
    cpus_given: bool
    data: PathFacts | None
    wal: PathFacts | None
    page_size: int = 4096
    server_cpus: tuple[int, ...] | None = None  # CPUs a running server may use (check --dsn)
    notes: list[str] = field(default_factory=list)
    features: frozenset[str] = frozenset()  # server build features known, e.g. {"lz4"}
    interleave_cpuless: bool = False  # the user asked to interleave over CPU-less nodes too
    bound_node: int | None = None  # sized for this NUMA node (a rule binds the server to it)
    memory_source: str = "host"  # where memory_bytes came from (rules/budget.py)
    # the storage engine holding the data where the engine has several (Tarantool: memtx,
    # vinyl); None = the engine's default one
    storage_engine: str | None = None

    @property
    def data_in_memory(self) -> bool:
        """The data directory is tmpfs: the files the server writes there are memory too."""
        return self.data is not None and self.data.memory_backed

    # ---- engine and version ----
    @property
    def pg(self) -> bool:
        return self.engine == "postgres"

    @property
    def mysql(self) -> bool:
        return self.engine == "mysql"

    @property
    def mariadb(self) -> bool:
        return self.flavour == "mariadb"

    @property
    def oracle_mysql(self) -> bool:
        return self.flavour == "mysql"

    def version_at_least(self, *v: int) -> bool:
        """True when the version is >= v; an unknown version counts as the newest."""
        if self.version is None:
            return True
        return version_tuple(self.version) >= tuple(v)

    def version_below(self, *v: int) -> bool:
        return self.version is not None and version_tuple(self.version) < tuple(v)

    # ---- hardware ----
    @property
    def pmem(self) -> dict:
        return self.profile.get("pmem") or {}

    @property
    def pmem_mode(self) -> str:
        return self.pmem.get("mode") or "none"

    @property
    def numa(self) -> list[dict]:
        return self.profile.get("numa") or []

    @property
    def cpu_nodes(self) -> list[dict]:
        return [n for n in self.numa if n.get("has_cpu", bool(n.get("cpus")))]

    @property
    def emulated(self) -> bool:
        return any(p.emulated_pmem for p in self.placed)

    @property
    def placed(self) -> list[PathFacts]:
        return [p for p in (self.data, self.wal) if p is not None]

    @property
    def data_on_pmem(self) -> bool:
        return self.data is not None and self.data.is_pmem

    @property
    def wal_on_pmem(self) -> bool:
        return self.wal is not None and self.wal.is_pmem

    @property
    def any_pmem_path(self) -> bool:
        return self.data_on_pmem or self.wal_on_pmem

    @property
    def pmem_node(self) -> int | None:
        """The NUMA node that owns the PMEM holding the data (else the WAL)."""
        for p in (self.data, self.wal):
            if p is not None and p.is_pmem and p.numa_node is not None:
                return p.numa_node
        return None

    def cores_near(self, node: int | None) -> int:
        """Physical cores on a node (else the whole machine's)."""
        threads_per_core = max(1, round(self.logical_total / max(1, self.physical_total)))
        for n in self.numa:
            if n.get("node") == node and n.get("cpus"):
                return max(1, len(n["cpus"]) // threads_per_core)
        return self.physical_cores

    @property
    def logical_total(self) -> int:
        cpu = self.profile.get("cpu") or {}
        return int(cpu.get("threads") or self.cpus)

    @property
    def physical_total(self) -> int:
        cpu = self.profile.get("cpu") or {}
        return int(cpu.get("cores") or self.physical_cores)

    def needs_more_than_node(self, node: int | None) -> bool:
        """The server needs more CPUs than the node has: by --cpus, or by --clients."""
        near = len(self.node_cpus(node)) or self.cpus
        if self.cpus_given:
            return self.cpus > near
        return self.clients is not None and self.clients > near

    @property
    def pmem_nodes(self) -> set[int]:
        """NUMA nodes that own App Direct PMEM (regions, else namespaces)."""
        nodes = {r.get("numa_node") for r in self.pmem.get("regions") or []}
        nodes |= {n.get("numa_node") for n in self.pmem.get("namespaces") or []}
        return {n for n in nodes if isinstance(n, int) and n >= 0}

    def node_cpus(self, node: int | None) -> list[int]:
        for n in self.numa:
            if n.get("node") == node:
                return list(n.get("cpus") or [])
        return []

    @property
    def pmem_mounts(self) -> list[dict]:
        return [m for m in self.profile.get("mounts") or [] if m.get("medium") in PMEM_MEDIA]

    @property
    def pmem_capacity_bytes(self) -> int:
        """App Direct capacity: namespaces (else regions) of the profile."""
        ns = sum(int(n.get("size_bytes") or 0) for n in self.pmem.get("namespaces") or [])
        if ns:
            return ns
        return sum(int(r.get("size_bytes") or 0) for r in self.pmem.get("regions") or [])


def version_tuple(text: str) -> tuple[int, ...]:
    """A comparable version; a series without patch level ("8.0") counts as its newest
    release, as the knob catalogs do."""
    return parse_version(text, pad=True)


def flavour_for(engine: str | api.Engine, flavour: str | None, version: str | None) -> str:
    """The flavour of ``engine``: ``flavour`` when it is one of the engine's, else the
    engine's choice for ``version`` (``Engine.resolve_flavour``: MySQL's versions from 10 on
    are MariaDB; other engines take their YAML's first flavour)."""
    return api.engine_of(engine).resolve_flavour(flavour, version)


def known_engines() -> list[str]:
    """The registered engines' names (advisor/engines/*/<name>.yaml)."""
    return [s.name for s in api.specs()]


def validate_profile(profile: Any, origin: str = "profile") -> dict:
    """One-line InputError for anything that is not a pmem-advisor.probe/1 profile: the
    shape (``check_profile_shape``), then the shipped schema. For a profile that comes from
    outside (``--profile FILE``: cli/recommend.py reads it with this)."""
    check_profile_shape(profile, origin)
    import jsonschema

    from pmem_advisor import schemas

    try:  # the shipped schema is the contract for reading a profile too
        jsonschema.validate(profile, schemas.load(PROFILE_SCHEMA))
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        raise InputError(f"{origin}: not a {PROFILE_SCHEMA} profile at {where}: "
                         f"{e.message[:200]}") from None
    return profile


def check_profile_shape(profile: Any, origin: str = "profile") -> dict:
    """What the rules rely on of a profile (a JSON object of this schema version, the
    sections of the right types, finite numbers): one-line InputError otherwise. Without
    the JSON Schema check, which costs more CPU than the rest of ``check FILE`` (issue 55):
    ``build_facts`` runs this on every profile, the full check is ``validate_profile``'s, on
    the way in from a file; the probe's own output is held to the schema by the tests."""
    if not isinstance(profile, dict):
        raise InputError(f"{origin}: not a probe profile (expected a JSON object)")
    schema = profile.get("schema")
    if schema != PROFILE_SCHEMA:
        raise InputError(
            f"{origin}: schema is {schema!r}, this version reads {PROFILE_SCHEMA!r}",
            hint="re-run `pmem-advisor probe --json` with this version",
        )
    for key, kind in (("mounts", list), ("paths", list), ("numa", list), ("cpu", dict),
                      ("memory", dict), ("pmem", dict)):
        if key in profile and profile[key] is not None and not isinstance(profile[key], kind):
            raise InputError(f"{origin}: '{key}' must be a {kind.__name__}")
        if kind is list and isinstance(profile.get(key), list):
            for i, item in enumerate(profile[key]):
                if not isinstance(item, dict):
                    raise InputError(f"{origin}: '{key}[{i}]' must be an object")
    _check_numbers(profile, origin, "")
    return profile


PROFILE_NUMBER_MAX = float(1 << 64)  # bytes, counts, rates: nothing a machine has is larger
# fields that hold one number (or null) by their name: sizes, counts, rates, node ids (a
# ``sources`` object names the file each came from, under the same names)
_NUMERIC_FIELD = re.compile(r"(?<!\.sources)(?:^|\.)(?:\w*_(?:bytes|cpus|kb|ms|iops|count)|"
                            r"sockets|cores|threads|node|numa_node|page_size|block_size)$")
_NUMBER_LIST = re.compile(r"(?:^|\.)cpuset_(?:cpus|mems)$")  # CPU and node lists
_NUMBER_MAP = re.compile(r"(?:^|\.)hugetlb_\w+$")  # page size -> bytes
# named like a node id but a word: a bandwidth point's "near"/"far" (probe --bandwidth)
_NOT_NUMERIC = re.compile(r"^bandwidth\[\d+\]\.points\[\d+\]\.node$")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_numbers(value: Any, origin: str, where: str) -> None:
    """Every number of a profile is finite, not negative (-1 only for a ``*node`` field: the
    kernel's "no NUMA node") and at most 2**64: 1e400 (inf), 1e308 and -5 are refused with
    the field's path instead of crashing or printing "2.2e290 PiB" later."""
    if _NUMERIC_FIELD.search(where) and value is not None and not _NOT_NUMERIC.match(where):
        if isinstance(value, list) and _NUMBER_LIST.search(where):
            if not all(_is_number(v) for v in value):
                raise InputError(f"{origin}: '{where}' must be a list of numbers")
        elif isinstance(value, dict) and _NUMBER_MAP.search(where):
            if not all(v is None or _is_number(v) for v in value.values()):
                raise InputError(f"{origin}: '{where}' must map names to numbers")
        elif not _is_number(value):
            raise InputError(f"{origin}: '{where}' must be a number")
    if isinstance(value, dict):
        for k, v in value.items():
            _check_numbers(v, origin, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_numbers(v, origin, f"{where}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        low = -1 if where.rsplit(".", 1)[-1].endswith("node") else 0
        if not math.isfinite(value) or not low <= value <= PROFILE_NUMBER_MAX:
            why = "out of range" if math.isfinite(value) else "not finite"
            raise InputError(f"{origin}: '{where}' is {why} (a number from {low} to 2**64 "
                             "expected)")


def _norm_dax(value: Any) -> str | None:
    if value is True:
        return "always"
    if value is False:
        return "never"
    if value in ("always", "inode", "never"):
        return value
    return None


def _strip_root(path: str, root: str | None) -> str:
    path = os.path.normpath(path)
    if root:
        root = os.path.normpath(root)
        if path == root:
            return "/"
        if path.startswith(root + os.sep):
            return path[len(root):]
    return path


def _namespace_for(profile: dict, device: str | None) -> dict | None:
    if not device:
        return None
    dev = os.path.basename(device)
    for ns in (profile.get("pmem") or {}).get("namespaces") or []:
        if dev and dev in (ns.get("blockdev"), ns.get("chardev")):
            return ns
    return None


def resolve_path(profile: dict, path: str, role: str, root: str | None = None) -> PathFacts:
    """Find a path's mount and medium: an exact ``paths[]`` entry, else the longest mountpoint."""
    path = _strip_root(path, root)
    for entry in profile.get("paths") or []:
        if _strip_root(str(entry.get("path", "")), root) == path:
            return _path_facts(profile, role, path, entry, "path")
    best = None
    for m in profile.get("mounts") or []:
        mp = _strip_root(str(m.get("mountpoint") or ""), root)
        if not mp:
            continue
        if path == mp or path.startswith(mp.rstrip("/") + "/") or mp == "/":
            if best is None or len(mp) > len(best[0]):
                best = (mp, m)
    if best is None:
        return PathFacts(role=role, path=path, matched="none")
    mount = dict(best[1])
    mount["mountpoint"] = best[0]
    return _path_facts(profile, role, path, mount, "mount")


def _path_facts(profile: dict, role: str, path: str, e: dict, matched: str) -> PathFacts:
    medium = e.get("medium") or "unknown"
    fstype = e.get("fstype")
    device = e.get("base_device") or e.get("device")
    ns = _namespace_for(profile, e.get("base_device")) or _namespace_for(profile, e.get("device"))
    numa = e.get("numa_node")
    if numa is None and ns is not None:
        numa = ns.get("numa_node")
    emulated = bool(e.get("emulated_pmem")) or medium == "tmpfs" or fstype == "tmpfs"
    size = (ns or {}).get("size_bytes") or e.get("size_bytes") or e.get("total_bytes")
    return PathFacts(
        role=role,
        path=path,
        mountpoint=e.get("mountpoint"),
        fstype=fstype,
        device=device,
        medium="tmpfs" if fstype == "tmpfs" and medium == "unknown" else medium,
        dax=_norm_dax(e.get("dax")),
        block_size=e.get("block_size"),
        numa_node=numa,
        emulated_pmem=emulated,
        namespace_mode=ns.get("mode") if ns else None,
        namespace=ns.get("name") if ns else None,
        size_bytes=int(size) if size else None,
        matched=matched,
        medium_source=e.get("medium_source"),
        medium_note=e.get("medium_note"),
        measured=e.get("measured"),
    )


MEDIA = ("pmem", "cxl", "nvme", "ssd", "hdd", "tmpfs")
TARGET_DATA_DIR = "<data dir>"  # --medium without --data-dir: the target's, path unknown


def with_medium(p: PathFacts, medium: str) -> PathFacts:
    """The path with the user's --medium instead of what the profile says."""
    if medium not in MEDIA:
        raise UsageError(f"--medium {medium!r} is not one of {', '.join(MEDIA)}")
    return replace(p, medium=medium, emulated_pmem=medium == "tmpfs", matched="path",
                   medium_source="override", medium_note=f"medium {medium} from --medium")


def parse_media(text: str | None, data_dir: str | None,
                wal_dir: str | None) -> tuple[str | None, str | None]:
    """--medium CLASS (the data directory's) or PATH=CLASS[,PATH=CLASS] -> (data's, WAL's)."""
    if not text:
        return None, None
    for item in text.split(","):  # every class, also one no directory is given for
        cls = item.rpartition("=")[2].strip()
        if cls not in MEDIA:
            raise UsageError(f"--medium {cls!r} is not a medium: use one of {', '.join(MEDIA)}")
    if "=" not in text:
        return text.strip(), None
    found: dict[str, str] = {}
    for item in text.split(","):
        path, _, cls = item.partition("=")
        path = os.path.normpath(path.strip())
        if path not in {os.path.normpath(d) for d in (data_dir, wal_dir) if d}:
            raise UsageError(f"--medium {item.strip()}: {path} is neither --data-dir nor "
                             "--wal-dir")
        found[path] = cls.strip()
    norm = {os.path.normpath(d): role for role, d in (("data", data_dir), ("wal", wal_dir)) if d}
    by_role = {norm[p]: c for p, c in found.items()}
    return by_role.get("data"), by_role.get("wal")


def unmatched_note(p: PathFacts) -> str | None:
    """The warning for a path the profile does not know that fell back to the root mount (or
    to nothing): its medium is then a guess, never silently."""
    if p.matched == "path" or (p.matched == "mount" and p.mountpoint not in ("/", None)):
        return None
    where = (f"its longest mount prefix {p.mountpoint} ({p.fstype or '?'}, medium {p.medium})"
             if p.matched == "mount" else "no mount at all")
    return (f"{p.role} directory {p.path} is not among the profile's probed paths; it was "
            f"matched to {where}: if it lives elsewhere, give the real mount (probe --path "
            f"{p.path} on that host) or pass --medium")


def build_facts(profile: dict, *, engine: str | None, flavour: str | None = None,
                version: str | None = None, workload: str = "oltp",
                data_dir: str | None = None, wal_dir: str | None = None,
                memory_bytes: int | None = None, cpus: int | None = None,
                clients: int | None = None, allow_unsafe: bool = False,
                root: str | None = None, medium: str | None = None,
                numa_node: int | None = None, features=(),
                interleave_cpuless: bool = False, target: bool = False,
                storage_engine: str | None = None) -> Facts:
    """Facts for the rules; raises UsageError/InputError with one line on bad input.

    ``target``: ``--memory``/``--cpus``/``--medium`` describe the host the config is for,
    whatever the probed machine has (recommend, check); see rules.budget.effective_budget."""
    check_profile_shape(profile)
    if engine is not None and engine not in known_engines():
        raise UsageError(f"engine {engine!r} is not one of {', '.join(known_engines())}")
    if workload not in WORKLOADS:
        raise UsageError(f"workload {workload!r} is not one of {', '.join(WORKLOADS)}")
    for name, v in (("memory", memory_bytes), ("cpus", cpus), ("clients", clients)):
        if v is not None and v <= 0:
            raise UsageError(f"--{name} must be positive, got {v}")
    fl = flavour_for(engine, flavour, version) if engine else None
    cpu = profile.get("cpu") or {}
    logical = int(cpu.get("threads") or os.cpu_count() or 1)
    physical = int(cpu.get("cores") or logical)
    mem, use_cpus, mem_source, notes = _budget(profile, memory_bytes, cpus, numa_node, logical,
                                               target)
    if use_cpus > logical:  # a bigger target host: this machine's share of cores per thread
        physical = max(1, use_cpus * physical // logical)
    if not mem:
        raise InputError("profile has no memory.total_bytes; pass --memory SIZE")
    data_medium, wal_medium = parse_media(medium, data_dir, wal_dir)
    data = resolve_path(profile, data_dir, "data", root) if data_dir else None
    if data is None and data_medium:  # the target's medium, wherever its data directory is
        data = PathFacts(role="data", path=TARGET_DATA_DIR)
    if data is not None and data_medium:
        data = with_medium(data, data_medium)
    if wal_dir:
        wal = resolve_path(profile, wal_dir, "wal", root)
        if wal_medium:
            wal = with_medium(wal, wal_medium)
    elif data is not None:  # the WAL/redo stays inside the data directory
        wal = replace(data, role="wal")
    else:
        wal = None
    for p in (data, wal if wal_dir else None):
        note = unmatched_note(p) if p is not None else None
        if note:
            notes.append(note)
    facts = Facts(
        profile=profile,
        engine=engine,
        flavour=fl,
        version=version,
        workload=workload,
        memory_bytes=mem,
        cpus=use_cpus,
        physical_cores=min(physical, use_cpus) if use_cpus < logical else physical,
        sockets=int(cpu.get("sockets") or 1),
        clients=clients,
        allow_unsafe=allow_unsafe,
        cpus_given=cpus is not None,
        data=data,
        wal=wal,
        page_size=int((profile.get("host") or {}).get("page_size") or 4096),
        notes=notes,
        memory_source=mem_source,
        features=frozenset(features),
        interleave_cpuless=interleave_cpuless,
        storage_engine=storage_engine,
    )
    if numa_node is not None:
        facts = replace(facts, bound_node=numa_node)
    return facts


def _budget(profile: dict, memory_bytes: int | None, cpus: int | None, numa_node: int | None,
            logical: int, target: bool = False) -> tuple[int, int, str, list[str]]:
    """Memory and CPUs the server gets: PROBE's effective budget (cgroup, cpuset, node, the
    user's flags) when rules/budget.py is there, else the host's or the user's values."""
    try:
        from pmem_advisor.rules.budget import effective_budget
    except ImportError:  # pragma: no cover - the budget module ships with the rules
        mem = memory_bytes or int((profile.get("memory") or {}).get("total_bytes") or 0)
        return mem, cpus or logical, "--memory" if memory_bytes else "host", []
    b = effective_budget(profile, memory_bytes=memory_bytes, cpus=cpus, numa_node=numa_node,
                         target=target)
    notes = [f"budget: {line}" for line in b.describe()
             if b.memory_source != "host MemTotal" or not line.startswith(("memory:", "cpus:"))]
    return b.memory_bytes, b.whole_cpus, b.memory_source, notes


def bind_to_node(f: Facts, node: int, why: str) -> Facts:
    """The facts re-sized for a server bound to ``node`` (numactl --membind/--cpunodebind):
    memory and CPUs become that node's (or less, when the budget was already tighter)."""
    mem, cpus, src, notes = _budget(f.profile, f.memory_bytes, f.cpus if f.cpus_given else None,
                                    node, f.logical_total)
    cores = min(f.cores_near(node), cpus)
    note = (f"{why}: every memory and CPU knob is sized from node {node} "
            f"({mem / (1 << 30):.1f} GiB, {cpus} CPUs, {cores} cores), not the whole machine")
    return replace(f, memory_bytes=mem, cpus=cpus, physical_cores=cores,
                   bound_node=node, memory_source=src, notes=[*f.notes, note])
