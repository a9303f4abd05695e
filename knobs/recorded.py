"""MySQL and MariaDB catalogs from the server's own recorded output (``make catalogs``).

    python -m pmem_advisor.knobs.recorded            # write generated/<flavour>-<series>.json
    python -m pmem_advisor.knobs.recorded --check    # exit 1 when a shipped one differs
    python -m pmem_advisor.knobs.recorded extract --help-result R [--sys-vars-dir D] ...
                                                     # a new extract from a source tree

No MySQL server installs here (Debian ships MariaDB), but the MySQL source tree records what
its server prints: ``mysql-test/r/mysqld--help-notwin.result`` is ``mysqld --verbose --help``
of that release (every option, then the variables table with each default), checked by the
release's own test suite. Its filter (``mysql-test/include/mysqld--help.inc``) leaves out the
options of plugins that may or may not be built (``@plugins``: innodb, ssl, mysqlx, ...); the
sys_vars suite (``mysql-test/suite/sys_vars/r/<name>_basic.result``) names the variables of
those the test leaves out, where it is at hand. ``sql/sys_vars.cc``'s ``sql_mode_names[]`` is
the server's own table of sql_mode words (the ``NOT_USED*`` slots are the modes 8.0 removed:
the server refuses them, ER_UNSUPPORTED_SQL_MODE).

``knobs/data/recorded/mysql-<series>.txt`` holds a faithful extract of those files (names,
argument forms, the variables table line by line) with a provenance header per section; this
module turns it into ``knobs/data/generated/mysql-<series>.json`` with ``read_from:
recorded``.

MariaDB 11.4 is read the same way (``mariadb-11.4.txt``): ``mysql-test/main/mysqld--help.result``
is ``mariadbd --verbose --help`` as that release's suite records it, filtered by
``mysql-test/main/mysqld--help.test`` (its ``@plugins``: innodb, aria, wsrep, ssl, connect, ...
and ``@skipvars``, rows of the table only). Only the Debian 10.11 server installs here, so 11.4's
list comes from its source tree like MySQL's. The formats agree (option heads, then the table);
MariaDB's ``(Defaults to on; use --skip-X to disable.)`` lines are help text, not heads. Hidden
compatibility options (accepted and ignored, never printed) are not in any listing: MariaDB's
are carried from the newest server-read series (``ignored_options``), as that server reports
them. The list is complete for every name outside ``@plugins``: a name it lacks is one
the server refuses to start with (CK002 FAILs it); a name under one of those prefixes that the
sys_vars list does not have may still belong to a built plugin, so it is only reported
(``Catalog.covers``). Offline: nothing here needs the network or a server.

The listing gives an argument form, not a type. Where the extract has a ``[sysvars]`` section
(MariaDB 11.4: ``mysql-test/suite/sys_vars/r/sysvars_server_notembedded.result``, each
variable's SYSTEM_VARIABLES row as the release's suite records it) that row's type, range and
words win over the guess, read as a live server's row is (``generate.my_value_fields``), and
a variable the listing's filter dropped that takes a command-line argument is added
(``connect_timeout``). ``extract-sysvars`` writes the section from a checkout:

    python -m pmem_advisor.knobs.recorded extract-sysvars --repo O/N --commit SHA \
        --result mysql-test/suite/sys_vars/r/sysvars_server_notembedded.result \
        --into knobs/data/recorded/mariadb-11.4.txt
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path

import jsonschema

from pmem_advisor.knobs.generate import FORMAT, OUT_DIR, SCHEMA, my_value_fields, write_catalog

RECORDED = Path(__file__).resolve().parent / "data" / "recorded"
SECTIONS = ("options", "variables", "unlisted", "sys_vars", "sql_mode", "deprecated", "sysvars")
# a [sysvars] row: the columns of information_schema.SYSTEM_VARIABLES the sys_vars suite's
# sysvars_*.result records for each variable, '|'-separated, NULL as the result prints it
SYSVARS_COLUMNS = ("VARIABLE_NAME", "VARIABLE_SCOPE", "VARIABLE_TYPE", "NUMERIC_MIN_VALUE",
                   "NUMERIC_MAX_VALUE", "NUMERIC_BLOCK_SIZE", "ENUM_VALUE_LIST", "READ_ONLY",
                   "COMMAND_LINE_ARGUMENT")
# The variables table prints these for a value that depends on the host or the build.
_NO_DEFAULT = "(No default value)"
_PLACEHOLDER = re.compile(r"^#+$|MYSQL_[A-Z]+DIR|MYSQLTEST_VARDIR")
# mysqld--help.test's "fixes for 32-bit": it prints these 64-bit numbers for the 32-bit ones
# (s/\b4294967295\b/18446744073709551615/ ...), so a default above the variable's recorded
# maximum is the rewritten one; the server's own is the number before the rewrite
_HELP_32BIT_FIXES = {"18446744073709551615": "4294967295",
                     "9223372036853727232": "2146435072", "299008": "392192",
                     "18446744073709547520": "4294963200"}
# "  --name=#", "  --name[=name]", "  -a, --ansi   text": an option head of the option list
# The text wraps with one leading space too, and cites options (" --plugin-load in an
# incremental way"): a head ends the line, or has two spaces or one and a capital after it.
_HEAD = re.compile(r"^ (?:-[A-Za-z?#], )?--([a-z0-9][A-Za-z0-9-]*)(\[?=[#a-z]+\]?)?"
                   r"(?: ?$|  | [A-Z(])")


class RecordedError(ValueError):
    """A recorded extract that does not read as one: a bug in the shipped data."""


# -- reading an extract --------------------------------------------------------------------
def read_extract(path: Path) -> dict:
    """The sections of one extract: ``head`` (its provenance lines), ``sources`` (section ->
    provenance lines), and each section's lines."""
    doc: dict = {"head": {}, "sources": {}, **{s: [] for s in SECTIONS}}
    section = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("[") and line.rstrip().endswith("]"):
            section = line.strip()[1:-1]
            if section not in SECTIONS:
                raise RecordedError(f"{path.name}:{number}: unknown section [{section}]")
            doc["sources"][section] = {}
            continue
        if line.startswith("#"):
            key, _, value = line[1:].strip().partition(":")
            if value:
                target = doc["head"] if section is None else doc["sources"][section]
                target[key.strip()] = value.strip()
            continue
        if section is None:
            if line.strip():
                raise RecordedError(f"{path.name}:{number}: text before the first section")
            continue
        if section != "variables" and not line.strip():
            continue
        doc[section].append(line)
    for need in ("options", "variables"):
        if not doc[need]:
            raise RecordedError(f"{path.name}: no [{need}] section")
    return doc


