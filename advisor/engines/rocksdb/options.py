"""RocksDB OPTIONS files: the one emitter and its parser, and the catalog they check against.

The format is RocksDB's own (``rocksdb::LoadOptionsFromFile``, the file RocksDB writes as
``OPTIONS-NNNNNN`` in every database): INI-like sections ``[Version]``, ``[DBOptions]``,
``[CFOptions "default"]`` and ``[TableOptions/BlockBasedTable "default"]``; ``name=value``
lines; ``#`` starts a comment. Values are RocksDB's spellings: ``true``/``false``, plain
integers (bytes), enum names such as ``kLZ4Compression``.

Write options (``sync``, ``disableWAL``) are chosen by the application on every write and
are not part of the file: they are emitted as comments that say what to set in the code.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from functools import lru_cache
from typing import Any

import jsonschema
import yaml

from pmem_advisor.engines import api
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs import catalog as knob_catalog
from pmem_advisor.knobs import units
from pmem_advisor.knobs.catalog import Catalog, Knob
from pmem_advisor.knobs.emit import (
    EmittedConfig,
    Header,
    Setting,
    checked,
    one_line,
    resolve_settings,
)
from pmem_advisor.knobs.version import parse_version

ENGINE = FLAVOUR = "rocksdb"
ROCKSDB_VERSION = "7.8.3"  # what Debian's rocksdb-tools ships; the catalog was checked there
OPTIONS_FILE_VERSION = "1.1"

DB = "DBOptions"
CF = 'CFOptions "default"'
TABLE = 'TableOptions/BlockBasedTable "default"'
WRITE = "WriteOptions"  # not a file section: per-write options, emitted as comments
SECTION_ORDER = (DB, CF, TABLE)

# Which section of the OPTIONS file each catalog option belongs to (RocksDB 7.8
# include/rocksdb/options.h: DBOptions / ColumnFamilyOptions; table.h: BlockBasedTableOptions).
SECTIONS: dict[str, str] = {
    **dict.fromkeys((
        "max_background_jobs", "max_subcompactions", "bytes_per_sync", "wal_bytes_per_sync",
        "use_direct_reads", "use_direct_io_for_flush_and_compaction", "allow_mmap_reads",
        "allow_mmap_writes", "max_total_wal_size", "db_write_buffer_size", "max_open_files",
        "compaction_readahead_size", "enable_pipelined_write", "manual_wal_flush",
        "wal_recovery_mode"), DB),
    **dict.fromkeys((
        "write_buffer_size", "max_write_buffer_number", "min_write_buffer_number_to_merge",
        "compression", "level0_file_num_compaction_trigger", "level0_slowdown_writes_trigger",
        "level0_stop_writes_trigger", "max_bytes_for_level_base",
        "max_bytes_for_level_multiplier", "target_file_size_base",
        "level_compaction_dynamic_level_bytes"), CF),
    **dict.fromkeys((
        "block_size", "block_cache", "cache_index_and_filter_blocks", "filter_policy"), TABLE),
    **dict.fromkeys(("disable_wal", "sync"), WRITE),
}
# The application's spelling of the write options (the catalog schema wants lowercase names).
WRITE_OPTION_NAMES = {"disable_wal": "disableWAL", "sync": "sync"}

# Pairs RocksDB refuses at DB::Open ("Not supported: ..."): refused here with one line, so an
# emitted file never fails to open for this reason.
CONFLICTS = (
    ("allow_mmap_reads", "use_direct_reads",
     "memory-mapped reads and direct reads exclude each other"),
    ("allow_mmap_writes", "use_direct_io_for_flush_and_compaction",
     "memory-mapped writes and direct flush/compaction writes exclude each other"),
)
TRIGGERS = ("level0_file_num_compaction_trigger", "level0_slowdown_writes_trigger",
            "level0_stop_writes_trigger")


# ------------------------------------------------------------------------------- catalog
def load_rocksdb_catalog(version: str | None = None) -> Catalog:
    """The RocksDB options catalog; through the shared loader once it knows the engine."""
    try:
        return knob_catalog.build_catalog(api.spec_of(ENGINE), FLAVOUR, version)
    except UsageError as e:
        if "rocksdb" not in str(e) or "engine" not in str(e):
            raise
    return _local_catalog(str(version or "7.8").strip())


def _local_catalog(version: str) -> Catalog:
    raw = _raw()
    newest = parse_version(raw["series"][-1])
    try:
        v = parse_version(version)
    except (ValueError, TypeError):
        raise UsageError(f"RocksDB version {version!r} is not a version number") from None
    if ".".join(map(str, v[:2])) not in raw["series"] and v <= newest:
        raise UsageError(f"RocksDB {version} is not supported (supported: "
                         f"{', '.join(raw['series'])} and newer)")
    knobs = {e["name"]: knob_catalog.build_knob(ENGINE, FLAVOUR, e, version) for e in raw["knobs"]}
    return Catalog(ENGINE, FLAVOUR, raw["title"], version, knobs, {}, None)


@lru_cache(maxsize=1)
def _raw() -> dict:
    path = knob_catalog.DATA / "rocksdb.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    schema = knob_catalog.catalog_schema()
    if ENGINE not in schema["properties"]["engine"].get("enum", [ENGINE]):  # older schema
        schema = {**schema, "properties": {
            **schema["properties"],
            "engine": {"enum": [*schema["properties"]["engine"]["enum"], ENGINE]},
            "flavour": {"enum": [*schema["properties"]["flavour"]["enum"], FLAVOUR]}}}
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path)
        raise knob_catalog.CatalogDataError(f"{path.name}: {where}: {e.message}") from None
    return data


# ------------------------------------------------------------------------- values <-> text
def render(knob: Knob, value: Any) -> str:
    """A base-unit value in RocksDB's own spelling (bytes as plain integers)."""
    if knob.type == "bool":
        return "true" if value else "false"
    if knob.type == "real":
        return units.render_real(float(value))
    if knob.type in ("int", "size", "duration"):
        return str(int(value))
    text = str(value)
    if knob_catalog.has_control_chars(text) or "#" in text:
        raise UsageError(f"{knob.name}: value {text!r} cannot be written to an OPTIONS file")
    return text


