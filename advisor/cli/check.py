"""`pmem-advisor check`: a pre-deployment gate for the host, a config file or a running server.

The papers' rules (``rules/catalog``, through ``rules.check``) and the pre-deployment checks
(``rules/checks``: durability, values, memory, connections, end of life, PMEM host, live
status) report findings; ``--diff`` compares a running server with what ``recommend`` sets.

Exit codes: 0 no finding at or above ``--fail-on``, 1 findings, 2 bad input (a bad value on the
command line, an unreadable or mismatched config, a malformed DSN), 3 environment (the server
cannot be reached). JUnit XML for CI (``--format junit``).
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import typer

from pmem_advisor.cli.output import EMULATION_NOTE, console, format_option, out, print_json
from pmem_advisor.engines.registry import engine_help, get_engine
from pmem_advisor.errors import EXIT_FINDINGS, EnvironmentProblem, InputError, UsageError
from pmem_advisor.library.recommend import (
    installed_version,
    load_profile,
    parse_memory,
    split_engine,
)

FORMATS = ("text", "json", "junit")
SCHEMA = "pmem-advisor.check/1"


# ---------------------------------------------------------------- config files
def sniff_config(path: str) -> tuple[str, list[str]]:
    """('mysql'|'postgres', my.cnf groups) of a config file; one-line errors for a missing,
    non-regular or binary file."""
    from pmem_advisor.knobs.configfile import read_head

    if not os.path.exists(path):
        raise InputError(f"--config {path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"--config {path}: a directory, not a config file")
    text = read_head(path, 1 << 20)  # InputError for FIFOs, devices and directories
    if "\0" in text:
        raise InputError(f"--config {path}: binary data (NUL byte), not a config file")
    groups = re.findall(r"^\s*\[([^\]]+)\]", text, re.M)
    if groups:
        return "mysql", groups
    if re.search(r"^\s*[A-Za-z_][\w.]*\s*=", text, re.M):
        return "postgres", groups
    return "postgres", groups


def read_config(path: str, engine: str, flavour: str | None, version: str | None
                ) -> tuple[dict, dict, frozenset]:
    """(settings, where, loose) of a config file; a file written for the other engine or
    flavour is refused with one line (exit 2)."""
    kind, groups = sniff_config(path)  # also refuses missing, non-regular and binary files
    if engine not in ("postgres", "mysql"):  # every other engine parses its own format
        eng = get_engine(engine)
        settings = eng.read_config_file(path)
        _check_values(eng, settings, flavour, version, path)
        return settings, {n: path for n in settings}, frozenset()
    if engine == "postgres" and kind == "mysql":
        raise UsageError(f"--config {path} is a MySQL/MariaDB option file ([{groups[0]}] "
                         "groups) but the target is PostgreSQL", hint="use --db mysql|mariadb")
    if engine == "mysql" and kind == "postgres":
        raise UsageError(f"--config {path} has no [mysqld] group: it looks like a "
                         "postgresql.conf, not a MySQL/MariaDB option file",
                         hint="use --db postgres")
    if engine == "postgres":
        from pmem_advisor.engines.postgres.parse import parse_postgresql_conf

        parsed = parse_postgresql_conf(path)
    else:
        from pmem_advisor.engines.mysql.parse import parse_mycnf

        parsed = parse_mycnf(path, flavour=flavour, version=version)
        if parsed.ignored and not parsed.entries:
            skipped = "], [".join(sorted({e.group or "" for e in parsed.ignored}))
            target = " ".join(x for x in (flavour or "MySQL", version) if x)
            raise UsageError(f"--config {path}: every setting is in groups a {target} server "
                             f"does not read ([{skipped}])",
                             hint="is the flavour right? --db mariadb|mysql")
    eff = parsed.effective()
    settings = {n: ("ON" if e.value is None else e.value) for n, e in eff.items()}
    where = {n: e.where for n, e in eff.items()}
    loose = frozenset(n for n, e in eff.items() if e.loose)
    return settings, where, loose


def _check_values(eng, settings: dict, flavour: str | None, version: str | None,
                  path: str) -> None:
    """A value of the wrong type or out of range is a one-line error naming the setting
    (PostgreSQL/MySQL report them as CK002 findings; other engines' files are refused)."""
    from pmem_advisor.knobs.catalog import catalog_path

    if catalog_path(eng.resolve_flavour(flavour, version)) is None:
        return  # an advice-only engine: no catalog to check against
    try:
        catalog = eng.catalog(flavour, version)
    except UsageError:  # a version the catalog does not know: its newest series
        catalog = eng.catalog(flavour, None)
    for name, value in settings.items():
        knob = catalog.find(name)
        if knob is None:
            continue  # a setting pmem-advisor does not judge: the engine's own business
        try:
            knob.parse("" if value is None else str(value))
        except UsageError as e:
            raise UsageError(f"--config {path}: {e.message}") from None


# ---------------------------------------------------------------- output
def junit(findings, fail_on: str, *, name: str = "pmem-advisor check",
          notes: list[str] = ()) -> str:
    """JUnit XML: <testsuites> with counts and a timestamp, one testcase per finding; findings
    below --fail-on are passing testcases whose name and system-out carry the severity."""
    import xml.etree.ElementTree as ET

    from pmem_advisor.rules.model import severity_rank

    limit = severity_rank(fail_on)
    failing = [f for f in findings if severity_rank(f.severity) >= limit]
    stamp = datetime.now(UTC).replace(microsecond=0).isoformat()
    counts = {"tests": str(max(1, len(findings))), "failures": str(len(failing)),
              "errors": "0", "skipped": "0", "time": "0"}
    suites = ET.Element("testsuites", {"name": name, **counts, "timestamp": stamp})
    suite = ET.SubElement(suites, "testsuite", {"name": name, **counts, "timestamp": stamp,
                                                "hostname": socket.gethostname()})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "fail-on", "value": fail_on})
    for sev in ("fail", "warn", "info"):
        n = sum(1 for f in findings if f.severity == sev)
        ET.SubElement(props, "property", {"name": f"findings.{sev}", "value": str(n)})
    for i, note in enumerate(notes):  # caveats (tmpfs standing in for PMEM, budget) reach CI
        ET.SubElement(props, "property", {"name": f"note.{i + 1}", "value": note})
    if notes:
        ET.SubElement(suite, "system-out").text = "\n".join(notes)
    if not findings:
        ET.SubElement(suite, "testcase", {"classname": "pmem-advisor", "name": "no findings",
                                          "time": "0"})
    for f in findings:
        case = ET.SubElement(suite, "testcase", {
            "classname": f"pmem-advisor.{f.rule}", "time": "0",
            "name": f"[{f.severity}] {f.rule} {f.subject}"})
        body = f.message + (f"\nfix: {f.fix}" if f.fix else "") + (
            f"\ninsights: {', '.join(f.insights)}" if f.insights else "")
        if severity_rank(f.severity) >= limit:
            fail = ET.SubElement(case, "failure", {"type": f.severity, "message": f.message})
            fail.text = body
        else:
            ET.SubElement(case, "system-out").text = f"{f.severity}: {body}"
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