def _option_forms(lines: list[str]) -> dict[str, str]:
    """name -> its argument form ('', '=#', '[=name]', ...) from the [options] lines."""
    forms = {}
    for line in lines:
        name, _, form = line.strip().partition(" ")
        forms[name.replace("-", "_")] = form.strip()
    return forms


def _variables(lines: list[str]) -> dict[str, str | None]:
    """name -> default text from the variables table (None: no default, or host-dependent)."""
    out: dict[str, str | None] = {}
    for line in lines:
        if not line.strip():
            continue
        name, _, value = line.partition(" ")
        # the table pads with one space; a value may be empty ("init-connect ") or hold spaces
        value = value.rstrip("\n")
        if value == _NO_DEFAULT or _PLACEHOLDER.search(value):
            out[name.replace("-", "_")] = None
        else:
            out[name.replace("-", "_")] = value.strip()
    return out


def _sysvars(lines: list[str]) -> dict[str, dict[str, str | None]]:
    """name -> {column: value or None} from the [sysvars] rows (SYSVARS_COLUMNS)."""
    out: dict[str, dict[str, str | None]] = {}
    for line in lines:
        cells = line.rstrip("\n").split("|")
        if len(cells) != len(SYSVARS_COLUMNS):
            raise RecordedError(f"[sysvars] row without {len(SYSVARS_COLUMNS)} cells: {line!r}")
        row = {c: (None if v == "NULL" else v) for c, v in zip(SYSVARS_COLUMNS, cells,
                                                                 strict=True)}
        out[cells[0].lower()] = row
    return out


