"""`check` as a library: the host, config files and a running server checked against the
papers' rules and the pre-deployment checks, as one report the CLI only renders (issue 55)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace

from pmem_advisor.engines.registry import get_engine
from pmem_advisor.errors import AdvisorError, EnvironmentProblem, InputError, UsageError
from pmem_advisor.gate.config import read_config, sniff_config
from pmem_advisor.gate.files import (
    PROJECT_FILE,
    FileSpec,
    engine_and_paths,
    expand,
    find_project,
    header_of,
    load_project,
    shape_engine,
)
from pmem_advisor.gate.report import (
    CheckReport,
    FileError,
    GateFinding,
    SkippedFile,
    TargetResult,
)
from pmem_advisor.library.recommend import (
    installed_version,
    load_profile,
    parse_memory,
    split_engine,
)


@dataclass
class CheckTarget:
    """What is checked: the engine and version, and the settings with where they came from."""

    engine: str | None
    flavour: str | None
    version: str | None = None
    data_dir: str | None = None
    wal_dir: str | None = None
    settings: dict = field(default_factory=dict)
    source: str = "none"  # config | server | none
    where: dict = field(default_factory=dict)
    loose: frozenset = frozenset()
    status: dict | None = None
    server_names: frozenset | None = None
    pid: int | None = None
    files: list[str] = field(default_factory=list)  # the config file and its includes
    tier_paths: list[str] = field(default_factory=list)  # where its objects live (CK030)


@dataclass
class Options:
    """The run's inputs, as the CLI's flags give them."""

    db: str | None = None
    version: str | None = None
    profile: str | None = None
    root: str | None = None
    data_dir: str | None = None
    wal_dir: str | None = None
    memory: str | None = None
    cpus: int | None = None
    clients: int | None = None
    medium: list[str] = field(default_factory=list)
    no_measure: bool = False
    diff: bool = False
    workload: str = "oltp"
    allow_unsafe: bool = False
    fail_on: str = "fail"


def check(paths: list[str] = (), *, config: str | None = None, dsn: str | None = None,
          project: str | bool | None = None, baseline: str | None = None, **flags) -> CheckReport:
    """Check the host alone, a running server (``dsn``), one ``config`` file, or many
    ``paths`` (files, directories, globs) in one run; a first path that names an engine and
    is no file is the engine (``check mysql my.cnf``), as ``db=`` says it. ``project``: a
    ``.pmem-advisor.toml`` path, False for none, None to find one upward from the working
    directory. With a
    single target (the host, a server, one file) a bad input raises its typed error; among
    many files each bad one is a ``FileError`` in the report and the others are checked."""
    from pmem_advisor.gate.suppress import apply_baseline, apply_suppressions

    db, paths = engine_and_paths(list(paths), flags.pop("db", None))
    opt = Options(db=db, **flags)
    if opt.fail_on not in ("warn", "fail"):
        raise UsageError(f"--fail-on {opt.fail_on!r}: use warn or fail")
    if opt.diff and not dsn:
        raise UsageError("--diff compares a running server with recommend: give --dsn")
    report = CheckReport(fail_on=opt.fail_on)
    proj = None
    if project is not False and (paths or config):
        found = project if isinstance(project, str) else find_project()
        proj = load_project(found) if found else None
    specs, errors = [], []
    if config:
        specs.append(FileSpec(config, f"--config {config}"))
    files, errors = expand(list(paths))
    excluded = [f for f, _ in files if proj is not None and proj.excludes(f)]
    specs += [FileSpec(f, f, found=found) for f, found in files if f not in excluded]
    if excluded:  # a file named on the command line too (pre-commit names each file)
        report.notes.append(f"{len(excluded)} file(s) excluded by {proj.path}: "
                            + ", ".join(excluded[:5]) + (" ..." if len(excluded) > 5 else ""))
    if dsn and len(specs) > 1:
        raise UsageError("--dsn checks one running server: give at most one config file")
    single = len(specs) + len(errors) <= 1
    if proj is not None and not single:
        report.notes.append(f"project file: {proj.path}")
    if single and errors:
        raise errors[0][1]
    report.errors += [FileError(p, e) for p, e in errors]
    shared: dict = {}
    for spec in specs or ([] if paths or config else [None]):  # the host alone: no path
        if spec is not None and proj is not None:
            proj.apply(spec)
        try:
            result, notes = _check_one(spec, dsn, opt, shared, many=not single)
        except UnknownEngine as e:
            if not e.skippable or not spec.found:  # a file named on the command line
                if single:
                    raise
                report.errors.append(FileError(spec.path, e))
                continue
            report.skipped_files.append(SkippedFile(spec.path, e.reason))  # a walk's nginx.conf
            continue
        except AdvisorError as e:
            if single:
                raise
            report.errors.append(FileError(spec.path, e))
            continue
        report.targets.append(result)
        for n in notes:
            if n not in report.notes:
                report.notes.append(n)
        if spec is not None and spec.skip:
            kept = [f for f in result.findings if f.rule not in spec.skip]
            report.skipped += len(result.findings) - len(kept)
            result.findings = kept
    if not single:
        _drop_included(report)
    report.notes += [f"{s.file}: skipped: {s.why}; say it in {PROJECT_FILE} or exclude it "
                     "there" for s in report.skipped_files]
    if report.skipped_files and not report.targets and not report.errors:
        raise InputError(f"{', '.join(paths)}: no config file "
                         + (f"of --db {db} " if db else "whose engine can be told ")
                         + f"({len(report.skipped_files)} skipped: "
                         f"{', '.join(s.file for s in report.skipped_files[:3])}"
                         f"{' ...' if len(report.skipped_files) > 3 else ''})",
                         hint=f"name the file, or its engine in {PROJECT_FILE}" if db else
                         f"say the engine with --db or in {PROJECT_FILE}")
    if report.emulated:  # the caveat reaches every output
        from pmem_advisor.report.describe import EMULATION_NOTE

        report.notes.insert(0, EMULATION_NOTE.removeprefix("note: "))
    findings = _merge(report.targets)
    findings, report.suppressed, warnings = apply_suppressions(findings, opt.allow_unsafe)
    findings += warnings
    if baseline:
        findings, report.baselined = apply_baseline(findings, baseline, opt.allow_unsafe)
    from pmem_advisor.rules.model import severity_rank

    report.findings = sorted(findings, key=lambda f: (-severity_rank(f.severity), f.file or "",
                                                      f.line or 0, f.rule, f.key))
    return report


def _drop_included(report: CheckReport) -> None:
    """A file that another checked file includes (`!includedir conf.d`, `include_dir`) is
    part of that file's configuration, as the server reads it: checked alone it would be a
    fragment judged on defaults (its own memory sum with the default connections), or refused
    as no config at all (a `[mysql]` client fragment, a comment-only placeholder). It is
    checked once, through its includer, and a note says so."""
    real = {os.path.realpath(t.file): t.file for t in report.targets if t.file}
    real.update((os.path.realpath(e.file), e.file) for e in report.errors)
    real.update((os.path.realpath(s.file), s.file) for s in report.skipped_files)
    by = {}
    for t in report.targets:
        for f in t.files:
            r = os.path.realpath(f)
            if t.file and r != os.path.realpath(t.file) and r in real:
                by.setdefault(r, t.file)
    if not by:
        return
    report.targets = [t for t in report.targets
                      if not (t.file and os.path.realpath(t.file) in by)]
    report.errors = [e for e in report.errors if os.path.realpath(e.file) not in by]
    report.skipped_files = [s for s in report.skipped_files
                            if os.path.realpath(s.file) not in by]
    gone = tuple(f"{real[r]}: " for r in by)
    report.notes = [n for n in report.notes if not n.startswith(gone)]
    for r, includer in sorted(by.items()):
        report.notes.append(f"{real[r]}: checked as part of {includer}, which includes it")


def _merge(targets: list[TargetResult]) -> list[GateFinding]:
    """Every target's findings; a host finding (the same on every file) once."""
    seen, out = set(), []
    for t in targets:
        for f in t.findings:
            k = (f.rule, f.severity, f.key, f.reason, f.file)
            if k not in seen:
                seen.add(k)
                out.append(f)
    return out