# ---------------------------------------------------------------- --diff
def server_diff(rec, settings: dict, catalog, flavour: str, version: str | None) -> list[dict]:
    """What ``recommend`` would change on the running server, with the statement that sets it
    and whether a restart is needed (the catalog's scope)."""
    rows = []
    for s in rec.settings:
        if catalog is None or s.name not in catalog:
            continue
        knob = catalog.get(s.name)
        now = settings.get(s.name)
        if now is None:
            continue
        try:
            same = knob.same(knob.parse(now, check_range=False), s.value)
        except UsageError:
            same = False
        if same:
            continue
        # the statement recommend --format sql prints for it (the engine's one SQL emitter)
        st = get_engine(knob.engine).sql_statement(knob, s.value, flavour, version)
        restart, sql = st.restart, st.sql
        if st.sql is None and not st.config_line:
            how = knob.init_option or "re-initialise the data directory"
        elif flavour == "postgresql":
            how = "restart the server" if restart else "SELECT pg_reload_conf();"
        elif st.config_line is None:  # MySQL 8: persisted by the server itself
            how = "restart the server" if restart else "takes effect now, kept on restart"
        else:
            cnf = f"[mysqld] {st.config_line}"
            how = (f"add to my.cnf: {cnf}; restart the server" if restart
                   else f"also add to my.cnf (SET GLOBAL is lost at restart): {cnf}")
        rows.append({"name": s.name, "running": knob.render(knob.parse(now, check_range=False))
                     if _parses(knob, now) else now, "recommended": s.text,
                     "restart": restart, "statement": sql, "then": how, "rule": s.rule,
                     "reason": s.reason})
    return rows


