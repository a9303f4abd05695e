"""Validate a config against the real server: start it on a temporary data directory with
the settings, read every value back and classify it as accepted, adjusted or rejected.

PostgreSQL refuses to start on a bad value (the log names the parameter): such settings are
marked rejected and the server is started again without them. MariaDB/MySQL adjust
out-of-range numbers with a warning and refuse unknown options or bad enum values.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from pmem_advisor.engines.mysql.parse import quote_value
from pmem_advisor.engines.postgres.parse import quote
from pmem_advisor.errors import InputError, ServerError, UsageError
from pmem_advisor.knobs import units
from pmem_advisor.knobs.catalog import Catalog, Knob, load_catalog, normalize_name
from pmem_advisor.knobs.configfile import ConfigEntry, ConfigFile
from pmem_advisor.knobs.includes import IncludeWalk

_PG_PARAM = re.compile(r'parameter "([A-Za-z0-9_.]+)"')
_MY_UNKNOWN = re.compile(r"unknown (?:variable|option) '(?:--)?([A-Za-z0-9_\-]+)")
_MY_SETTING = re.compile(r"Error while setting value '.*' to '([A-Za-z0-9_\-]+)'")
_MY_ADJUSTED = re.compile(r"option '([A-Za-z0-9_\-]+)': (.*adjusted to \S+)")
_PG_TYPES = {"integer": "int", "real": "real", "bool": "bool", "enum": "enum", "string": "string"}
MAX_ATTEMPTS = 12


@dataclass
class SettingCheck:
    name: str
    requested: str | None
    status: str  # accepted | adjusted | rejected | unverified
    reported: str | None = None  # as the server reports it (pg_settings: in its base unit)
    detail: str = ""
    file: str = ""
    line: int = 0
    reported_text: str | None = None  # the same with its unit, as a person reads it (6GB)


@dataclass
class ValidationReport:
    engine: str
    flavour: str
    version: str
    checks: list[SettingCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # server-wide (InnoDB disabled, ...)

    @property
    def ok(self) -> bool:
        return not self.problems and all(c.status in ("accepted", "unverified")
                                         for c in self.checks)

    def to_dict(self) -> dict:
        return {"engine": self.engine, "flavour": self.flavour, "version": self.version,
                "ok": self.ok, "problems": self.problems,
                "settings": [asdict(c) for c in self.checks]}


def flatten(engine: str, entries: list[ConfigEntry]) -> str:
    """One config text with the effective entries, for the managed instance's include file."""
    lines = [] if engine == "postgres" else ["[mysqld]"]
    for e in entries:
        if engine == "postgres":
            lines.append(f"{e.name} = {quote(e.value or '')}")
        elif e.value is None:
            lines.append(e.raw_name or e.name)
        else:
            lines.append(f"{e.raw_name or e.name} = {quote_value(e.value)}")
    return "\n".join(lines) + "\n"