def _sysvar_fields(row: dict[str, str | None]) -> dict:
    """The catalog's type fields of one [sysvars] row, read as a live server's row is
    (generate.my_value_fields: DOUBLE real, INT/BIGINT int with min/max, ENUM values, SET
    and FLAGSET members, BOOLEAN bool, VARCHAR string)."""
    return my_value_fields(row["VARIABLE_TYPE"] or "", row["NUMERIC_MIN_VALUE"],
                           row["NUMERIC_MAX_VALUE"], row["ENUM_VALUE_LIST"],
                           row["NUMERIC_BLOCK_SIZE"])

def _type_of(form: str | None, default: str | None) -> str:
    """The value type the help gives: 'TRUE'/'FALSE' defaults and argument-less options are
    booleans, '=#' numbers (a default with a decimal point: a real, MariaDB's optimizer
    costs), the rest text (the help lists no enum values or ranges)."""
    if default in ("TRUE", "FALSE"):
        return "bool"
    if form is not None and "#" in form and default and re.fullmatch(r"-?\d*\.\d+", default):
        return "real"
    if form is None:
        return "string"
    if form == "":
        return "bool"
    return "int" if "#" in form else "string"


# flavour -> (its title, the server binary whose --help the listing is)
_FLAVOURS = {"mysql": ("MySQL", "mysqld"), "mariadb": ("MariaDB", "mariadbd")}