def _parses(knob, text) -> bool:
    try:
        knob.parse(text, check_range=False)
        return True
    except UsageError:
        return False


# ---------------------------------------------------------------- the command
def check_cmd(
    engine: str | None = typer.Argument(None, help="Same as --db: " + engine_help()),
    profile: str | None = typer.Option(None, "--profile", help="A probe profile (JSON)."),
    root: str | None = typer.Option(None, "--root", help="Probe a machine tree below DIR."),
    db: str | None = typer.Option(None, "--db", help=engine_help()),
    version: str | None = typer.Option(None, "--version", "--server-version",
                                       help="Target server version (default: the installed)."),
    config: str | None = typer.Option(None, "--config", help="A config file to check."),
    dsn: str | None = typer.Option(None, "--dsn", help="A running server to check (its "
                                   "password is better given by --dsn-file or "
                                   "PMEM_ADVISOR_DSN)."),
    dsn_file: str | None = typer.Option(None, "--dsn-file",
                                        help="A file (mode 600) whose first line is the DSN."),
    data_dir: str | None = typer.Option(None, "--data-dir", help="Data directory."),
    wal_dir: str | None = typer.Option(None, "--wal-dir", help="WAL / redo log directory."),
    memory: str | None = typer.Option(None, "--memory",
                                      help="RAM of the target host for the server, e.g. 64G "
                                      "(any host, not only this one)."),
    cpus: int | None = typer.Option(None, "--cpus", help="CPUs of the target host the server "
                                    "may use (any host, not only this one)."),
    clients: int | None = typer.Option(None, "--clients", help="With --dsn: the concurrent "
                                       "clients the advice and --diff size for (default: the "
                                       "server's own max_connections)."),
    medium: list[str] = typer.Option(None, "--medium",
                                     help="CLASS (pmem, cxl, nvme, ssd, hdd, tmpfs): the target's "
                                     "data medium, with or without --data-dir; or PATH=CLASS "
                                     "(hdd, ssd, nvme): the medium under a path here when the "
                                     "kernel cannot tell; repeatable."),
    no_measure: bool = typer.Option(False, "--no-measure",
                                    help="Do not measure the medium of the data/WAL paths."),
    diff: bool = typer.Option(False, "--diff", help="With --dsn: what recommend would change."),
    workload: str = typer.Option("oltp", "--workload",
                                 help="oltp, olap, mixed or kv: for the rules and --diff."),
    allow_unsafe: bool = typer.Option(False, "--allow-unsafe",
                                      help="Durability risks are warnings, not failures."),
    fmt: str = format_option(FORMATS),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
    fail_on: str = typer.Option("fail", "--fail-on", help="warn or fail: exit 1 from here."),
) -> None:
    """Check the host (PMEM, DAX, NUMA), a config file or a running server before deployment."""
    from pmem_advisor.connection import resolve_dsn
    from pmem_advisor.rules import build_facts, check
    from pmem_advisor.rules.budget import target_line
    from pmem_advisor.rules.checks import build_input, run_checks
    from pmem_advisor.rules.model import severity_rank

    if json_out:  # the alias every other command has
        if fmt not in ("text", "json"):
            raise UsageError(f"--json and --format {fmt} contradict each other: give one")
        fmt = "json"
    if fail_on not in ("warn", "fail"):
        raise UsageError(f"--fail-on {fail_on!r}: use warn or fail")
    if engine is not None:  # `check ENGINE ...` as `recommend ENGINE ...`
        if db is not None and split_engine(db) != split_engine(engine):
            raise UsageError(f"the engine {engine} and --db {db} contradict each other: give one")
        db = engine
    notes: list[str] = []
    dsn = resolve_dsn(dsn, dsn_file, notes=notes)
    said = list(notes)  # the password-in-argv note: now, before a connection that may fail
    for n in said:
        console.print(f"note: {n}", soft_wrap=True)
    if diff and not dsn:
        raise UsageError("--diff compares a running server with recommend: give --dsn")
    t = CheckTarget(*(split_engine(db) if db else (None, None)), version=version,
               data_dir=data_dir, wal_dir=wal_dir)
    if dsn:
        _use_server(t, dsn, db, elsewhere_ok=profile is not None or root is not None,
                    notes=notes)
    if config:  # --db mysql names MySQL (not the MySQL family) when no server decides it
        _use_config(t, config, notes, mysql_named=not dsn and (db or "").lower() == "mysql")
    memory_bytes = parse_memory(memory) if memory else None
    classes = [m for m in medium or [] if "=" not in m]  # the target's data medium
    if len(classes) > 1:
        raise UsageError(f"--medium {' and '.join(classes)}: give the data medium once")
    prof = _profile(t, profile, root, [m for m in medium or [] if "=" in m], no_measure, notes)
    # the target build's features (lz4) from the server installed here, as recommend reads
    # them; another host's (--profile/--root) build is not this host's: unknown there
    features = (get_engine(t.engine).build_features(t.flavour, t.version)
                if t.engine and profile is None and root is None else frozenset())
    facts = build_facts(prof, engine=t.engine, flavour=t.flavour, version=t.version,
                        features=features,
                        data_dir=t.data_dir, wal_dir=t.wal_dir, root=root, workload=workload,
                        memory_bytes=memory_bytes, cpus=cpus, clients=clients,
                        allow_unsafe=allow_unsafe,
                        medium=classes[0] if classes else None, target=True)
    line = target_line(memory=memory_bytes, cpus=cpus, medium=classes[0] if classes else None,
                       version=version if t.source != "server" else None,
                       flavour=facts.flavour, probed="the profile" if profile else
                       f"the tree {root}" if root else "this machine", verb="checks")
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
    catalog = inp.catalog
    findings = run_checks(inp, check(rule_facts, t.settings or None, catalog=catalog))
    rows = None
    if diff and inp.advice is not None:  # sized for the server's own max_connections
        rows = server_diff(inp.advice, t.settings, catalog, facts.flavour, facts.version)
    elif diff:
        raise EnvironmentProblem("--diff: the rules could not size this server (see notes)")
    if facts.emulated:
        notes.insert(0, EMULATION_NOTE.removeprefix("note: "))
    for n in notes:
        if n not in said:
            console.print(f"note: {n}", markup=False, highlight=False, soft_wrap=True)
    _print(fmt, findings, fail_on, facts, rows, notes, inp)
    limit = severity_rank(fail_on)
    if any(severity_rank(f.severity) >= limit for f in findings):
        raise typer.Exit(EXIT_FINDINGS)


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
    elif not elsewhere_ok:
        notes.append("the server runs on another host: its paths, memory and PMEM are not "
                     "this host's; run `pmem-advisor probe --save` there and pass --profile")


