"""Reading a config file for the gate: its format sniffed, its settings with the file:line each
came from (through includes), one-line errors for every file that is not a config file."""

from __future__ import annotations

import os
import re

from pmem_advisor.engines.registry import get_engine
from pmem_advisor.errors import InputError, UsageError


def sniff_config(path: str, label: str | None = None) -> tuple[str, list[str]]:
    """('mysql'|'postgres', my.cnf groups) of a config file; one-line errors for a missing,
    non-regular or binary file. ``label`` names the file in errors (``--config PATH``)."""
    from pmem_advisor.knobs.configfile import read_head

    label = label or path
    if not os.path.exists(path):
        raise InputError(f"{label}: a symbolic link to a file that does not exist"
                         if os.path.islink(path) else f"{label}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{label}: a directory, not a config file")
    text = read_head(path, 1 << 20)  # InputError for FIFOs, devices and directories
    if "\0" in text:
        raise InputError(f"{label}: binary data (NUL byte), not a config file")
    groups = re.findall(r"^\s*\[([^\]]+)\]", text, re.M)
    if groups:
        return "mysql", groups
    return "postgres", groups


def read_config(path: str, engine: str, flavour: str | None, version: str | None,
                label: str | None = None) -> tuple[dict, dict, frozenset, list[str]]:
    """(settings, where, loose, files read: the file and its includes) of a config file; a
    file written for the other engine or flavour is refused with one line (exit 2)."""
    label = label or path
    kind, groups = sniff_config(path, label)  # also refuses missing, non-regular, binary files
    if engine not in ("postgres", "mysql"):  # every other engine parses its own format
        eng = get_engine(engine)
        settings = eng.read_config_file(path)
        _check_values(eng, settings, flavour, version, label)
        return settings, {n: path for n in settings}, frozenset(), [path]
    if engine == "postgres" and kind == "mysql":
        raise UsageError(f"{label} is a MySQL/MariaDB option file ([{groups[0]}] "
                         "groups) but the target is PostgreSQL", hint="use --db mysql|mariadb")
    if engine == "mysql" and kind == "postgres":
        raise UsageError(f"{label} has no [mysqld] group: it looks like a "
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
            raise UsageError(f"{label}: every setting is in groups a {target} server "
                             f"does not read ([{skipped}])",
                             hint="is the flavour right? --db mariadb|mysql")
    eff = parsed.effective()
    settings = {n: ("ON" if e.value is None else e.value) for n, e in eff.items()}
    where = {n: e.where for n, e in eff.items()}
    loose = frozenset(n for n, e in eff.items() if e.loose)
    return settings, where, loose, list(parsed.files)


def _check_values(eng, settings: dict, flavour: str | None, version: str | None,
                  label: str) -> None:
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
            raise UsageError(f"{label}: {e.message}") from None