def _check_one(spec: FileSpec | None, dsn: str | None, opt: Options, shared: dict, *,
               many: bool) -> tuple[TargetResult, list[str]]:
    """One target through the rules and the checks; ``shared`` holds what every file of the
    run has in common (the host's probe profile)."""
    from pmem_advisor.rules import build_facts
    from pmem_advisor.rules import check as rules_check
    from pmem_advisor.rules.budget import target_line
    from pmem_advisor.rules.checks import build_input, run_checks

    notes: list[str] = []
    db, version = opt.db, opt.version
    memory, cpus = opt.memory, opt.cpus
    said = "--db" if db else ""
    if spec is not None:
        head = header_of(spec.path) if os.path.isfile(spec.path) else None
        if db is None and head is not None:
            db, said = head[0], "its first line"
            version = version or head[1]
        if db is None and spec.db is not None:
            db, said = spec.db, spec.said_by
        version = version or spec.version
        memory = memory or spec.memory
        cpus = cpus or spec.cpus
        if db is None:
            db = shape_engine(spec.path)
            said = "its name" if db else ""
    try:
        engine, flavour = split_engine(db) if db else (None, None)
    except UsageError as e:
        raise UsageError(f"{spec.label}: {e.message} (said by {said})" if spec else e.message,
                         hint=e.hint) from None
    t = CheckTarget(engine, flavour, version=version, data_dir=opt.data_dir,
                    wal_dir=opt.wal_dir)
    if dsn:
        _use_server(t, dsn, opt.db, elsewhere_ok=opt.profile is not None or opt.root is not None,
                    notes=notes)
    if spec is not None:  # --db mysql names MySQL (not the family) when no server decides it
        _use_config(t, spec, notes, mysql_named=not dsn and (db or "").lower() == "mysql",
                    blanket=db if spec.found and said == "--db"
                    and not shape_engine(spec.path) else None)  # a postgresql.conf is one
    memory_bytes = parse_memory(memory) if memory else None
    classes = [m for m in opt.medium or [] if "=" not in m]  # the target's data medium
    if len(classes) > 1:
        raise UsageError(f"--medium {' and '.join(classes)}: give the data medium once")
    key = (t.data_dir, t.wal_dir, t.pid)
    if key not in shared:
        shared[key] = _profile(t, opt, [m for m in opt.medium or [] if "=" in m], notes)
    prof = shared[key]
    # the target build's features (lz4) from the server installed here, as recommend reads
    # them; another host's (--profile/--root) build is not this host's: unknown there
    local = opt.profile is None and opt.root is None
    features = (get_engine(t.engine).build_features(t.flavour, t.version)
                if t.engine and local else frozenset())
    medium = classes[0] if classes else None
    facts = build_facts(prof, engine=t.engine, flavour=t.flavour, version=t.version,
                        features=features, data_dir=t.data_dir, wal_dir=t.wal_dir,
                        root=opt.root, workload=opt.workload, memory_bytes=memory_bytes,
                        cpus=cpus, clients=opt.clients, allow_unsafe=opt.allow_unsafe,
                        medium=medium, target=True)
    line = target_line(memory=memory_bytes, cpus=cpus, medium=medium,
                       version=version if t.source != "server" else None,
                       flavour=facts.flavour, probed="the profile" if opt.profile else
                       f"the tree {opt.root}" if opt.root else "this machine", verb="checks")
    if line:
        notes.insert(0, line)
    for p in facts.placed:  # the medium under each path, and how it is known (issue 19)
        note = getattr(p, "medium_note", None)
        if note and f"{p.path}: {note}" not in [n.partition(" ")[2] for n in notes]:
            notes.append(f"{p.role} {p.path}: {note}")
    server_cpus, nodes = _server_binding(t.pid)
    if server_cpus is not None:
        facts = replace(facts, server_cpus=server_cpus)
    inp, rule_facts = build_input(facts, t.settings, source=t.source, where=t.where,
                                  loose=t.loose, status=t.status, server_names=t.server_names,
                                  memory_bytes=memory_bytes, cpus=cpus, target=True,
                                  nodes=nodes, notes=notes)
    found = run_checks(inp, rules_check(rule_facts, t.settings or None, catalog=inp.catalog))
    rows = None
    if opt.diff and inp.advice is not None:  # sized for the server's own max_connections
        from pmem_advisor.gate.diff import server_diff

        rows = server_diff(inp.advice, t.settings, inp.catalog, facts.flavour, facts.version)
    elif opt.diff:
        raise EnvironmentProblem("--diff: the rules could not size this server (see notes)")
    if many and spec is not None:  # which file a note is about, among many
        notes = [n if n.startswith(spec.path) else f"{spec.path}: {n}" for n in notes]
    result = TargetResult(
        file=spec.path if spec else None, engine=facts.engine, flavour=facts.flavour,
        version=facts.version, source=inp.source, files=list(t.files),
        findings=[_locate(f, t.where, spec.path if spec else None) for f in found],
        budget=inp.budget.describe() if inp.budget else None,
        memory=inp.memory.to_dict(inp.budget.cpus if inp.budget else None)
        if inp.memory else None, diff=rows, emulated=facts.emulated)
    if inp.memory is not None:
        from pmem_advisor.rules.memory import gib

        cpus_ = inp.budget.cpus if inp.budget else None
        result.memory_lines = [inp.memory.describe(),
                               f"{gib(inp.memory.static_bytes)} allocated at start; "
                               f"{inp.memory.describe_peak(cpus_)}"]
    return result, notes


