"""Generate the full knob catalogs from the servers themselves.

    python -m pmem_advisor.knobs.generate            # every server found here
    python -m pmem_advisor.knobs.generate --check    # compare with the shipped files only

Each server found by ``instances.pick_server`` (PostgreSQL 15 from Debian, 18 from the
embedded wheel, MariaDB 10.11) is started as a throwaway managed instance (as root: under the
unprivileged server user), and its own list of settings is written to
``knobs/data/generated/<flavour>-<series>.json``:

- PostgreSQL: ``pg_settings`` (name, vartype, unit, min_val, max_val, enumvals, boot_val,
  context, category, short_desc).
- MariaDB/MySQL: ``INFORMATION_SCHEMA.SYSTEM_VARIABLES`` (VARIABLE_TYPE, NUMERIC_MIN/MAX,
  ENUM_VALUE_LIST, READ_ONLY, DEFAULT_VALUE, VARIABLE_SCOPE), and the server's
  ``--verbose --help`` to know which variables a config file may set.

These are facts, not judgement: ``catalog.load_catalog`` lays the hand-curated catalogs
(safety class, reason, tuning ranges, manual page) over them, and a knob only the server
knows is parsed, rendered and validated but never tuned (``Knob.curated``/``tunable``).
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema

from pmem_advisor.fileio import ensure_dir, write_file_safely
from pmem_advisor.knobs.version import series

OUT_DIR = Path(__file__).resolve().parent / "data" / "generated"
SCHEMA = json.loads((OUT_DIR.parent / "generated.schema.json").read_text(encoding="utf-8"))
FORMAT = "pmem-advisor.generated-catalog/1"

# pg_settings.context -> the catalog's scope (when a change takes effect).
PG_CONTEXT = {
    "internal": "compile", "postmaster": "restart", "sighup": "reload",
    "superuser-backend": "reload", "backend": "reload", "superuser": "session",
    "user": "session",
}
PG_SIZE_UNITS = ("B", "kB", "8kB", "MB")
PG_TIME_UNITS = ("us", "ms", "s", "min")
MY_INT_TYPES = ("INT", "INT UNSIGNED", "BIGINT", "BIGINT UNSIGNED", "MEDIUMINT",
                "SMALLINT UNSIGNED", "TINYINT UNSIGNED")


def _num(text: Any) -> float | int | None:
    if text is None or text == "":
        return None
    try:
        return int(text)  # exact, also 18446744073709551615
    except ValueError:
        value = float(text)
        return int(value) if value.is_integer() else value


# -- PostgreSQL ------------------------------------------------------------------------------
PG_QUERY = ("SELECT name, vartype, unit, min_val, max_val, enumvals, boot_val, context, "
            "category, short_desc FROM pg_settings ORDER BY name")


def pg_entry(row: tuple) -> dict:
    """One pg_settings row as a generated catalog entry."""
    name, vartype, unit, lo, hi, enumvals, boot, context, category, desc = row
    entry: dict[str, Any] = {"name": name.lower()}
    if vartype == "bool":
        entry["type"] = "bool"
    elif vartype == "enum":
        entry["type"] = "enum"
        entry["values"] = list(enumvals or [])
    elif vartype in ("integer", "real"):
        if vartype == "real":
            entry["type"] = "real"
        elif unit in PG_SIZE_UNITS:
            entry["type"] = "size"
        elif unit in PG_TIME_UNITS:
            entry["type"] = "duration"
        else:
            entry["type"] = "int"
        entry["unit"] = unit if unit in PG_SIZE_UNITS + PG_TIME_UNITS else None
        entry["min"], entry["max"] = _num(lo), _num(hi)
    else:
        entry["type"] = "string"
    entry["default"] = boot
    entry["scope"] = PG_CONTEXT.get(context, "restart")
    entry["config_file"] = context != "internal"
    entry["category"] = category
    entry["description"] = desc
    return entry


def pg_rows(inst) -> list[tuple]:
    return inst.query(PG_QUERY)


# -- MariaDB / MySQL -------------------------------------------------------------------------
MY_QUERY = ("SELECT VARIABLE_NAME, VARIABLE_TYPE, NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE, "
            "ENUM_VALUE_LIST, READ_ONLY, DEFAULT_VALUE, VARIABLE_SCOPE, VARIABLE_COMMENT "
            "FROM information_schema.SYSTEM_VARIABLES ORDER BY VARIABLE_NAME")
_HELP_VAR = re.compile(r"^([a-z0-9][a-z0-9_-]*)(?:[ \t].*)?$", re.M)  # the variables table
_HELP_OPTION = re.compile(r"^\s+--([a-z0-9][a-z0-9_-]*)", re.M)  # the option list above it


def my_settable(server: Path) -> set[str]:
    """Variables the server accepts as options (my.cnf), from its ``--verbose --help``."""
    r = subprocess.run([str(server), "--no-defaults", "--verbose", "--help"],
                       capture_output=True, text=True, timeout=120, cwd="/")
    text = r.stdout
    start = text.find("Variables (--variable-name=value)")
    table = text[text.find("\n-----", start) + 1:] if start >= 0 else text
    names = {m.group(1) for m in _HELP_VAR.finditer(table)}
    names |= set(_HELP_OPTION.findall(text[:start] if start >= 0 else ""))
    return {n.replace("-", "_") for n in names}


def my_entry(row: tuple, settable: set[str]) -> dict:
    """One SYSTEM_VARIABLES row as a generated catalog entry."""
    name, vtype, lo, hi, enum_list, read_only, default, scope, comment = row
    name = name.lower()
    vtype = (vtype or "").upper()
    entry: dict[str, Any] = {"name": name}
    values = [v for v in (enum_list or "").split(",") if v]
    if vtype == "BOOLEAN":
        entry["type"] = "bool"
    elif vtype == "ENUM" and values:  # character sets are ENUM without a list: text
        entry["type"] = "enum"
        entry["values"] = values
    elif vtype in MY_INT_TYPES:
        entry["type"] = "int"
        entry["min"], entry["max"] = _num(lo), _num(hi)
    elif vtype == "DOUBLE":
        entry["type"] = "real"
        entry["min"], entry["max"] = _num(lo), _num(hi)
    else:  # VARCHAR, SET, FLAGSET: text (SET members are listed in the description)
        entry["type"] = "string"
        if values and vtype in ("SET", "FLAGSET"):
            entry["members"] = values
    entry["default"] = default
    if read_only == "YES":
        entry["scope"] = "restart"
    else:
        entry["scope"] = "session" if scope == "SESSION" else "reload"
    entry["config_file"] = name in settable
    entry["category"] = (scope or "").lower() or "server"
    entry["description"] = comment or ""
    return entry


# -- driver ----------------------------------------------------------------------------------
def collect(binary) -> dict:
    """Start a managed instance of ``binary`` and read its settings."""
    from pmem_advisor.instances import create_instance

    with create_instance(binary) as inst:
        inst.initialize()
        inst.start("")
        if binary.engine == "postgres":
            version = inst.query("SHOW server_version")[0][0]
            knobs = [pg_entry(r) for r in pg_rows(inst)]
            source = "pg_settings"
        else:
            version = inst.query("SELECT VERSION()")[0][0]
            settable = my_settable(binary.server)
            knobs = [my_entry(r, settable) for r in inst.query(MY_QUERY)]
            source = "information_schema.SYSTEM_VARIABLES"
        inst.stop()
        paths, host = (str(inst.home), str(inst.data_dir)), socket.gethostname()
    for knob in knobs:  # this instance's paths and this host's name are no server defaults
        default = knob.get("default")
        if isinstance(default, str) and default and (
                any(p in default for p in paths)
                or re.fullmatch(re.escape(host) + r"([.-].*)?", default)):
            knob["default"] = None
    knobs.sort(key=lambda k: k["name"])  # the same order whatever the server's collation
    version = version.split()[0]
    return {
        "format": FORMAT,
        "flavour": binary.flavour,
        "engine": binary.engine,
        "series": series(version, 1 if binary.engine == "postgres" else 2),
        "server_version": version,
        "source": source,
        "generated_by": "python -m pmem_advisor.knobs.generate",
        "knobs": knobs,
    }


def render(doc: dict) -> str:
    """The file text: the header keys, then one knob per line (readable diffs)."""
    head = {k: v for k, v in doc.items() if k != "knobs"}
    lines = ["{"]
    for k, v in head.items():
        lines.append(f"  {json.dumps(k)}: {json.dumps(v)},")
    lines.append('  "knobs": [')
    body = [f"    {json.dumps(k, sort_keys=False, ensure_ascii=False)}" for k in doc["knobs"]]
    lines.append(",\n".join(body))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def targets() -> list:
    """The servers to read: PostgreSQL 15 and 18, MariaDB 10.11 (those found here)."""
    from pmem_advisor.errors import EnvironmentProblem
    from pmem_advisor.instances import pick_server

    wanted = [("postgres", "postgresql", "15"), ("postgres", "postgresql", "18"),
              ("mysql", "mariadb", "10.11"), ("mysql", "mysql", "8.0"), ("mysql", "mysql", "8.4")]
    found = []
    for engine, flavour, version in wanted:
        try:
            found.append(pick_server(engine, flavour, version))
        except EnvironmentProblem as e:
            print(f"skip {flavour} {version}: {e}", file=sys.stderr)
    return found


def curated_differences(doc: dict) -> list[str]:
    """Where the hand-curated catalog's facts differ from the server's (for the curators)."""
    from pmem_advisor.knobs.catalog import load_catalog

    catalog = load_catalog(doc["engine"], doc["flavour"], doc["server_version"])
    facts = {k["name"]: k for k in doc["knobs"]}
    notes = []
    for knob in catalog:
        fact = facts.get(knob.name)
        if fact is None:
            notes.append(f"{knob.name}: curated, but the server has no such setting")
            continue
        for field in ("min", "max"):
            if field in fact and fact[field] is not None and getattr(knob, field) is not None \
                    and float(fact[field]) != float(getattr(knob, field)):
                notes.append(f"{knob.name}: curated {field} {getattr(knob, field)}, "
                             f"server {fact[field]}")
        if fact.get("values") and knob.type == "enum" and \
                set(fact["values"]) - set(knob.values) - set(knob.build_values):
            notes.append(f"{knob.name}: server values {fact['values']} "
                         f"not all curated {list(knob.values)}")
    return notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pmem_advisor.knobs.generate",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT_DIR, help="output folder")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when a shipped file differs from the server")
    args = ap.parse_args(argv)
    status = 0
    for binary in targets():
        print(f"reading {binary.describe()}", file=sys.stderr)
        doc = collect(binary)
        path = args.out / f"{doc['flavour']}-{doc['series']}.json"
        jsonschema.validate(doc, SCHEMA)  # what catalog.py relies on
        text = render(doc)
        for line in curated_differences(doc):
            print(f"  curated vs server: {line}", file=sys.stderr)
        if args.check:
            same = path.is_file() and json.loads(path.read_text())["knobs"] == doc["knobs"]
            print(f"{path.name}: {'up to date' if same else 'DIFFERS'}", file=sys.stderr)
            status |= 0 if same else 1
            continue
        ensure_dir(args.out)
        write_file_safely(path, text, backup=False)
        print(f"wrote {path} ({len(doc['knobs'])} settings of {doc['server_version']})")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