def _server_binding(pid: int | None) -> tuple:
    """A live server's CPUs and nodes; a config file (no pid) imports no instance code."""
    if not pid:
        return None, None
    from pmem_advisor.instances.live import server_binding

    return server_binding(pid)


def _use_config(t: CheckTarget, config: str, notes: list[str], *,
                mysql_named: bool = False) -> None:
    """A config file's settings (over a running server's), for the target or the installed
    server's version (said in a note)."""
    t.engine = t.engine or sniff_config(config)[0]
    if t.version is None and _advice_only(t.engine):
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
    cfg, t.where, t.loose = read_config(config, t.engine, t.flavour, t.version)
    t.settings, t.source = {**t.settings, **cfg}, "config"


def _advice_only(engine: str) -> bool:
    return get_engine(engine).kind == "advice"


def _newest(engine: str, flavour: str | None) -> str:
    """'MySQL 8.4': the catalog's newest version of the target, for the note."""
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.rules.facts import flavour_for

    try:
        cat = load_catalog(engine, flavour_for(engine, flavour, None), None)
    except UsageError:
        return flavour or engine
    return f"{cat.title} {cat.version}"


def _profile(t: CheckTarget, profile: str | None, root: str | None, medium: list[str] | None,
             no_measure: bool, notes: list[str]) -> dict:
    """This host probed (limits of the running server's cgroup), or the given profile/tree."""
    paths = [p for p in (t.data_dir, t.wal_dir) if p]
    if profile is not None or root is not None:
        if medium or no_measure:
            notes.append("--medium/--no-measure apply to this host only: the profile or tree "
                         "says what it measured")
        return load_profile(profile, root, paths)
    for opt, path in (("--data-dir", t.data_dir), ("--wal-dir", t.wal_dir)):
        # the directory must exist here, or we would check the wrong mount (a server's own
        # paths exist: it runs on them)
        if path and t.source != "server" and not os.path.isdir(path):
            raise UsageError(f"{opt} {path}: no such directory",
                             hint="create it, or give the directory it will be on")
    from pmem_advisor.probes.medium_source import parse_overrides
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess

    try:
        overrides = parse_overrides(medium or [])
    except ValueError as e:
        raise UsageError(str(e)) from None
    return probe(SysAccess("/"), paths, pid=t.pid, measure=not no_measure,
                 medium_overrides=overrides or None)