_NUMBER = re.compile(r"^[+-]?\d+(\.\d+)?([kKmMgGtT])?$")


def parse_value(knob: Knob, text: str) -> Any:
    """OPTIONS-file text to the base-unit value; UsageError naming the option when RocksDB
    would refuse it or the catalog's range excludes it."""
    text = text.strip()
    if knob.type == "bool":  # RocksDB's ParseBoolean: true/false/1/0
        low = text.lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise UsageError(f"{knob.name}: {text!r} is not a boolean (use true or false)")
    if knob.type == "enum":
        for v in knob.values:
            if v.lower() == text.lower():
                return v
        raise UsageError(f"{knob.name}: {text!r} is not one of {', '.join(knob.values)}")
    if knob.type in ("int", "size", "real"):
        if not _NUMBER.match(text) or (knob.type != "real" and "." in text):
            kind = "number" if knob.type == "real" else "integer"
            raise UsageError(f"{knob.name}: {text!r} is not a valid {kind}")
        value = units.my_number(text)
        if value is None or not math.isfinite(value):
            raise UsageError(f"{knob.name}: {text!r} is not a valid number")
        value = float(value) if knob.type == "real" else int(value)
        return knob._check_range(value)
    return knob.parse(text)


def check_combination(values: dict[str, Any]) -> None:
    """The combinations RocksDB refuses or silently rewrites: one-line UsageError."""
    for a, b, why in CONFLICTS:
        if values.get(a) is True and values.get(b) is True:
            raise UsageError(f"{a}=true with {b}=true: {why} (RocksDB refuses to open)")
    have = [(n, values[n]) for n in TRIGGERS if n in values]
    for (n1, v1), (n2, v2) in zip(have, have[1:], strict=False):
        if v1 > v2:
            raise UsageError(f"{n2}={v2} is below {n1}={v1}: the level-0 triggers must "
                             "grow (compaction <= slowdown <= stop)")