def _locate(f, where: dict, file: str | None) -> GateFinding:
    """The file and line that set the finding's key (the included file's, through includes);
    a finding about several keys (memory) at the first of them its message names; a host
    finding at no file."""
    loc = where.get(f.subject)
    if loc is None and file is not None:
        named = [n for n in where if re.search(rf"(?<![\w.]){re.escape(n)}(?![\w.])", f.message)]
        loc = where[named[0]] if named else None
    path, line = None, None
    if loc:
        path, _, num = str(loc).rpartition(":")
        if num.isdigit():
            line = int(num)
        else:
            path = str(loc)
    elif file is not None and f.rule.startswith("CK") and _about_the_file(f.rule):
        path = file
    return GateFinding(f.rule, f.severity, f.subject, f.message, f.fix, tuple(f.insights),
                       path, line, getattr(f, "risk", False))


def _about_the_file(rule: str) -> bool:
    """A check of the config's settings (any engine-specific check), not of the host."""
    from pmem_advisor.rules.checks import get_check

    try:
        return bool(get_check(rule).engines)
    except KeyError:
        return False


def _use_server(t: CheckTarget, dsn: str, db: str | None, *, elsewhere_ok: bool,
                notes: list[str]) -> None:
    """The running server's settings, counters, version and (on this host) paths and pid."""
    from pmem_advisor.connection import dsn_engine
    from pmem_advisor.instances.live import is_local, read_server  # --dsn only (issue 55)

    if t.engine not in (None, "postgres", "mysql"):
        raise UsageError(f"--dsn reads a running PostgreSQL or MySQL/MariaDB server, not "
                         f"{t.engine}", hint=f"check its config with --db {t.engine} "
                         "--config FILE")
    dsn_eng = dsn_engine(dsn)
    if t.engine and dsn_eng != t.engine and "://" in dsn:
        raise UsageError(f"--dsn is a {dsn_eng} DSN but --db is {t.engine}")
    server = read_server(dsn, t.engine or dsn_eng)
    t.engine = server["engine"]
    if t.flavour and t.flavour != server["flavour"]:
        raise UsageError(f"--db {db}: the server at the DSN is {server['flavour']} "
                         f"{server['version']}")
    if t.version and server["version"] and not server["version"].startswith(t.version):
        notes.append(f"--version {t.version} ignored: the server runs {server['version']}")
    t.flavour, t.version = server["flavour"], server["version"]
    t.settings, t.source, t.status = server["settings"], "server", server["status"]
    t.server_names = frozenset(t.settings) if t.engine == "postgres" else None
    if is_local(dsn, t.engine):
        t.data_dir = t.data_dir or server["data_dir"]
        t.wal_dir = t.wal_dir or server["wal_dir"]
        t.pid = server["pid"]
        notes.extend(server.get("notes") or ())  # what an ordinary user could not read
        _use_tiers(t, dsn, server, notes)
    elif not elsewhere_ok:
        notes.append("the server runs on another host: its paths, memory and PMEM are not "
                     "this host's; run `pmem-advisor probe --save` there and pass --profile")