def _print(fmt, findings, fail_on, facts, rows, notes, inp) -> None:
    from pmem_advisor.rules.memory import gib

    if fmt == "junit":
        budget = inp.budget.describe() if inp.budget else []
        out.file.write(junit(findings, fail_on, notes=[*notes, *budget]))
        return
    if fmt == "json":
        print_json({
            "source": inp.source,
            "findings": [f.to_dict() for f in findings],
            "diff": rows,
            "budget": inp.budget.describe() if inp.budget else None,
            "memory": inp.memory.to_dict(inp.budget.cpus if inp.budget else None)
            if inp.memory else None,
            "notes": notes,
            "emulated_pmem": facts.emulated,
        }, SCHEMA, engine=facts.engine, flavour=facts.flavour, version=facts.version)
        return
    for f in findings:
        out.print(f"{f.severity:4} [{f.rule}] {f.subject}: {f.message}"
                  + (f"\n     fix: {f.fix}" if f.fix else ""), markup=False)
    if not findings:
        out.print("no findings")
    if inp.memory is not None:
        out.print(f"memory: {inp.memory.describe()}", markup=False)
        out.print(f"memory: {gib(inp.memory.static_bytes)} allocated at start; "
                  f"{inp.memory.describe_peak(inp.budget.cpus if inp.budget else None)}",
                  markup=False)
    for line in inp.budget.describe() if inp.budget else []:
        out.print(f"budget: {line}", markup=False)
    if rows is not None:
        out.print(f"\ndiff against recommend ({len(rows)} setting(s) differ):", markup=False)
        for r in rows:
            out.print(f"  {r['name']}: {r['running']} -> {r['recommended']}  [{r['rule']}]"
                      f"{'  (restart)' if r['restart'] else ''}", markup=False)
            if r["statement"]:
                out.print(f"    {r['statement']}", markup=False)
            out.print(f"    then: {r['then']}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("check")(check_cmd)
