"""What `config render|parse|validate` decides: which engine a file is for, reading it (includes
followed), refusing a durability risk unless allowed, and validating it on the real server."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pmem_advisor.errors import InputError, UsageError
from pmem_advisor.knobs.configfile import ConfigFile, read_head
from pmem_advisor.library.target import resolve_engine, resolve_target


def engine_of(path: str) -> str:
    """mysql for option files (.cnf/.ini, or a first line that is a [group] or !include)."""
    if path.endswith((".cnf", ".ini")):
        return "mysql"
    try:  # the first 64 KiB of a regular file: a FIFO, device or directory is refused
        head = read_head(path)
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None
    for line in head.splitlines():
        s = line.strip()
        if s and s[0] not in "#;":
            return "mysql" if s[0] in "[!" else "postgres"
    return "postgres"


def read_config(path: str, engine: str | None, flavour: str | None = None,
                version: str | None = None) -> ConfigFile:
    """The config file of ``engine`` (guessed from the file when None) with its includes."""
    engine = engine or engine_of(path)
    if engine == "postgres":
        from pmem_advisor.engines.postgres.parse import parse_postgresql_conf

        return parse_postgresql_conf(path)
    if engine == "mysql":
        from pmem_advisor.engines.mysql.parse import parse_mycnf

        return parse_mycnf(path, flavour=flavour, version=version)
    return _engine_config(path, engine)


def parse_config(path: str, engine: str | None, flavour: str | None = None,
                 version: str | None = None) -> tuple[ConfigFile, str]:
    """(the file read, the engine it is for): ``engine`` may be an alias ('mariadb')."""
    if engine is not None:
        engine, flavour = resolve_engine(engine, flavour)
    config = read_config(path, engine, flavour, version)
    return config, engine or ("postgres" if config.format == "postgresql" else "mysql")


def _engine_config(path: str, engine: str) -> ConfigFile:
    """Any other engine's config file, read by its own parser (``Engine.parse_config``)."""
    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.knobs.configfile import ConfigEntry

    eng = get_engine(engine)
    read_head(path)  # a FIFO, device or directory is refused before it is read
    settings = eng.read_config_file(path)
    return ConfigFile(format=eng.config_format, path=path, files=[path],
                      entries=[ConfigEntry(n, v, path, 0) for n, v in settings.items()])


def unsafe_reason(catalog, name: str, value: str, reason: str, allow_unsafe: bool,
                  say: Callable[[str], None] = lambda line: None) -> str:
    """The line's reason; a durability risk is an error, or with --allow-unsafe says UNSAFE."""
    knob = catalog.get(name) if name in catalog else None
    if knob is None or not knob.risky_values:
        return reason  # unknown names and ranges are the emitter's to refuse
    base = knob.parse(value)
    if not knob.is_risky(base):
        return reason
    why = knob.safety_reason or "it risks losing committed data"
    if (knob.default is not None and knob.same(base, knob.default)
            and catalog.engine in ("postgres", "mysql")):
        # the server's own default (MariaDB's sync_binlog=0 matters only with the binary log
        # on, as check's CK001 judges it): rendering it changes nothing, so say it, not refuse.
        # Other engines: a risky default (Tarantool's wal_mode=write) still needs the consent
        say(f"note: {name}={value} is the server's default; {why}")
        return reason
    if not allow_unsafe:
        raise UsageError(f"--set {name}={value} risks durability ({why}); "
                         f"leave it out, or pass --allow-unsafe if you accept the loss")
    say(f"warning: {name}={value} is UNSAFE: {why}")
    return f"UNSAFE, durability risk: {why}; {reason}"


def render_config(engine: str, sets: list[str], *, flavour: str | None = None,
                  version: str | None = None, full: bool = False,
                  reason: str = "requested on the command line", fingerprint: str = "unknown",
                  allow_unsafe: bool = False, say: Callable[[str], None] = lambda line: None):
    """The config text for ``NAME=VALUE`` settings (``knobs.emit.Emitted``): a value the catalog
    classes as a durability risk is refused (UsageError) unless ``allow_unsafe``."""
    from pmem_advisor.knobs.catalog import load_catalog
    from pmem_advisor.knobs.emit import Header, Setting, emit_config

    flavour, version = resolve_target(engine, flavour, version)
    engine = resolve_engine(engine, flavour)[0]
    catalog = load_catalog(engine, flavour, version)
    settings = []
    for item in sets:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"--set {item!r}: expected NAME=VALUE")
        name, value = name.strip(), value.strip()
        settings.append(Setting(name, value, unsafe_reason(catalog, name, value, reason,
                                                           allow_unsafe, say)))
    header = Header(fingerprint=fingerprint, flavour=catalog.flavour, version=catalog.version)
    return emit_config(engine, settings, header, catalog=catalog, fragment=not full)


@dataclass
class Validation:
    """A config file judged by the real server: one row per setting (``report``); for an
    engine validated by starting it, ``started`` is the sentence that says it took them all."""

    report: Any
    started: str | None = None


def validate_config_file(path: str, engine: str, *, flavour: str | None = None,
                         version: str | None = None,
                         say: Callable[[str], None] = lambda line: None) -> Validation:
    """Start the real server on a temporary data directory with the file and check every
    value (PostgreSQL, MySQL/MariaDB: read back; other engines: started with it). UsageError
    (2) for a bad or mismatched file, EnvironmentProblem (3) when no server is installed."""
    engine, flavour = resolve_engine(engine, flavour)
    if engine not in ("postgres", "mysql"):
        return _validate_by_starting(path, engine, flavour, version, say)
    from pmem_advisor.engines.server_validate import check_flavour, validate_config
    from pmem_advisor.instances import pick_server

    binary = pick_server(engine, flavour, version)
    config = read_config(path, engine, binary.flavour, binary.version)
    check_flavour(config, engine, binary.flavour, str(binary.version))
    say(f"starting {binary.flavour} {binary.version} with {len(config.effective())} "
        f"settings from {path} ...")
    return Validation(validate_config(config, engine, binary=binary))


def _validate_by_starting(path: str, engine: str, flavour: str | None, version: str | None,
                          say: Callable[[str], None]) -> Validation:
    """Another engine: parse the file with its parser (values checked against its catalog),
    then start the engine with it (``Engine.validate_by_starting``); a refusal is exit 2
    naming the setting, a missing binary exit 3 naming the package."""
    import tempfile

    from pmem_advisor.engines.registry import get_engine
    from pmem_advisor.engines.server_validate import SettingCheck, ValidationReport

    eng = get_engine(engine)
    binary = eng.find_binary(flavour, version)  # exit 3 naming the package when missing
    config = read_config(path, engine, binary.flavour, binary.version)
    catalog = eng.catalog(binary.flavour, None if binary.version == "unknown" else
                          binary.version)
    for e in config.entries:  # out of range / wrong type: one line naming the setting
        catalog.get(e.name).parse(e.value or "")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    say(f"starting {binary.describe()} with {len(config.entries)} settings from {path} ...")
    with tempfile.TemporaryDirectory(prefix="pmem-advisor-validate-") as workdir:
        eng.validate_by_starting(text, workdir, binary=binary)
    report = ValidationReport(engine, binary.flavour, str(binary.version), [
        SettingCheck(e.name, e.value, "accepted", e.value, f"{eng.title} started with it",
                     e.file, e.line) for e in config.entries])
    return Validation(report, f"{path}: {eng.title} {binary.version} started with all "
                              f"{len(config.entries)} settings")