def _use_tiers(t: CheckTarget, dsn: str, server: dict, notes: list[str]) -> None:
    """Per-object I/O, size and location of a server on this host (CK030), read as `place`
    reads them; its locations join the probed paths, so the profile classifies their media."""
    from pmem_advisor.rules.checks.CK030_hot_object_on_slow_tier import (
        TIERS_KEY,
        read_tiers,
        tier_paths,
    )

    tiers = read_tiers(dsn, server, notes)
    if tiers is not None:
        t.status = {**(t.status or {}), TIERS_KEY: tiers}
        t.tier_paths = tier_paths(tiers)


def _server_binding(pid: int | None) -> tuple:
    """A live server's CPUs and nodes; a config file (no pid) imports no instance code."""
    if not pid:
        return None, None
    from pmem_advisor.instances.live import server_binding

    return server_binding(pid)


def _use_config(t: CheckTarget, spec: FileSpec, notes: list[str], *,
                mysql_named: bool = False, blanket: str | None = None) -> None:
    """A config file's settings (over a running server's), for the target or the installed
    server's version (said in a note). ``blanket`` (the --db given): a walk or a glob found
    the file, its name (postgresql.conf, *.cnf) says no engine, and only the command line's
    --db names one, which says what the
    database's files are, not that every file beside them is one (Debian's
    /etc/postgresql/15/main holds pg_hba.conf, pg_ctl.conf and start.conf): its text must
    show it is that engine's config, else it is skipped as a file no source tells the engine
    of."""
    by_content = t.engine is None  # nothing but the text says the engine
    if by_content:
        t.engine, groups = sniff_config(spec.path, spec.label)
        others = [g for g in groups if not _MYSQL_GROUP.search(g)]
        if groups and len(others) == len(groups):  # [Service] of a systemd drop-in, smb.conf
            raise _unknown_engine(spec, f"its [{others[0]}] group is no MySQL/MariaDB "
                                  "program's, and it has no other")
    if t.version is None and get_engine(t.engine).kind == "advice":
        pass  # nothing runs here: the rules take the version as given (--version)
    elif t.version is None:
        if mysql_named and t.engine == "mysql":
            t.flavour = "mysql"
        t.flavour, t.version = installed_version(t.engine, t.flavour)
        if t.version:
            notes.append(f"target: {t.flavour or t.engine} {t.version} (the installed server; "
                         "--version chooses another)")
        else:
            newest = _newest(t.engine, t.flavour)
            notes.append(f"target: {newest}, the newest the catalogs know (no "
                         f"{newest.split()[0]} server is installed; --version chooses another)")
    if t.flavour is None:
        from pmem_advisor.rules.facts import flavour_for

        t.flavour = flavour_for(t.engine, None, t.version)
    try:
        cfg, t.where, t.loose, t.files = read_config(spec.path, t.engine, t.flavour,
                                                     t.version, spec.label)
    except UsageError as e:  # InputError too
        if by_content and t.engine == "postgres" and isinstance(e, InputError):  # not one
            raise _unknown_engine(
                spec, "no [group] line of a MySQL/MariaDB option file, and it does not parse "
                f"as a postgresql.conf ({e.message})",
                skippable=not _names_a_postgres_parameter(spec.path)) from None
        if blanket and not _reads_as(spec.path, t.engine):
            raise _not_the_engines(spec, t.engine, blanket,
                                   f"it does not read as one: {e.message}") from None
        raise
    if blanket and t.engine == "postgres" and not _names_a_postgres_parameter(spec.path, cfg):
        raise _not_the_engines(spec, t.engine, blanket, "it sets nothing a postgresql.conf would")
    if by_content and t.engine == "postgres" and not _names_a_postgres_parameter(spec.path,
                                                                                  cfg):
        # no [group] and no PostgreSQL parameter: any engine's empty file, a sysctl.conf, a
        # `key = value` file of any program; judging it as PostgreSQL's would report
        # PostgreSQL's defaults (and its own names as unknown) as this file's findings
        raise _unknown_engine(spec, "no [group] line of a MySQL/MariaDB option file, and it "
                              "sets nothing a postgresql.conf would")
    t.settings, t.source = {**t.settings, **cfg}, "config"