def _culprits(engine: str, text: str, pending: dict[str, ConfigEntry]) -> dict[str, str]:
    """Settings the server's refusal names, with the log line as the reason."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if engine == "postgres":
            names = [n.lower() for n in _PG_PARAM.findall(line)]
        else:
            names = [normalize_name("mysql", n) for n in
                     _MY_UNKNOWN.findall(line) + _MY_SETTING.findall(line)]
            if not names and "[ERROR]" in line:
                low = line.lower().replace("-", "_")
                names = [n for n in pending if re.search(rf"\b{re.escape(n)}\b", low)]
        for name in names:
            name = name[len("loose_"):] if name.startswith("loose_") else name
            if name in pending and name not in found:
                found[name] = re.sub(r"^.*?(ERROR|FATAL|LOG|Warning)\]?:?\s*", "", line).strip()
    return found


def _pg_adhoc(name: str, row: tuple) -> Knob:
    vartype, unit, min_val, max_val, enumvals = row
    return Knob(name=name, engine="postgres", flavour="postgresql",
                type=_PG_TYPES.get(vartype, "string"), default=None, scope="session",
                description="(not in the catalog)", doc_url="", category="planner",
                unit=unit or None, min=float(min_val) if min_val else None,
                max=float(max_val) if max_val else None, values=tuple(enumvals or ()))


def _my_same(requested: str | None, reported: str) -> bool:
    """Loose comparison for options the catalog does not know."""
    if requested is None:
        return reported.upper() in ("ON", "1", "")
    a, b = units.my_number(requested), units.my_number(reported)
    if a is not None and b is not None:
        return a == b
    bools = {"on": "1", "true": "1", "yes": "1", "1": "1", "off": "0", "false": "0",
             "no": "0", "0": "0"}
    if requested.lower() in bools and reported.lower() in bools:
        return bools[requested.lower()] == bools[reported.lower()]
    return requested.strip().lower() == reported.strip().lower()


def _compare(engine: str, entry: ConfigEntry, reported: str, knob: Knob | None) -> bool:
    if knob is None:
        return _my_same(entry.value, reported)
    if engine == "postgres" and knob.type in ("int", "size", "duration") and entry.value:
        parsed = units.pg_number(entry.value)
        exact = units.pg_to_base(*parsed, knob.unit) if parsed else None
        if exact is not None and exact != int(exact):
            return False  # the server rounded it to whole base units
    try:
        want = knob.parse(entry.value if entry.value is not None else "ON", check_range=False)
        got = knob.parse(reported, check_range=False)
    except UsageError:
        return (entry.value or "").strip().lower() == reported.strip().lower()
    return knob.same(want, got)


def validate_config(config: ConfigFile, engine: str, *, flavour: str | None = None,
                    version: str | None = None, binary=None) -> ValidationReport:
    """Start the real server (picked by engine/flavour/version) with ``config``'s effective
    settings and classify each one. Raises ServerError when the server refuses for a reason
    that names no setting."""
    from pmem_advisor.instances import create_instance, pick_server

    binary = binary or pick_server(engine, flavour, version)
    catalog = _catalog_or_none(engine, binary.flavour, binary.version)
    report = ValidationReport(engine, binary.flavour, binary.version)
    pending = dict(config.effective())
    rejected: dict[str, str] = {}
    with create_instance(binary) as inst:
        inst.initialize()
        for _ in range(MAX_ATTEMPTS):
            try:
                inst.start(flatten(engine, list(pending.values())))
                break
            except ServerError as e:
                culprits = _culprits(engine, e.log_tail + "\n" + e.message, pending)
                if not culprits:
                    raise
                for name, why in culprits.items():
                    rejected[name] = why
                    pending.pop(name)
        else:
            raise ServerError(f"{binary.flavour} kept refusing after {MAX_ATTEMPTS} attempts",
                              log_tail=inst.log_tail())
        reported = inst.settings()
        extra = _server_details(engine, inst, report)
        log = inst.log_tail(400)
        inst.stop()
    adjusted_log = {normalize_name("mysql", n): why for n, why in _MY_ADJUSTED.findall(log)}
    for name, entry in config.effective().items():
        check = SettingCheck(name, entry.value, "accepted", file=entry.file, line=entry.line)
        report.checks.append(check)
        if name in rejected:
            check.status, check.detail = "rejected", rejected[name]
            continue
        if name in extra.get("overridden", {}):
            check.status, check.detail = "unverified", extra["overridden"][name]
            continue
        if name in extra.get("errors", {}):
            check.status, check.detail = "rejected", extra["errors"][name]
            continue
        if name not in reported:
            check.status = "rejected" if engine == "mysql" and entry.loose else "unverified"
            check.detail = ("unknown to this server; ignored because of loose-" if entry.loose
                            else "not a server variable; cannot read it back")
            continue
        check.reported = reported[name]
        knob = catalog.knobs.get(name) if catalog else None
        if knob is None and engine == "postgres" and name in extra.get("meta", {}):
            knob = _pg_adhoc(name, extra["meta"][name])
        check.reported_text = _with_unit(knob, reported[name])
        if not _compare(engine, entry, reported[name], knob):
            check.status = "adjusted"
            took = reported[name]
            if knob is not None:
                try:
                    took = knob.render(knob.parse(took, check_range=False))
                except UsageError:
                    pass
            check.detail = adjusted_log.get(name, f"server took {took}")
    return report


def _with_unit(knob: Knob | None, reported: str) -> str:
    """A reported value in the units a person reads: pg_settings' effective_cache_size 786432
    (8kB pages) is 6GB; a value without a unit stays as it is."""
    if knob is None or knob.type not in ("size", "duration") and not knob.unit:
        return reported
    try:
        return knob.render(knob.parse(reported, check_range=False))
    except (UsageError, ValueError, TypeError):
        return reported


def _catalog_or_none(engine: str, flavour: str, version: str) -> Catalog | None:
    try:
        return load_catalog(engine, flavour, version)
    except UsageError:  # a server version the catalogs do not cover: compare loosely
        return None


def _server_details(engine: str, inst, report: ValidationReport) -> dict:
    if engine == "postgres":
        errors, overridden = {}, {}
        for name, error, source in inst.query(
                "SELECT f.name, f.error, s.source FROM pg_file_settings f"
                " LEFT JOIN pg_settings s ON s.name = f.name"
                " WHERE f.error IS NOT NULL AND f.name IS NOT NULL"):
            # the throwaway server sets its port, sockets and listen address on its command
            # line, which outranks the file: PostgreSQL then says "setting could not be
            # applied" without reading the file's value, a fact about us, not the value
            if source == "command line" and error == "setting could not be applied":
                overridden[name] = ("the validating server sets it itself (its own port, "
                                    "sockets and listen address): the file's value is not "
                                    "read, so not judged")
            else:
                errors[name] = error
        meta = {r[0]: r[1:] for r in inst.query(
            "SELECT name, vartype, unit, min_val, max_val, enumvals FROM pg_settings")}
        return {"errors": errors, "overridden": overridden, "meta": meta}
    rows = inst.query("SELECT support FROM information_schema.engines WHERE engine = 'InnoDB'")
    if not rows or rows[0][0] not in ("DEFAULT", "YES"):
        report.problems.append("InnoDB is disabled: an InnoDB option made the plugin fail "
                               "(see the server log); the server ran without it")
    return {}


# ---------------------------------------------------------------- flavour of a my.cnf
# Options one of the two servers has and the other refuses at startup ("unknown variable"):
# a config that sets them was written for that server. (Manual-checked names only: the knob
# catalogs list the knobs we tune, not every option, so their difference is not evidence.)
ONLY_IN = {
    "mysql": ("innodb_redo_log_capacity", "innodb_dedicated_server", "innodb_doublewrite_files",
              "innodb_doublewrite_pages", "innodb_doublewrite_dir", "innodb_log_writer_threads",
              "innodb_ddl_threads", "innodb_parallel_read_threads", "innodb_use_fdatasync",
              "temptable_max_ram", "mysqlx_port", "mysqlx"),
    "mariadb": ("innodb_log_file_buffering", "innodb_log_file_mmap",
                "innodb_data_file_buffering", "innodb_data_file_write_through",
                "innodb_log_file_write_through", "innodb_buffer_pool_size_max",
                "aria_pagecache_buffer_size", "innodb_use_atomic_writes"),
}
_TITLES = {"mysql": "MySQL", "mariadb": "MariaDB"}
_TARGET = re.compile(r"^#\s*target:\s*(MySQL|MariaDB)\b\s*(\S*)", re.IGNORECASE)
_GROUPS = {"mariadb": "mariadb", "mariadbd": "mariadb", "mysqld-8.0": "mysql",
           "mysqld-8.4": "mysql"}


def config_flavour(config: ConfigFile) -> tuple[str, str] | None:
    """(flavour, evidence) a my.cnf was written for, or None when nothing says."""
    # Read again through the one config reader (knobs.includes.IncludeWalk: no FIFO blocks
    # it, no link a server's user planted since the parse leads root to a file that user
    # could not read); a refusal leaves the header unread, the settings still speak.
    try:
        text = IncludeWalk(what="an option file").read(config.path, 0, None, None)
        head = text.splitlines()[:10]
    except InputError:
        head = []
    for line in head:
        m = _TARGET.match(line.strip())
        if m:
            fl = m.group(1).lower()
            target = f"{_TITLES[fl]} {m.group(2)}".strip()
            return fl, f"its header names {target} as the target"
    for e in config.entries + config.ignored:
        for fl, names in ONLY_IN.items():
            if e.name in names:
                return fl, f"{e.name} ({e.where}) exists only in {_TITLES[fl]}"
        if e.group and e.group.lower() in _GROUPS:
            fl = _GROUPS[e.group.lower()]
            return fl, f"its [{e.group}] group is read by {_TITLES[fl]} only"
    return None


def check_flavour(config: ConfigFile, engine: str, flavour: str, version: str) -> None:
    """Refuse to validate a MySQL config on MariaDB (or the reverse): the other server would
    reject or silently skip what matters, and 'validated' would be a lie."""
    if engine != "mysql":
        return
    found = config_flavour(config)
    if found is None or found[0] == flavour:
        return
    want, why = found
    raise UsageError(f"{config.path} is a {_TITLES[want]} config ({why}), but the server to "
                     f"validate it on is {_TITLES.get(flavour, flavour)} {version}",
                     hint=f"validate it on a {_TITLES[want]} server with --flavour {want} "
                          f"(it must be installed here), or "
                          f"render a config for {_TITLES.get(flavour, flavour)}")
