"""What `recommend` decides: the profile, the target server, the rules' recommendation, the
refusal of a budget nothing fits, and the config text (conf or SQL) it writes."""

from __future__ import annotations

import json
import os

from pmem_advisor.errors import InputError, UsageError
from pmem_advisor.knobs.units import parse_bytes
from pmem_advisor.library.target import resolve_engine
from pmem_advisor.report.describe import EMULATION_NOTE

MIB = 1 << 20
PROFILE_CAP = 64 << 20  # a probe profile is kilobytes; anything this big is the wrong file
# No host has more: x86-64 and arm64 address at most 52 bits (4 PiB) of physical memory.
MAX_HOST_MEMORY = 1 << 52


def load_profile(profile: str | None, root: str | None, paths: list[str]) -> dict:
    """A profile from a JSON file, from a machine tree or a snapshot .tar.gz (``--root``), or
    from this machine."""
    if profile and root:
        raise UsageError("give either --profile or --root, not both")
    if profile:
        try:
            with open(profile, "rb") as f:
                raw = f.read(PROFILE_CAP + 1)
        except OSError as e:
            raise InputError(f"{profile}: cannot read: {e.strerror}") from None
        if len(raw) > PROFILE_CAP:
            raise InputError(f"{profile}: larger than {PROFILE_CAP >> 20} MiB: not a probe profile")
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise InputError(f"{profile}: not text (binary data): not a probe profile") from None
        except json.JSONDecodeError as e:
            raise InputError(f"{profile}:{e.lineno}: not JSON: {e.msg}") from None
        from pmem_advisor.rules.facts import validate_profile

        return validate_profile(data, profile)
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.snapshot import open_root
    from pmem_advisor.probes.sysaccess import SysAccess

    # --root: a tree shaped like / or a snapshot .tar.gz (`probe --save`), as probe takes it
    return probe(open_root(root) if root is not None else SysAccess("/"),
                 [p for p in paths if p])


def split_engine(engine: str) -> tuple[str, str | None]:
    """An engine name or alias -> (engine, flavour it picks): 'pg' -> ('postgres',
    'postgresql'), 'mariadb' -> ('mysql', 'mariadb'), 'mysql' -> ('mysql', None). The names
    are data (advisor/engines/*/<name>.yaml); UsageError for an unknown one."""
    return resolve_engine(engine, None)


def mysql_means_mysql(engine: str, flavour: str | None) -> str | None:
    """``mysql`` without a version targets MySQL (the installed one, else the newest LTS the
    catalogs know), never the MariaDB that happens to be installed: MariaDB when asked for
    (``mariadb``, ``--flavour mariadb``, or a 10.x/11.x ``--version``)."""
    return "mysql" if engine == "mysql" and flavour is None else flavour


def installed_version(engine: str, flavour: str | None) -> tuple[str | None, str | None]:
    """The best installed server's (flavour, version), when --version is not given."""
    from pmem_advisor.engines.registry import get_engine

    return get_engine(engine).installed_version(flavour)


def parse_memory(text: str) -> int:
    """--memory: a size with a unit; a bare number below 1 MiB is surely missing its unit, and
    more than any host can address is surely a typo. Any other size is a target host's RAM,
    whatever this machine has (rules.budget.effective_budget's ``target``)."""
    n = parse_bytes(text, "--memory")
    if str(text).strip().isdigit() and n < MIB:
        raise UsageError(f"--memory {text}: a bare number is bytes, which cannot be meant; "
                         f"give a unit, e.g. --memory {text.strip()}G")
    if n > MAX_HOST_MEMORY:
        raise UsageError(f"--memory {text}: more RAM than any host can address "
                         "(4 PiB, 52-bit physical addresses)")
    return n


def refuse_control_characters(flag: str, path: str | None) -> None:
    """A path with a newline or other control character would become a second line in the
    config file's comments and in the shell commands of the OS steps: refuse it."""
    if path and any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise UsageError(f"{flag} {path!r}: the path holds a control character (newline, tab "
                         "...); rename the directory")