class UnknownEngine(InputError):
    """A file no source names the engine of, whose text does not tell it either: an error
    when named on the command line, skipped with a note when a walk or a glob found it
    (``skippable``: unless its text names a PostgreSQL parameter, as a postgresql.conf with a
    syntax error does: that is a config the gate must not pass over)."""

    def __init__(self, message: str, *, why: str, skippable: bool, hint: str | None = None,
                 reason: str | None = None):
        super().__init__(message, hint=hint)
        self.why, self.skippable = why, skippable
        self.reason = reason or f"cannot tell its engine ({why})"  # a skipped file's note


# The groups MySQL's and MariaDB's programs read (server, clients, tools, Galera's SST,
# backup tools, mysqld_multi's [mysqldN]): a file of [groups] none of which is one of these
# is some other program's ini file.
_MYSQL_GROUP = re.compile(r"mysql|maria|client|server|galera|embedded|sst|xtrabackup|backup|"
                          r"isam|aria|innochecksum|ndb|connector", re.I)


def _unknown_engine(spec: FileSpec, why: str, *, skippable: bool = True) -> UnknownEngine:
    """A file no source names the engine of, whose text does not tell it either."""
    return UnknownEngine(f"{spec.label}: cannot tell its engine: {why}", why=why,
                         skippable=skippable,
                         hint="say it with --db, a first line `# pmem-advisor: ENGINE "
                         f"[VERSION]`, or an engine for its glob in {PROJECT_FILE}")