def _base_server(flavour: str, series: str) -> dict | None:
    """The newest server-read list of ``flavour`` older than ``series`` (MariaDB 10.11)."""
    best: tuple[tuple[int, ...], dict] | None = None
    for path in OUT_DIR.glob(f"{flavour}-*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        key = tuple(int(p) for p in doc["series"].split("."))
        if doc.get("read_from") == "server" and key < tuple(int(p) for p in series.split(".")) \
                and (best is None or key > best[0]):
            best = (key, doc)
    return None if best is None else best[1]


def build(series: str, path: Path | None = None, flavour: str = "mysql") -> dict:
    """The generated-catalog document of ``flavour`` ``series`` from its recorded extract."""
    path = path or RECORDED / f"{flavour}-{series}.txt"
    title, binary = _FLAVOURS[flavour]
    base = _base_server(flavour, series) if flavour == "mariadb" else None
    # '=#' says number, not which: a name the older server reports as a real (long_query_time,
    # printed '10') stays one; getopt's type of a name does not change between series
    reals = {k["name"] for k in base["knobs"] if k["type"] == "real"} if base else set()
    doc = read_extract(path)
    head, sources = doc["head"], doc["sources"]
    forms = _option_forms(doc["options"])
    defaults = _variables(doc["variables"])
    sys_vars = {line.strip() for line in doc["sys_vars"]}
    sql_modes = [line.strip() for line in doc["sql_mode"]]
    deprecated = {line.strip().replace("-", "_") for line in doc["deprecated"]}
    help_src = sources.get("options", {})
    # the server's own type of each variable (its SYSTEM_VARIABLES row as the sys_vars suite
    # records it) wins over the guess from the --help argument form
    sysvars = _sysvars(doc["sysvars"])
    sysvars_file = Path(sources.get("sysvars", {}).get("path", "sysvars")).name
    # a variable the listing lacks but whose row says it takes a command-line argument is a
    # startup option all the same (the result has connect_timeout, aria_*, ssl_*; the
    # listing leaves out its plugins' prefixes); one without (have_ssl, error_count) is not
    options_too = {n for n, row in sysvars.items() if row["COMMAND_LINE_ARGUMENT"]}
    knobs = []
    for name in sorted(set(forms) | set(defaults) | sys_vars | options_too):
        default = defaults.get(name)
        listed = name in forms or name in defaults
        row = sysvars.get(name)
        if row:
            typed = _sysvar_fields(row)
        else:
            guess = _type_of(forms.get(name), default) if listed else "string"
            typed = {"type": "real" if guess == "int" and name in reals else guess}
        if default in _HELP_32BIT_FIXES and typed.get("max") is not None \
                and int(default) > typed["max"] >= int(_HELP_32BIT_FIXES[default]):
            default = _HELP_32BIT_FIXES[default]
        if listed:
            said = f"recorded: {binary} --verbose --help"
        elif name in sys_vars:
            said = f"recorded: sys_vars test {name}_basic.result"
        else:
            said = "recorded: not in the --help listing"
        entry = {"name": name, **typed, "default": default, "scope": "restart",
                 "config_file": True, "category": "server",
                 "description": said + (
                     f"; type and range: its SYSTEM_VARIABLES row in sys_vars {sysvars_file}"
                     if row else "" if listed else " (type not recorded)")}
        if name == "sql_mode" and sql_modes and "members" not in entry:
            entry["members"] = sql_modes
        if name in deprecated:  # the help says so; not since which release
            entry["deprecated"] = f"{head['server_version']} or earlier"
        knobs.append(entry)
    version = head["server_version"]
    reference = (f"{help_src.get('path', '?')} of {help_src.get('repo', '?')} at "
                 f"{help_src.get('commit', '?')}")
    names = {k["name"] for k in knobs}
    ignored = [n for n in (base or {}).get("ignored_options", []) if n not in names]
    ignored_from = base["server_version"] if base else None
    return {
        "format": FORMAT,
        "flavour": flavour,
        "engine": "mysql",
        "series": series,
        "server_version": version,
        "source": f"{binary} --verbose --help (recorded)",
        "read_from": "recorded",
        "complete": True,
        "unlisted_prefixes": sorted({p.strip() for line in doc["unlisted"]
                                     for p in line.split()}),
        "reference": reference,
        "recorded": {**{s: v for s, v in sources.items() if v},
                     **({"ignored_options": {
                         "from": f"{title} {ignored_from}'s own list (generated/{flavour}-"
                                 f"{'.'.join(ignored_from.split('.')[:2])}.json)",
                         "note": "hidden compatibility options no --help prints: carried "
                                 "from that server, not recorded"}} if ignored else {})},
        "generated_at": datetime.date.today().isoformat(),
        "generated_by": "make catalogs (python -m pmem_advisor.knobs.recorded)",
        **({"ignored_options": ignored} if ignored else {}),
        "knobs": knobs,
    }


# -- making an extract from a source tree --------------------------------------------------
def extract_help(text: str) -> tuple[list[str], list[str], list[str]]:
    """(option lines, variables-table lines, deprecated names) of a mysqld--help result: each
    option head as 'name form', the table verbatim, the options whose own text says
    "deprecated". The lines before the first option (the option-file arguments
    --print-defaults ...) are no my.cnf settings and are left out."""
    start = text.find("\nVariables (--variable-name=value)\n")
    if start < 0:
        raise RecordedError("no 'Variables (--variable-name=value)' table")
    options_part, table = text[:start], text[start:].split("\n")[2:]
    end = next((i for i, line in enumerate(table) if not line.strip()), len(table))
    options, deprecated, current = [], [], None
    for line in options_part.split("\n"):
        m = _HEAD.match(line)
        if m:
            current = m.group(1)
            options.append(f"{current} {m.group(2) or ''}".rstrip())
        if current and "deprecated" in line.lower() and current not in deprecated:
            deprecated.append(current)
    return options, table[:end], deprecated


def extract_sysvars(text: str) -> list[str]:
    """The [sysvars] rows of a sys_vars suite's ``sysvars_*.result``: each VARIABLE_NAME
    record of its SYSTEM_VARIABLES queries as its SYSVARS_COLUMNS cells, '|'-separated, in
    the result's order; a column a query does not select is NULL."""
    rows: list[dict[str, str]] = []
    for line in text.split("\n"):
        column, tab, value = line.partition("\t")
        if not tab or column not in SYSVARS_COLUMNS:
            continue  # the query text, a comment column, other columns
        if column == "VARIABLE_NAME":
            rows.append({})
        elif not rows:
            raise RecordedError(f"a {column} line before the first VARIABLE_NAME")
        if "|" in value:
            raise RecordedError(f"{column} {value!r} holds the row separator '|'")
        rows[-1][column] = value
    if not rows:
        raise RecordedError("no VARIABLE_NAME records (not a sysvars_*.result)")
    return ["|".join(r.get(c, "NULL") for c in SYSVARS_COLUMNS) for r in rows]

def extract_sql_modes(source: str) -> list[str]:
    """The words of ``sql_mode_names[]`` in sql/sys_vars.cc, less the NOT_USED* slots."""
    m = re.search(r"sql_mode_names\[\]\s*=\s*\{(.*?)\}", source, re.S)
    if not m:
        raise RecordedError("no sql_mode_names[] in the source")
    return [w for w in re.findall(r'"([A-Z0-9_]+)"', m.group(1)) if not w.startswith("NOT_USED")]


def extract_plugins(inc: str) -> list[str]:
    """The ``@plugins=qw/.../`` prefixes mysqld--help.inc leaves out of the result."""
    m = re.search(r"@plugins=qw/([^/]*)/", inc)
    if not m:
        raise RecordedError("no @plugins list in mysqld--help.inc")
    return m.group(1).split()


# -- the command ---------------------------------------------------------------------------
def series_here() -> list[tuple[str, str]]:
    """(flavour, series) of every shipped extract."""
    out = []
    for p in RECORDED.glob("*.txt"):
        flavour, _, series = p.stem.partition("-")
        if flavour in _FLAVOURS:
            out.append((flavour, series))
    return sorted(out)



def extract_main(argv: list[str]) -> int:
    """Write an extract (stdout) from a MySQL source tree's files; the provenance is given."""
    ap = argparse.ArgumentParser(prog="python -m pmem_advisor.knobs.recorded extract")
    ap.add_argument("--server-version", required=True)
    ap.add_argument("--repo", required=True, help="owner/name the files were read from")
    ap.add_argument("--help-result", type=Path, required=True)
    ap.add_argument("--help-commit", required=True)
    ap.add_argument("--help-inc", type=Path, required=True)
    ap.add_argument("--sys-vars-names", type=Path, help="one <name> of <name>_basic.result a line")
    ap.add_argument("--sys-vars-commit")
    ap.add_argument("--sys-vars-cc", type=Path)
    ap.add_argument("--sys-vars-cc-commit")
    ap.add_argument("--deprecated-names", type=Path,
                    help="the deprecated options, one a line, when the result has no text")
    ap.add_argument("--sysvars-result", type=Path, action="append", default=[],
                    help="mysql-test/suite/sys_vars/r/sysvars_*.result (repeatable): each "
                         "variable's type, range and words")
    ap.add_argument("--sysvars-commit")
    ap.add_argument("--drop", nargs="*", default=[],
                    help="option names a fork added (not the release's own)")
    args = ap.parse_args(argv)
    today = datetime.date.today().isoformat()
    try:
        options, table, deprecated = extract_help(
            args.help_result.read_text(encoding="utf-8"))
        plugins = extract_plugins(args.help_inc.read_text(encoding="utf-8"))
        modes = (extract_sql_modes(args.sys_vars_cc.read_text(encoding="utf-8"))
                 if args.sys_vars_cc else [])
        sysvars = [row for r in args.sysvars_result
                   for row in extract_sysvars(r.read_text(encoding="utf-8"))]
    except (OSError, RecordedError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    drop = {d.replace("_", "-") for d in args.drop}
    options = [o for o in options if o.split()[0] not in drop]
    table = [t for t in table if t.split(" ")[0] not in drop]

    def source(path: str, commit: str, what: str) -> list[str]:
        return [f"# repo: {args.repo}", f"# commit: {commit}", f"# path: {path}",
                f"# retrieved: {today}", f"# extract: {what}"]

    out = [f"# server_version: {args.server_version}",
           "# written by: python -m pmem_advisor.knobs.recorded extract", "",
           "[options]", *source("mysql-test/r/mysqld--help-notwin.result", args.help_commit,
                                "each option head of the option list: name and argument form"
                                + (f"; left out (a fork's own): {' '.join(sorted(drop))}"
                                   if drop else "")),
           *options, "", "[variables]",
           *source("mysql-test/r/mysqld--help-notwin.result", args.help_commit,
                   "the variables table, verbatim"), *table, "",
           "[unlisted]", *source("mysql-test/include/mysqld--help.inc", args.help_commit,
                                 "@plugins: prefixes the result leaves out"), " ".join(plugins)]
    if args.sys_vars_names:
        out += ["", "[sys_vars]",
                *source("mysql-test/suite/sys_vars/r/*_basic.result", args.sys_vars_commit or "?",
                        "names under the @plugins prefixes, each also named inside its own file"),
                *args.sys_vars_names.read_text(encoding="utf-8").split()]
    if args.deprecated_names:  # a listing read without its text: the names written out
        deprecated = args.deprecated_names.read_text(encoding="utf-8").split()
    out += ["", "[deprecated]", *source("mysql-test/r/mysqld--help-notwin.result",
                                        args.help_commit, "options whose own text says "
                                        "they are deprecated"), *deprecated]
    if modes:
        out += ["", "[sql_mode]", *source("sql/sys_vars.cc", args.sys_vars_cc_commit or "?",
                                          "sql_mode_names[] less its NOT_USED* slots"), *modes]
    if sysvars:
        out += ["", *sysvars_section(args.sysvars_result, sysvars, args.repo,
                                     args.sysvars_commit or args.help_commit, today)]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def sysvars_section(results: list[Path], rows: list[str], repo: str, commit: str,
                    today: str) -> list[str]:
    """The [sysvars] section's lines: its provenance, then the rows."""
    return ["[sysvars]", f"# repo: {repo}", f"# commit: {commit}",
            f"# path: {', '.join(_suite_path(r) for r in results)}", f"# retrieved: {today}",
            "# extract: each VARIABLE_NAME record of the result's SYSTEM_VARIABLES queries: "
            + " | ".join(SYSVARS_COLUMNS), *rows]


def extract_sysvars_main(argv: list[str]) -> int:
    """Print the [sysvars] section from a source tree's sysvars_*.result; with --into, put it
    in place of that extract's own [sysvars] section (or after its last one)."""
    ap = argparse.ArgumentParser(prog="python -m pmem_advisor.knobs.recorded extract-sysvars")
    ap.add_argument("--repo", required=True, help="owner/name the result was read from")
    ap.add_argument("--commit", required=True)
    ap.add_argument("--result", type=Path, action="append", required=True,
                    help="mysql-test/suite/sys_vars/r/sysvars_*.result (repeatable)")
    ap.add_argument("--into", type=Path, help="an extract (<flavour>-<series>.txt) to update")
    args = ap.parse_args(argv)
    try:
        rows = [row for r in args.result for row in extract_sysvars(r.read_text(encoding="utf-8"))]
        section = sysvars_section(args.result, rows, args.repo, args.commit,
                                  datetime.date.today().isoformat())
        if args.into is None:
            sys.stdout.write("\n".join(section) + "\n")
            return 0
        lines = args.into.read_text(encoding="utf-8").splitlines()
    except (OSError, RecordedError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    start = next((i for i, line in enumerate(lines) if line.strip() == "[sysvars]"), None)
    if start is None:
        kept, rest = lines, []
        while kept and not kept[-1].strip():
            kept = kept[:-1]
        kept = [*kept, ""]
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")
                    and lines[i].rstrip().endswith("]")), len(lines))
        kept, rest = lines[:start], ([""] + lines[end:] if end < len(lines) else [])
    args.into.write_text("\n".join([*kept, *section, *rest]) + "\n", encoding="utf-8")
    print(f"{args.into}: [sysvars] {len(rows)} rows", file=sys.stderr)
    return 0


def _suite_path(path: Path) -> str:
    """The path of a sysvars result inside its source tree (the part from mysql-test/)."""
    parts = path.resolve().parts
    return "/".join(parts[parts.index("mysql-test"):]) if "mysql-test" in parts else path.name


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["extract"]:
        return extract_main(argv[1:])
    if argv[:1] == ["extract-sysvars"]:
        return extract_sysvars_main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m pmem_advisor.knobs.recorded",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT_DIR, help="output folder")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when a shipped file differs")
    args = ap.parse_args(argv)
    if not series_here():  # e.g. an install whose package data left the .txt extracts out
        print(f"error: no recorded extracts (<flavour>-<series>.txt) in {RECORDED}",
              file=sys.stderr)
        return 2
    status = 0
    for flavour, series in series_here():
        try:
            doc = build(series, flavour=flavour)
            jsonschema.validate(doc, SCHEMA)
        except (RecordedError, KeyError, jsonschema.ValidationError) as e:
            print(f"error: {flavour}-{series}.txt: {getattr(e, 'message', e)}", file=sys.stderr)
            return 2
        status |= write_catalog(args.out / f"{flavour}-{series}.json", doc, check=args.check,
                                keep=("server",), source=f"recorded by "
                                f"{_FLAVOURS[flavour][0]} {doc['server_version']}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