def build_recommendation(engine: str, *, profile=None, root=None, version=None, workload="oltp",
                         memory=None, cpus=None, data_dir=None, wal_dir=None, clients=None,
                         allow_unsafe=False, medium=None, interleave_cpuless=False):
    """The rules' recommendation (``rules.Recommendation``) for ``engine`` on this machine, a
    probe profile (``profile``: a JSON file) or a machine tree (``root``), sized for the target
    the flags describe (``memory``: "64G", ``cpus``, ``clients``, ``medium``). UsageError /
    InputError (exit 2) for bad input and a budget nothing fits; EnvironmentProblem (exit 3)
    when this machine cannot be read."""
    from pmem_advisor.rules import build_facts, recommend
    from pmem_advisor.rules.budget import target_line

    eng, flavour = split_engine(engine)
    for flag, path in (("--data-dir", data_dir), ("--wal-dir", wal_dir)):
        refuse_control_characters(flag, path)
    given_version = version
    target_note = None
    if version is None:
        flavour, version = installed_version(eng, mysql_means_mysql(eng, flavour))
        if eng == "mysql" and flavour == "mysql" and version is None:
            from pmem_advisor.knobs.catalog import load_catalog

            version = load_catalog("mysql", "mysql", None).version
            target_note = (f"target: MySQL {version}, the newest LTS the catalogs know (no MySQL "
                           "server here; --version chooses another, `recommend mariadb` "
                           "targets MariaDB)")
    memory_bytes = parse_memory(memory) if memory else None
    live = profile is None and root is None
    prof = load_profile(profile, root, [data_dir, wal_dir])
    # the target build's features (lz4) from the server installed here; another host's
    # (--profile/--root) are not this host's build: unknown there
    from pmem_advisor.engines.api import get_engine

    features = get_engine(eng).build_features(flavour, version) if live else frozenset()
    facts = build_facts(prof, engine=eng, flavour=flavour, version=version, workload=workload,
                        features=features,
                        data_dir=data_dir, wal_dir=wal_dir, memory_bytes=memory_bytes, cpus=cpus,
                        clients=clients, allow_unsafe=allow_unsafe, root=root, medium=medium,
                        interleave_cpuless=interleave_cpuless, target=True)
    if live:
        for p, given in ((facts.data, data_dir), (facts.wal, wal_dir)):
            if given and p is not None and not os.path.exists(given) and \
                    p.medium_source != "override" and p.mountpoint in ("/", None):
                raise UsageError(
                    f"{p.role} directory {given} does not exist here; it would be sized for the "
                    f"root filesystem / (medium {p.medium})",
                    hint="create it on its real mount first, or pass --medium "
                         "pmem|nvme|ssd|hdd|cxl|tmpfs")
    rec = recommend(facts)
    refuse_unfittable(rec)
    line = target_line(memory=memory_bytes, cpus=cpus, medium=medium, version=given_version,
                       flavour=facts.flavour, probed="this machine" if live else
                       "the profile" if profile else f"the tree {root}")
    if line:
        rec.notes.insert(0, line)
    if target_note:
        rec.notes.insert(0, target_note)
    if root is not None:  # a machine tree: say when a directory is not in it (never silently /)
        snapshot = os.path.isfile(root)  # holds only what the probe read: no directory to test
        for p, given in ((facts.data, data_dir), (facts.wal, wal_dir)):
            inside = os.path.join(root, str(given or "").lstrip("/"))
            if given and p is not None and p.mountpoint in ("/", None) and \
                    (snapshot or not os.path.lexists(inside)):
                where = (f"is on no mount of the snapshot {root} but /" if snapshot
                         else f"does not exist in {root}")
                rec.notes.append(f"{p.role} directory {given} {where}: sized "
                                 f"for its root filesystem (medium {p.medium}); give the real "
                                 "mount or --medium")
    return rec


def refuse_unfittable(rec) -> None:
    """A budget whose worst case nothing fits, even at the smallest per-connection memory, is
    bad input (exit 2) naming the smallest budget that fits the same connections (and the
    most clients this budget holds): a file our own check fails is never written."""
    from pmem_advisor.probes.summary import human_bytes
    from pmem_advisor.rules.budget_search import most_clients_that_fit, smallest_fitting_budget
    from pmem_advisor.rules.fit import fitted_budget

    est, f = rec.memory, rec.facts
    if est is None or est.total_bytes <= fitted_budget(f.memory_bytes):
        return
    need = smallest_fitting_budget(f)
    per_session = est.per_connection_bytes > 0 and est.connections > 1
    asked = ("" if not per_session else f" --clients {f.clients} ({est.connections} "
             "connections with the reserved)" if f.clients else f" {est.connections} connections")
    where = (f"the smallest budget that fits{asked} is {human_bytes(need)}: --memory "
             f"{_memory_flag(need)}" if need else f"no budget fits{asked}")
    hint = None
    if per_session:
        most = most_clients_that_fit(f)
        hint = (f"or at most --clients {most} within {human_bytes(f.memory_bytes)}, pooled "
                "(pgbouncer / a thread pool)" if most else
                "not even one client fits: give more memory")
    raise UsageError(f"nothing fits {human_bytes(f.memory_bytes)} of memory ({f.memory_source})"
                     f": even at the smallest per-connection memory the worst case is "
                     f"{human_bytes(est.total_bytes)}; {where}", hint=hint)


def _memory_flag(n: int) -> str:
    return f"{n >> 30}G" if n % (1 << 30) == 0 else f"{-(-n // MIB)}M"


def emit(rec, fmt: str = "conf") -> str:
    """The config text (``conf``) or the statements that apply it (``sql``) through the
    knobs emitters, every line with its rule and reason."""
    from pmem_advisor.knobs.emit import Header, Setting, emit_config, emit_sql

    f = rec.facts
    notes = list(rec.header_notes())
    notes += [f"{s.rule}: {'DESTRUCTIVE ' if s.destructive else ''}{s.command}  # {s.reason}"
              for s in rec.os_steps]
    notes += [f"withheld {w.name} = {w.text} ({w.rule}): {w.reason}" for w in rec.withheld]
    if f.emulated:
        notes.insert(0, EMULATION_NOTE)
    fp = (f.profile.get("host") or {}).get("hostname") or "unknown"
    header = Header(fingerprint=str(fp), flavour=f.flavour or "", version=f.version or "",
                    notes=tuple(notes), steps=tuple(rec.os_steps), findings=tuple(rec.findings))
    settings = [Setting(s.name, s.value, f"{s.rule} [{', '.join(s.insights)}] {s.reason}"
                        if s.insights else f"{s.rule}: {s.reason}") for s in rec.settings]
    if fmt == "sql":
        return emit_sql(f.engine, settings, header).text
    return emit_config(f.engine, settings, header).text


def write_config(rec, path: str) -> str | None:
    """Write the config text to ``path`` through the descriptor layer, keeping a previous file
    as a backup; the backup's name, or None when there was no file."""
    from pmem_advisor.fileio import write_keeping_backup

    return write_keeping_backup(path, emit(rec))