def _not_the_engines(spec: FileSpec, engine: str, db: str, why: str) -> UnknownEngine:
    """A walk's file under a blanket ``--db db`` whose text is not that engine's config."""
    what = {"postgres": "postgresql.conf", "mysql": "MySQL/MariaDB option file"}[engine]
    reason = f"--db {db}, but not a {what} ({why})"
    return UnknownEngine(f"{spec.label}: {reason}", why=why, skippable=True, reason=reason)


def _reads_as(path: str, engine: str) -> bool:
    """Whether a file that did not read as ``engine``'s config still shows it is one (and is
    then a broken config, an error even in a walk): a PostgreSQL parameter's name, or a
    MySQL/MariaDB program's [group]. The other engines' files are not walked for: theirs
    stay errors."""
    if engine == "postgres":
        return _names_a_postgres_parameter(path)
    if engine == "mysql":
        return any(_MYSQL_GROUP.search(g) for g in sniff_config(path)[1])
    return True


def _names_a_postgres_parameter(path: str, names=None) -> bool:
    """Whether a file (or the setting ``names`` a parse gave) names any parameter a
    PostgreSQL server has (its own lists, every series): what tells a postgresql.conf
    fragment from an nginx.conf or a logrotate file."""
    from pmem_advisor.knobs.catalog import server_option_names

    known = server_option_names("postgresql")
    if names is None:
        from pmem_advisor.knobs.configfile import read_head

        try:
            text = read_head(path, 1 << 20)
        except (OSError, AdvisorError):
            return False
        names = re.findall(r"^\s*([A-Za-z_][\w.]*)\s*(?:=|\s)", text, re.M)
    return any(n.lower() in known for n in names)


def _newest(engine: str, flavour: str | None) -> str:
    """'MySQL 8.4': the catalog's newest version of the target, for the note."""
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.rules.facts import flavour_for

    try:
        cat = load_catalog(engine, flavour_for(engine, flavour, None), None)
    except UsageError:
        return flavour or engine
    return f"{cat.title} {cat.version}"


def _profile(t: CheckTarget, opt: Options, medium: list[str], notes: list[str]) -> dict:
    """This host probed (limits of the running server's cgroup), or the given profile/tree."""
    paths = [p for p in (t.data_dir, t.wal_dir) if p]
    paths += [p for p in t.tier_paths if p not in paths]  # tablespaces elsewhere (CK030)
    if opt.profile is not None or opt.root is not None:
        if medium or opt.no_measure:
            notes.append("--medium/--no-measure apply to this host only: the profile or tree "
                         "says what it measured")
        return load_profile(opt.profile, opt.root, paths)
    for flag, path in (("--data-dir", t.data_dir), ("--wal-dir", t.wal_dir)):
        # the directory must exist here, or we would check the wrong mount (a server's own
        # paths exist: it runs on them)
        if path and t.source != "server" and not os.path.isdir(path):
            raise UsageError(f"{flag} {path}: no such directory",
                             hint="create it, or give the directory it will be on")
    from pmem_advisor.probes.medium_source import parse_overrides
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess

    try:
        overrides = parse_overrides(medium or [])
    except ValueError as e:
        raise UsageError(str(e)) from None
    return probe(SysAccess("/"), paths, pid=t.pid, measure=not opt.no_measure,
                 medium_overrides=overrides or None)