# ------------------------------------------------------------------------------- emitter
def emit_options(settings: list[Setting], header: Header = Header(), *,
                 catalog: Catalog | None = None) -> EmittedConfig:
    """A complete OPTIONS file RocksDB opens (``LoadOptionsFromFile``, ``db_bench
    --options_file``); options not given keep RocksDB's defaults."""
    catalog = catalog or load_rocksdb_catalog(header.version or None)
    resolved, warnings = resolve_settings(settings, catalog)
    check_combination({k.name: v for k, v, _ in resolved})
    by_section: dict[str, list[tuple[Knob, Any, str]]] = {s: [] for s in (*SECTION_ORDER, WRITE)}
    for knob, value, reason in resolved:
        by_section[SECTIONS[knob.name]].append((knob, value, reason))
    lines = [
        f"# RocksDB OPTIONS file written by pmem-advisor {one_line(header.tool_version)}",
        f"# target: RocksDB {one_line(header.version or catalog.version)}",
        f"# hardware fingerprint: {one_line(header.fingerprint)}",
        *(f"# note: {one_line(n)}" for n in header.notes),
        "# Load it with rocksdb::LoadOptionsFromFile() or db_bench --options_file=FILE.",
        "# The comment above each option says why it is set (rule id or tuning trial).",
        "",
        "[Version]",
        f"  rocksdb_version={ROCKSDB_VERSION}",
        f"  options_file_version={OPTIONS_FILE_VERSION}",
    ]
    for section in SECTION_ORDER:
        lines += ["", f"[{section}]"]
        for knob, value, reason in by_section[section]:
            lines.append(f"  # {knob.name}: {one_line(reason) or 'requested'}")
            lines.append(f"  {knob.name}={render(knob, value)}")
    if by_section[WRITE]:
        lines += ["", "# Write options are chosen by the application on every write, not read",
                  "# from this file. Set them in the code (rocksdb::WriteOptions):"]
        for knob, value, reason in by_section[WRITE]:
            lines.append(f"#   WriteOptions.{WRITE_OPTION_NAMES[knob.name]} = "
                         f"{render(knob, value)}  ({one_line(reason) or 'requested'})")
    return EmittedConfig(checked("\n".join(lines) + "\n"), warnings, resolved)


# -------------------------------------------------------------------------------- parser
_SECTION = re.compile(r'^\[\s*([A-Za-z/]+)(?:\s+"([^"]*)")?\s*\]$')


def parse_options(text: str, origin: str = "OPTIONS", *, catalog: Catalog | None = None
                  ) -> dict[str, str]:
    """The catalog options an OPTIONS file sets for the default column family, name -> text.

    Every option the catalog knows is checked (type, range, section, combinations) in every
    column family; options the catalog does not know are RocksDB's business and are left out.
    A bad value: UsageError naming the option and the line."""
    catalog = catalog or load_rocksdb_catalog()
    section: str | None = None
    found: dict[str, str] = {}
    values: dict[str, Any] = {}
    saw_db = False
    for n, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw).strip()
        if not line:
            continue
        where = f"{origin}:{n}"
        m = _SECTION.match(line)
        if m:
            kind, name = m.group(1), m.group(2)
            section = f'{kind} "{name}"' if name is not None else kind
            saw_db = saw_db or kind == DB
            if kind not in ("Version", DB, "CFOptions", "TableOptions/BlockBasedTable",
                            "TableOptions/PlainTable", "TableOptions/CuckooTable"):
                raise UsageError(f"{where}: unknown section [{kind}]")
            continue
        if "=" not in line:
            raise UsageError(f"{where}: expected name=value, got {line[:60]!r}")
        if section is None:
            raise UsageError(f"{where}: {line.split('=', 1)[0].strip()} outside any section")
        name, value = (p.strip() for p in line.split("=", 1))
        knob = catalog.find(name) if name == name.lower() else None
        if knob is None or SECTIONS.get(knob.name) == WRITE:
            continue
        want = SECTIONS[knob.name]
        kind = section.split(" ", 1)[0]
        if kind != want.split(" ", 1)[0]:
            raise UsageError(f"{where}: {knob.name} belongs in [{want}], not [{section}]")
        try:
            parsed = parse_value(knob, value)
        except UsageError as e:
            raise UsageError(f"{where}: {e.message}") from None
        if section in (DB, CF, TABLE):
            found[knob.name] = render(knob, parsed)
            values[knob.name] = parsed
    if not saw_db:
        raise UsageError(f"{origin}: no [DBOptions] section: not a RocksDB OPTIONS file")
    check_combination(values)
    return found


def _strip_comment(line: str) -> str:
    """RocksDB's rule: '#' starts a comment unless escaped."""
    out = []
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            out.append(line[i + 1])
            i += 2
            continue
        if c == "#":
            break
        out.append(c)
        i += 1
    return "".join(out)


def risky(catalog: Catalog, values: dict[str, Any]) -> list[tuple[Knob, Any]]:
    """The (knob, value) pairs that trade durability for speed."""
    out = []
    for name, value in values.items():
        knob = catalog.find(name)
        if knob is not None and knob.risky_values and knob.is_risky(value):
            out.append((knob, value))
    return out


def with_default_flavour(header: Header) -> Header:
    return header if header.flavour else replace(header, flavour=FLAVOUR)
