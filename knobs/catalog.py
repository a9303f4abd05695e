"""Knob catalogs: YAML data per flavour, checked against a JSON schema.

The shipped catalogs (knobs/data) are checked by the tests (tests/knobs/test_shipped_data.py)
and when ``knobs generate`` writes them, not on every run: the schema check of one catalog
costs about 0.3 s of CPU, more than the rest of ``check FILE`` (issue 55). A catalog from any
other folder (``EXTRA_CATALOG_DIRS``: an engine package someone adds) is checked when loaded.

Two layers: the servers' own lists of settings (``data/generated/<flavour>-<series>.json``,
written by ``python -m pmem_advisor.knobs.generate`` from pg_settings / SYSTEM_VARIABLES) say
which knobs exist, their type, unit, range and default; the hand-curated YAML (safety class
and reason, tuning samples, manual page) lies over them. A curated knob wins whole; a knob
only the server knows is known (parse, render, validate) but ``curated=False``: not tunable,
safety "unknown". Iterating a Catalog yields the curated knobs; ``Catalog.all()`` every knob.

Values are held in the server's base unit, the one ``pg_settings.setting`` and
``SHOW GLOBAL VARIABLES`` report (8 kB pages for shared_buffers, bytes for
innodb_buffer_pool_size). ``Knob.parse`` turns config-file text into that value and
``Knob.render`` turns it back into text in the server's own units.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from pmem_advisor.engines import api
from pmem_advisor.engines.api import EngineSpec
from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.knobs import units
from pmem_advisor.knobs.version import parse_version, series, version_in

DATA = Path(__file__).resolve().parent / "data"
SHIPPED_DATA = DATA  # what the package ships (a test may point DATA elsewhere)
# Folders searched for <flavour>.yaml after DATA (tests add their own engines' catalogs).
EXTRA_CATALOG_DIRS: list[Path] = []
NUMERIC = ("int", "size", "duration", "real")
_PG_TRUE = ("true", "yes", "on", "1")
_PG_FALSE = ("false", "no", "off", "0")
# my_getopt's get_bool_argument: these six words only, in any case; any other text (yes, no,
# ' on') is a warning and OFF in MariaDB ("boolean value 'yes' wasn't recognized. Set to OFF")
_MY_BOOL = {"on": True, "true": True, "1": True, "off": False, "false": False, "0": False}
# PostgreSQL check hooks that raise a legal small value without a word (xlog.c
# check_wal_buffers: "We clamp manually-set values to at least 4 blocks"; -1 is auto)
_PG_HOOK_FLOORS = {"wal_buffers": 4}
# my_getopt's eval_num_suffix: strtoll's digits, then one suffix letter (only its first
# character counts: '12KB' is 12K, '1e3' is 1 exabyte); a dot, a space or any other character
# there is "Unknown suffix" and the server refuses to start
_MY_INTEGER = re.compile(r"^[ \t\n\v\f\r]*([-+]?[0-9]+)(.?)")


class CatalogDataError(ValueError):
    """A shipped catalog file breaks the schema or its own rules: a bug, not a user error."""


class KnobNotInVersion(UnknownKnobError):
    """A knob the flavour has, but not in the target version (not yet, or removed: then
    ``removed_in`` and, when something takes its place, ``replacement``)."""

    def __init__(self, message: str, *, name: str, version: str, removed_in: str | None = None,
                 replacement: str | None = None, ignored: bool = False) -> None:
        super().__init__(message)
        self.knob_name = name
        self.version = version
        self.removed_in = removed_in
        self.replacement = replacement
        self.ignored = ignored  # the server accepts the old name and ignores it


def _my_integer(text: str) -> int | None:
    """An integer option as mysqld's my_getopt reads it (``_MY_INTEGER``), or None."""
    m = _MY_INTEGER.match(text)
    if not m:
        return None
    suffix = m.group(2)
    if suffix and suffix.upper() not in units.MY_SUFFIX:
        return None
    value = int(m.group(1))
    if abs(value) >= 1 << 64:  # strtoull's ERANGE: "Incorrect integer value", a refusal
        return None
    return value * units.MY_SUFFIX.get(suffix.upper(), 1)


def normalize_name(engine: str, name: str) -> str:
    """Canonical knob name: lowercase; MySQL/MariaDB also treat '-' and '_' as the same."""
    name = name.strip().lower()
    return name.replace("-", "_") if engine == "mysql" else name


def has_control_chars(text: str) -> bool:
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)


@dataclass(frozen=True)
class Knob:
    name: str
    engine: str
    flavour: str
    type: str  # bool|int|real|enum|size|duration|path|string
    default: Any
    scope: str  # session|reload|restart|reinit|compile
    description: str
    doc_url: str
    category: str
    unit: str | None = None
    min: float | None = None
    max: float | None = None
    values: tuple[str, ...] = ()
    safety: str = "safe"  # safe|durability-risk|unknown (a server-only knob nobody judged)
    safety_reason: str = ""
    risky_values: tuple = ()
    versions: tuple[str | None, str | None] = (None, None)  # since (inclusive), until (exclusive)
    samples: tuple = ()  # legal non-default values that start on a small test machine
    build_values: tuple[str, ...] = ()  # enum values that need a server build option
    auto_values: tuple = ()  # values the server replaces by a derived one (wal_buffers=-1)
    aliases: tuple[tuple[str, str], ...] = ()  # enum spelling -> what the server reports
    # a SET's words (MySQL sql_mode, from the server's own sql_mode_names[]): each
    # comma-separated word must be one of them, or mysqld refuses the value
    members: tuple[str, ...] = ()
    # MySQL/MariaDB NUMERIC_BLOCK_SIZE: my_getopt rounds a value down to a multiple of it,
    # without a word (key_buffer_size = 1000 runs as 0, tmp_table_size = 1 as 0)
    block_size: int = 1
    unsigned: bool = False  # MySQL/MariaDB: '-0' and '-1' are "Incorrect unsigned value"
    # MariaDB: a boolean read by its first digit ('1x' ON, '0x' OFF, no word: innodb_doublewrite;
    # handle_options' OPT_ARG path), found by the catalog generator trying both on the server;
    # the others warn and run OFF or their default
    first_digit: bool = False
    config_file: bool = True  # False: set by initdb/compile, not in the config file
    init_option: str | None = None
    notes: tuple[str, ...] = field(default=())
    curated: bool = True  # False: known from the server's own list only (not judged, not tuned)
    source: str = "manual"  # where the facts come from: "manual" or "pg_settings of ... 18.6"
    deprecated: str | None = None  # the release that deprecated it (reference lists only)
    # The range worth searching inside [min, max], in base units, and why (the manual's sane
    # values): () = the legal range, narrowed by the hardware only.
    tune_range: tuple = ()
    tune_reason: str = ""

    @property
    def tunable(self) -> bool:
        """Only curated knobs (ranges and safety judged by a person) enter a search space."""
        return self.curated

    # -- text -> value -------------------------------------------------------------------
    def parse(self, text: str, *, check_range: bool = True) -> Any:
        """Config-file text (already unquoted) to the value in the server's base unit."""
        # the server reads the text as written: PostgreSQL's parse_bool and enum lookup and
        # mysqld's my_getopt take no space around a word (' on' is no boolean), only numbers
        # skip it where the server's strtol/strtod does (units.pg_number, _my_integer); a
        # string is the server's as written
        text = str(text)
        if self.type == "bool":
            return self._parse_bool(text)
        if self.type == "enum":
            return self._parse_enum(text)
        if self.type in ("path", "string"):
            if has_control_chars(text):
                raise UsageError(f"{self.name}: value contains a control character (newline?)")
            if self.members:
                self._check_members(text)
            return text
        value = self._parse_number(text)
        return self._floor(self._check_range(value) if check_range else value)

    def _block(self, value: int) -> int:
        """getopt_ull_limit_value: down to a multiple of the block size, then up to the
        minimum, without a word (MySQL/MariaDB; a value above the maximum is clamped)."""
        if self.block_size <= 1 or value < 0 or (self.max is not None and value > self.max):
            return value
        rounded = value // self.block_size * self.block_size
        return max(rounded, int(self.min)) if self.min is not None and value >= self.min \
            else rounded

    def _floor(self, value):
        """The value a PostgreSQL check hook raises a small legal one to (_PG_HOOK_FLOORS)."""
        floor = _PG_HOOK_FLOORS.get(self.name) if self.engine == "postgres" else None
        if floor is not None and value not in self.auto_values and 0 <= value < floor:
            return floor
        return value

    def _check_members(self, text: str) -> None:
        """Each word of a SET value is one the server has (case-insensitive, as mysqld's
        find_typeset reads it); a number is the server's own bit mask, left to it."""
        if text.isdigit():
            return
        known = {m.upper() for m in self.members}
        bad = [w.strip() for w in text.split(",") if w.strip() and w.strip().upper() not in known]
        if bad:
            raise UsageError(f"{self.name}: {', '.join(bad)} is not a {self.name} word this "
                             f"version accepts (it has: {', '.join(self.members)})")

    def _parse_bool(self, text: str) -> bool:
        low = text.lower()
        if self.engine == "mysql":
            if low in _MY_BOOL:
                return _MY_BOOL[low]
            if self.first_digit and low[:1] in ("0", "1"):
                return low[0] == "1"
        elif low:  # PostgreSQL accepts unique prefixes: 't', 'y', 'of' (not 'o')
            is_true = any(w.startswith(low) for w in _PG_TRUE)
            is_false = any(w.startswith(low) for w in _PG_FALSE)
            if is_true != is_false:
                return is_true
        raise UsageError(f"{self.name}: {text!r} is not a boolean (use on or off)")

    def _parse_enum(self, text: str) -> str:
        low = text.lower()
        for alias, target in self.aliases:
            if alias.lower() == low:
                return target
        for v in self.values:
            if v.lower() == low:
                return v
        if self.engine == "mysql" and low and not low.isdigit():
            # mysqld's find_type: a unique prefix of one of the typelib's names
            # (binlog_format = ro is ROW; o_direct_ is O_DIRECT_NO_FSYNC)
            typelib = [(v, v) for v in self.values] + [(a, t) for a, t in self.aliases]
            hits = {target for name, target in typelib if name.lower().startswith(low)}
            if len(hits) == 1:
                return hits.pop()
        if self.engine == "postgres" and {"on", "off"} <= set(self.values):
            if low in ("true", "yes", "1"):
                return "on"
            if low in ("false", "no", "0"):
                return "off"
        if self.engine == "mysql" and low.isdigit():
            # mysqld reads a number as the index into the option's typelib: the values in the
            # server's own order, then its alias spellings (innodb_doublewrite: OFF ON
            # DETECT_ONLY DETECT_AND_RECOVER FALSE TRUE), so the catalog keeps that order
            typelib = [(v, v) for v in self.values] + [(a, t) for a, t in self.aliases]
            if int(low) < len(typelib):
                return typelib[int(low)][1]
        raise UsageError(f"{self.name}: {text!r} is not one of {', '.join(self.values)}")

    def _parse_number(self, text: str) -> int | float:
        if self.engine == "postgres":
            parsed = units.pg_number(text, integer=self.type != "real")
            value = None
            if parsed is not None:
                value = units.pg_to_base(parsed[0], parsed[1], self.unit)
            if value is None:
                hint = f" (units: {', '.join(units.pg_units_for(self.unit))})" if parsed else ""
                raise UsageError(f"{self.name}: {text!r} is not a valid {self._kind()}{hint}")
        elif self.type != "real":
            value = _my_integer(text)
            if value is not None and self.unsigned and text.startswith("-"):
                raise UsageError(f"{self.name}: {text!r} is an incorrect unsigned value: the "
                                 "server refuses a minus sign here")
            if value is not None and self.unsigned and value < 0:
                value %= 1 << 64  # ' -5': past the '-' check, strtoull wraps it around
            if value is None:
                raise UsageError(f"{self.name}: {text!r} is not a valid {self._kind()}: not "
                                 f"{self.spelling()}")
            value = self._block(value)
        else:
            value = units.my_number(text)
            if value is None:
                raise UsageError(f"{self.name}: {text!r} is not a valid {self._kind()}")
        if not math.isfinite(value):
            raise UsageError(f"{self.name}: {text!r} is not a finite number")
        return float(value) if self.type == "real" else units.pg_round(value)

    def spelling(self) -> str:
        """How the server reads a number for this knob, as a person reads it: what a fix
        says where the range bounds nothing (a text '-inf .. inf' tells no one anything)."""
        if self.engine == "postgres":
            names = units.pg_units_for(self.unit)
            return f"a {self._kind()}" + (f" (units: {', '.join(names)})" if names else "")
        if self.type == "real":
            return "a number, a decimal point allowed, with an optional K, M, G, T, P or E suffix"
        return ("an integer with an optional K, M, G, T, P or E suffix"
                + (" (no minus sign)" if self.unsigned else ""))

    def accepted(self) -> str:
        """What a value must be, for a fix: the range where it bounds anything, else the
        spelling the server reads (never '-inf .. inf')."""
        if self.type not in NUMERIC:
            return self.describe_range()
        if self.min is None and self.max is None:
            return self.spelling()
        if self.max is None:
            return f"{self.spelling()}, at least {self._fmt(self.min)}"
        if self.min is None:
            return f"{self.spelling()}, at most {self._fmt(self.max)}"
        return f"a value in {self.describe_range()}"

    def _kind(self) -> str:
        unit = f" in {self.unit} units" if self.unit else ""
        return {"real": "number", "size": "size", "duration": "duration"}.get(
            self.type, "integer") + unit

    def _check_range(self, value: int | float) -> int | float:
        lo, hi = self.min, self.max
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise UsageError(f"{self.name}: {self.render(value)} is outside the allowed range "
                             f"{self.describe_range()}")
        return value

    def describe_range(self) -> str:
        """The allowed values as a person reads them: '16 .. 1073741823 (8kB units; 128kB ..)'."""
        if self.type == "enum":
            return "one of " + ", ".join(self.values)
        if self.type == "bool":
            return "on or off"
        if self.members:
            return "a comma-separated list of " + ", ".join(self.members)
        if self.type not in NUMERIC:
            return "any text without control characters"
        lo = "-inf" if self.min is None else self._fmt(self.min)
        hi = "inf" if self.max is None else self._fmt(self.max)
        if self.unit and self.type != "real":
            return f"{lo} .. {hi} ({self.unit} units)" if self.unit != "B" else f"{lo} .. {hi}"
        return f"{lo} .. {hi}" + (f" ({self.unit})" if self.unit else "")

    def _fmt(self, value: float) -> str:
        if self.type == "real":
            return units.render_real(value)
        return self.render(int(value)) if self.type in ("size", "duration") else str(int(value))

    # -- value -> text -------------------------------------------------------------------
    def render(self, value: Any) -> str:
        """The value as config-file text in the server's own units (unquoted)."""
        if self.type == "bool":
            on = bool(value)
            return ("ON" if on else "OFF") if self.engine == "mysql" else ("on" if on else "off")
        if self.type == "real":
            return units.render_real(float(value))
        if self.type in ("int", "size", "duration"):
            value = int(value)
            if self.engine == "postgres":
                return units.pg_render_int(value, self.unit)
            return units.my_render_size(value) if self.type == "size" else str(value)
        text = str(value)
        if has_control_chars(text):
            raise UsageError(f"{self.name}: value contains a control character (newline?)")
        return text

    def coerce(self, value: Any) -> Any:
        """Text or a Python value to the checked base-unit value (UsageError when illegal)."""
        if isinstance(value, str):
            return self.parse(value)
        if self.type == "bool":
            if isinstance(value, bool) or value in (0, 1):
                return bool(value)
        elif self.type == "enum":
            if isinstance(value, bool):
                return self.parse("on" if value else "off")
            return self.parse(str(value))
        elif self.type in ("path", "string"):
            return self.parse(str(value))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if self.type == "real":
                return self._check_range(float(value))
            if float(value) == int(value):
                return self._floor(self._block(self._check_range(int(value))))
        raise UsageError(f"{self.name}: {value!r} is not a valid {self._kind()}; "
                         f"allowed: {self.describe_range()}")

    def same(self, a: Any, b: Any) -> bool:
        """Equal as the server sees them (reals compare with the server's print precision)."""
        if self.type == "real":
            return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-9)
        if self.type == "enum":
            return str(a).lower() == str(b).lower()
        return a == b

    def is_risky(self, value: Any) -> bool:
        """True when ``value`` trades durability for speed (see ``safety_reason``)."""
        value = self.coerce(value)
        return any(self.same(value, self.coerce(r)) for r in self.risky_values)

    def to_dict(self) -> dict:
        return {
            "name": self.name, "type": self.type, "default": self.default,
            "default_text": None if self.default is None else self.render(self.default),
            "unit": self.unit,
            "min": self.min, "max": self.max, "values": list(self.values) or None,
            "scope": self.scope, "safety": self.safety, "safety_reason": self.safety_reason or None,
            "risky_values": list(self.risky_values), "auto_values": list(self.auto_values),
            "category": self.category,
            "since": self.versions[0], "until": self.versions[1],
            "config_file": self.config_file, "init_option": self.init_option,
            "description": self.description, "doc_url": self.doc_url, "notes": list(self.notes),
            "curated": self.curated, "tunable": self.tunable, "source": self.source,
        }


@dataclass
class Catalog:
    engine: str
    flavour: str
    title: str
    version: str  # the version the knobs were resolved for ("18", "10.11.19")
    knobs: dict[str, Knob]  # every known knob: curated first, then the server-only ones
    absent: dict[str, tuple[str | None, str | None]]  # flavour knobs missing in this version
    generated_from: str | None = None  # e.g. "pg_settings of PostgreSQL 18.6", None: manual only
    # True when the knobs are every setting this version has (a server's own full list): a
    # name outside them is one the server refuses, not merely one the advisor does not know
    complete: bool = False
    removed: dict[str, dict] = field(default_factory=dict)  # name -> the curated removal entry
    # removed options the server still accepts from old config files, and ignores (MariaDB)
    ignored: frozenset[str] = frozenset()
    removed_later: dict[str, dict] = field(default_factory=dict)  # valid here, removed later
    # names a partial list was checked not to have (the server refuses them)
    refused: frozenset[str] = frozenset()
    # a recorded list's gaps: option prefixes its source leaves out (plugins that may or may
    # not be built, mysqld--help.inc's @plugins), under which a missing name is not refused
    unlisted_prefixes: tuple[str, ...] = ()

    def covers(self, name: str) -> bool:
        """Whether this catalog's list decides ``name``: complete, and the name outside the
        prefixes its source leaves out. A name it covers and lacks is one the server refuses;
        one it does not cover may only be reported."""
        key = normalize_name(self.engine, name)
        return self.complete and not any(
            key == p or key.startswith(p + "_") for p in self.unlisted_prefixes)

    def removal_ahead(self, name: str) -> dict | None:
        """The curated removal of a knob this version still has (an upgrade will refuse it)."""
        return self.removed_later.get(normalize_name(self.engine, name))

    def __iter__(self):
        """The curated knobs (judged by a person): what rules, emitters and the tuner use."""
        return (k for k in self.knobs.values() if k.curated)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: str) -> bool:
        return normalize_name(self.engine, name) in self.knobs

    def names(self) -> list[str]:
        """Names of the curated knobs."""
        return [k.name for k in self]

    def all(self) -> list[Knob]:
        """Every knob this version has: curated ones, then those only the server's list has."""
        return list(self.knobs.values())

    def find(self, name: str) -> Knob | None:
        """The knob, or None when the name is unknown or absent in this version."""
        try:
            return self.get(name)
        except UnknownKnobError:
            return None

    def get(self, name: str) -> Knob:
        """The knob; UnknownKnobError with the closest names, KnobNotInVersion when absent."""
        key = normalize_name(self.engine, name)
        if key in self.knobs:
            return self.knobs[key]
        where = f"{self.title} {self.version}"
        if key in self.ignored:
            raise KnobNotInVersion(
                f"{key} was removed from {self.title}: {where} accepts it only so that old "
                "config files still start, and ignores it", name=key, version=self.version,
                ignored=True)
        if key in self.removed:
            entry = self.removed[key]
            use = entry.get("replacement")
            why = "; ".join(x for x in (f"use {use} instead" if use else "",
                                        entry.get("note", "")) if x)
            gone = f"{self.title} {entry['until']}"
            raise KnobNotInVersion(
                f"{key} was removed in {gone}" + ("" if series(self.version, len(
                    parse_version(entry["until"]))) == entry["until"] else f"; {where} does "
                    "not have it") + (f" ({why})" if why else ""),
                name=key, version=self.version, removed_in=entry["until"], replacement=use)
        if key in self.absent:
            since, until = self.absent[key]
            span = (f"exists from {since}" if since else "") + (
                f"{', ' if since else ''}removed in {until}" if until else "")
            raise KnobNotInVersion(f"{key} does not exist in {where} ({span})",
                                   name=key, version=self.version,
                                   removed_in=until if until and not since else None)
        close = self.nearest(key)
        hint = f"did you mean {', '.join(close)}?" if close else None
        raise UnknownKnobError(f"unknown {self.title} knob: {name}", hint=hint)

    def nearest(self, name: str, n: int = 3, cutoff: float = 0.6) -> list[str]:
        """The known names closest to ``name`` (this version's, then absent/removed ones)."""
        key = normalize_name(self.engine, name)
        return difflib.get_close_matches(key, list(self.knobs) + list(self.absent)
                                         + list(self.removed), n=n, cutoff=cutoff)


def supported_versions(engine: str | EngineSpec, flavour: str | None = None) -> list[str]:
    """The series the catalog of ``engine`` (its spec, or its name: then the registry is
    asked for the spec) knows, oldest first."""
    spec = engine if isinstance(engine, EngineSpec) else api.spec_of(engine)
    return list(_raw(_flavour(spec, flavour))["series"])


def catalog_path(flavour: str) -> Path | None:
    """knobs/data/<flavour>.yaml (or an added catalog folder's); None when there is none."""
    for folder in (DATA, *EXTRA_CATALOG_DIRS):
        path = folder / f"{flavour}.yaml"
        if path.is_file():
            return path
    return None


def _flavour(spec: EngineSpec, flavour: str | None) -> str:
    flavour = (flavour or spec.flavours[0]).lower()
    aliased = spec.aliases.get(flavour)  # 'postgres' names the postgresql flavour
    if flavour not in spec.flavours and aliased in spec.flavours:
        flavour = aliased
    if flavour not in spec.flavours:
        raise UsageError(f"flavour {flavour!r} does not belong to engine {spec.name} "
                         f"(use {' or '.join(spec.flavours)})")
    if catalog_path(flavour) is None:
        raise UsageError(f"{spec.title} has no knob catalog (knobs/data/{flavour}.yaml)")
    return flavour


def load_catalog(engine: str, flavour: str | None = None, version: str | None = None) -> Catalog:
    """The knobs of ``engine``'s ``flavour`` as they are in ``version`` (default: the newest
    series), as the engine gives them (``Engine.catalog``: most read knobs/data through
    ``build_catalog``; DuckDB derives defaults from the host), so every caller gets the same
    catalog. UsageError for an unknown engine."""
    return api.get_engine(api.spec_of(engine).name).catalog(flavour, version)


_BUILT: dict[tuple, Catalog] = {}  # build_catalog's results (cleared by clear_caches)


def build_catalog(spec: EngineSpec, flavour: str | None = None,
                  version: str | None = None) -> Catalog:
    """The catalog of knobs/data/<flavour>.yaml (under the servers' generated lists) for the
    engine of ``spec``, resolved for ``version`` (default: the newest series).

    Built once per (engine, flavour, version) in a process and then shared: building one
    resolves every knob the server lists (~10 ms of CPU), which a run over many files would
    pay per file (issue 55). Callers treat a Catalog as read-only (nothing assigns into it)."""
    key = (spec.name, spec.source, spec.version_parts, flavour, version)
    built = _BUILT.get(key)
    if built is None:
        built = _BUILT[key] = _build_catalog(spec, flavour, version)
    return built


def _build_catalog(spec: EngineSpec, flavour: str | None, version: str | None) -> Catalog:
    engine = spec.name
    flavour = _flavour(spec, flavour)
    raw = _raw(flavour)
    supported = raw["series"]
    if version is None:
        version = supported[-1]
    version = str(version).strip()
    v_series = series(version, spec.version_parts)
    newest = parse_version(supported[-1])
    if v_series not in supported and not (
        raw.get("open_ended") and parse_version(version) > newest
    ):
        raise UsageError(f"{raw['title']} {version} is not supported "
                         f"(supported: {', '.join(supported)}"
                         f"{' and newer' if raw.get('open_ended') else ''})")
    knobs, absent = {}, {}
    for base in _base_knobs(flavour):
        since, until = base.versions
        if not version_in(version, since, until):
            absent[base.name] = (since, until)
            continue
        knobs[base.name] = _at_version(flavour, base.name, version)
    facts, source, meta = _generated_for(flavour, version)
    for name, knob in knobs.items():  # the list's deprecation applies to a curated knob too
        if facts.get(name, {}).get("deprecated"):
            knobs[name] = replace(knob, deprecated=facts[name]["deprecated"])
        fact = facts.get(name, {})
        if fact.get("block_size") or fact.get("unsigned") or fact.get("bool_first_digit"):
            knobs[name] = replace(knobs[name], block_size=fact.get("block_size", 1),
                                  unsigned=fact.get("unsigned", False),
                                  first_digit=fact.get("bool_first_digit", False))
    for name in sorted(facts):
        if name not in knobs and name not in absent:
            knobs[name] = _generated_knob(flavour, facts[name], source, v_series)
    removed, removed_later = {}, {}
    for entry in raw.get("removed", []):
        name = entry["name"]
        if not version_in(version, entry["until"], None):
            if name in knobs and not entry.get("alias"):  # an alias keeps working
                removed_later[name] = entry
            continue  # this version still has it (the server's own list says how)
        if entry.get("alias") and entry.get("replacement") in knobs:
            knobs.setdefault(name, knobs[entry["replacement"]])  # the old name still works
        elif name not in knobs:
            removed[name] = entry
            absent.pop(name, None)
    unlisted = tuple(p.replace("-", "_") for p in meta.get("unlisted_prefixes", ()))
    if facts:
        # a recorded listing is --help's, the settings a config file takes: a variable the
        # other series' servers report as not settable from a file (time_zone, have_ssl) is
        # missing from it by construction, not removed
        runtime = _runtime_only(flavour) if meta.get("read_from") == "recorded" else frozenset()
        for name, span in _generated_history(flavour).items():
            if name in runtime:
                continue
            # another series' name this list lacks is gone, unless this list leaves its prefix
            # out (MySQL 8.4's recorded listing has no InnoDB names, 8.0's sys_vars do)
            if name not in knobs and name not in absent and name not in removed and not any(
                    name == p or name.startswith(p + "_") for p in unlisted):
                absent[name] = span
    ignored = frozenset(n for n in meta.get("ignored_options", ()) if n not in knobs)
    return Catalog(engine, flavour, raw["title"], version, knobs, absent, source,
                   complete=bool(meta.get("complete")), removed=removed, ignored=ignored,
                   removed_later=removed_later,
                   refused=frozenset(n for n in meta.get("refused", ()) if n not in knobs),
                   unlisted_prefixes=unlisted)


# -- the servers' own lists (data/generated) ---------------------------------------------------
GENERATED = DATA / "generated"


@lru_cache(maxsize=8)
def _generated_docs(flavour: str) -> tuple[dict, ...]:
    """The generated catalogs of ``flavour``, oldest series first."""
    docs = []
    for path in GENERATED.glob(f"{flavour}-*.json"):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if doc.get("flavour") != flavour or not doc.get("knobs"):
            raise CatalogDataError(f"{path.name}: not a generated {flavour} catalog")
        docs.append(doc)
    return tuple(sorted(docs, key=lambda d: parse_version(d["series"])))


def _generated_for(flavour: str, version: str) -> tuple[dict[str, dict], str | None, dict]:
    """The server facts for ``version``, their source and the list's own header (complete:
    a server's full list; ignored_options): its own series' list when generated; between two
    generated series, the knobs both have (newer facts); outside them, none (manual only)."""
    docs = _generated_docs(flavour)
    if not docs:
        return {}, None, {}
    parts = len(parse_version(docs[0]["series"]))
    want = parse_version(series(version, parts))
    for doc in docs:
        if parse_version(doc["series"]) == want:
            facts = {k["name"]: k for k in doc["knobs"]}
            for option in doc.get("options", []):  # startup options that are no variable
                facts.setdefault(option, {"name": option, "type": "string", "scope": "restart",
                                          "description": "a startup option (no variable)"})
            return facts, _provenance(flavour, doc), {k: v for k, v in doc.items()
                                                      if k != "knobs"}
    older = [d for d in docs if parse_version(d["series"]) < want]
    newer = [d for d in docs if parse_version(d["series"]) > want]
    if not older or not newer:
        return {}, None, {}
    low, high = older[-1], newer[0]
    low_names = {k["name"] for k in low["knobs"]}
    facts = {k["name"]: k for k in high["knobs"] if k["name"] in low_names}
    return facts, (f"{high['source']} of {_title(flavour)} {low['series']} and "
                   f"{high['series']} (the knobs both have)"), {}


def _provenance(flavour: str, doc: dict) -> str:
    """'pg_settings of PostgreSQL 18.6'; a list read from reference material says so."""
    version = doc["server_version"].split("-")[0]
    if doc.get("read_from") == "recorded":
        binary = "mariadbd" if flavour == "mariadb" else "mysqld"
        return (f"{_title(flavour)} {version}'s own {binary} --verbose --help as its source "
                f"records it ({doc.get('reference', 'mysql-test')})")
    if doc.get("read_from") == "manual":
        return (f"reference material of {_title(flavour)} {version} (read from a manual, "
                f"not from a server{'' if doc.get('complete') else '; a partial list'})")
    return f"{doc['source']} of {_title(flavour)} {version}"


@lru_cache(maxsize=8)
def _generated_history(flavour: str) -> dict[str, tuple[str | None, str | None]]:
    """For every name some generated series has: (first series with it, first later series
    without it), from the series' own lists, for naming a version's missing knob."""
    docs = _generated_docs(flavour)
    lists = [{k["name"] for k in doc["knobs"]} for doc in docs]
    history: dict[str, tuple[str | None, str | None]] = {}
    for i, names in enumerate(lists):
        for name in names - history.keys():
            later = next((docs[j]["series"] for j in range(i + 1, len(docs))
                          if name not in lists[j]), None)
            history[name] = (None if i == 0 else docs[i]["series"], later)
    return history


@lru_cache(maxsize=8)
def _runtime_only(flavour: str) -> frozenset[str]:
    """Names every server-read list of ``flavour`` that has them marks config_file false."""
    seen: dict[str, bool] = {}
    for doc in _generated_docs(flavour):
        if doc.get("read_from") != "server":
            continue
        for k in doc["knobs"]:
            seen[k["name"]] = seen.get(k["name"], False) or k["config_file"]
    return frozenset(n for n, in_file in seen.items() if not in_file)


def _title(flavour: str) -> str:
    return _raw(flavour)["title"]


_DOCS = {
    "postgresql": "https://www.postgresql.org/docs/{major}/runtime-config.html",
    "mariadb": "https://mariadb.com/kb/en/server-system-variables/",
    "mysql": "https://dev.mysql.com/doc/refman/{major}/en/server-system-variables.html",
}


def _generated_knob(flavour: str, fact: dict, source: str, major: str) -> Knob:
    """A knob from the server's own list: known, not judged (safety unknown, not tunable).
    ``major``: the version's series, from the engine's spec that build_catalog was given
    (not looked up again: the engine called down to build its catalog)."""
    engine = _raw(flavour)["engine"]
    knob = Knob(
        name=fact["name"], engine=engine, flavour=flavour, type=fact["type"], default=None,
        scope=fact["scope"], description=fact.get("description") or "",
        doc_url=_DOCS[flavour].format(major=major), category=fact.get("category") or "other",
        unit=fact.get("unit"), min=fact.get("min"), max=fact.get("max"),
        values=tuple(fact.get("values") or ()), safety="unknown",
        safety_reason="not judged by pmem-advisor: known from the server's own list only",
        config_file=fact.get("config_file", True),
        init_option=None if fact.get("config_file", True) else "cannot be set in a config file",
        curated=False, source=source, deprecated=fact.get("deprecated"),
        block_size=fact.get("block_size", 1),
        unsigned=fact.get("unsigned", False),
        first_digit=fact.get("bool_first_digit", False),
        # MySQL's members come from the recorded sql_mode_names[] (a plain SET); MariaDB's
        # server lists also hold FLAGSET words (optimizer_switch), which read as key=value
        members=tuple(fact.get("members") or ()) if flavour == "mysql" else (),
        aliases=tuple((a, t) for a, t in fact.get("aliases") or ()),
    )
    default = fact.get("default")
    if default is not None:
        try:
            default = knob.parse(str(default), check_range=False)
        except UsageError:  # a compiled-in default the server itself prints oddly: keep text
            default = None
    return replace(knob, default=default)


# libyaml's loader when PyYAML was built with it (the same safe constructors, about ten
# times faster than the pure-Python one); the engine registry reads its YAML with it too.
SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(f: Any) -> Any:
    """``yaml.safe_load`` of an open file or a text, with the fastest safe loader."""
    return yaml.load(f, Loader=SafeLoader)  # noqa: S506 - a SafeLoader, never the full one


def shipped(path: Path) -> bool:
    """True for a catalog in knobs/data (checked by the tests, not at run time)."""
    return path.resolve().parent == SHIPPED_DATA


def validate_catalog(data: Any, path: Path) -> None:
    """The catalog schema check of one file; CatalogDataError names the file and the field.
    jsonschema is imported here: only a catalog that was not shipped needs it at run time."""
    import jsonschema

    try:
        jsonschema.validate(data, _schema())
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path)
        raise CatalogDataError(f"{path.name}: {where}: {e.message}") from None


@lru_cache(maxsize=8)
def _raw(flavour: str) -> dict:
    path = catalog_path(flavour) or DATA / f"{flavour}.yaml"
    with open(path, encoding="utf-8") as f:
        data = load_yaml(f)
    if not shipped(path):
        validate_catalog(data, path)
    if data["flavour"] != flavour:
        raise CatalogDataError(f"{path.name}: flavour {data['flavour']!r} must equal the file "
                               f"name {flavour!r}")
    names = [k["name"] for k in data["knobs"]]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise CatalogDataError(f"{path.name}: duplicate knobs {sorted(dupes)}")
    return data


def clear_caches() -> None:
    """Forget what was read (the registry calls it after its data folders changed)."""
    for fn in (_raw, _base_knobs, _at_version, _generated_docs):
        fn.cache_clear()
    _BUILT.clear()


def knob_names(flavour: str) -> list[str]:
    """The names of the curated knobs in knobs/data/<flavour>.yaml (no version resolved)."""
    return [k["name"] for k in _raw(flavour)["knobs"]]


@lru_cache(maxsize=8)
def server_option_names(flavour: str) -> frozenset[str]:
    """Every name the servers' own lists (data/generated) give an option for, in any series:
    the variables settable at start-up and the startup options that are no variable. A
    read-only variable without an option (MariaDB's skip_external_locking) is not one: mysqld
    reads ``skip-external-locking`` as the option external-locking negated (my_getopt tries the
    exact option name first, then the skip-/disable-/enable- prefixes)."""
    names: set[str] = set()
    for doc in _generated_docs(flavour):
        names.update(k["name"] for k in doc["knobs"] if k.get("config_file", True))
        names.update(doc.get("options", []))
    return frozenset(names)


@lru_cache(maxsize=1)
def catalog_schema() -> dict:
    """The catalog files' JSON Schema (knobs/data/catalog.schema.json)."""
    return _schema()


@lru_cache(maxsize=1)
def _schema() -> dict:
    return json.loads((DATA / "catalog.schema.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=8)
def _base_knobs(flavour: str) -> tuple[Knob, ...]:
    raw = _raw(flavour)
    return tuple(build_knob(raw["engine"], flavour, entry, None) for entry in raw["knobs"])


@lru_cache(maxsize=4096)
def _at_version(flavour: str, name: str, version: str) -> Knob:
    raw = _raw(flavour)
    entry = next(k for k in raw["knobs"] if k["name"] == name)
    return build_knob(raw["engine"], flavour, entry, version)


_FIELDS = ("type", "unit", "min", "max", "values", "default", "scope", "samples",
           "risky_values", "safety_reason", "build_values", "auto_values", "aliases")


def build_knob(engine: str, flavour: str, entry: dict, version: str | None) -> Knob:
    """One knob, with the ``changes`` that apply at ``version`` merged over the base entry."""
    merged = {f: entry.get(f) for f in _FIELDS}
    notes = []
    for change in entry.get("changes", []):
        if version is not None and version_in(version, change["since"], change.get("until")):
            merged.update({f: change[f] for f in _FIELDS if f in change})
            notes.append(f"{change['since']}: {change['note']}")
        elif version is None:
            notes.append(f"{change['since']}: {change['note']}")
    risky = tuple(merged["risky_values"] or ())
    knob = Knob(
        name=entry["name"], engine=engine, flavour=flavour, type=merged["type"],
        default=None, scope=merged["scope"], description=entry["description"],
        doc_url=entry["doc"], category=entry["category"], unit=merged["unit"],
        min=merged["min"], max=merged["max"], values=tuple(merged["values"] or ()),
        safety="durability-risk" if risky else "safe",
        safety_reason=merged["safety_reason"] or "", risky_values=(),
        versions=(entry.get("since"), entry.get("until")),
        build_values=tuple(merged["build_values"] or ()),
        # in the order written: a MySQL typelib numbers its alias spellings after its values
        aliases=tuple((merged["aliases"] or {}).items()),
        config_file=entry.get("config_file", True), init_option=entry.get("init_option"),
        notes=tuple(notes),
    )
    try:
        default = knob.coerce(merged["default"])
        samples = tuple(knob.coerce(s) for s in merged["samples"] or ())
        risky = tuple(knob.coerce(r) for r in risky)
        auto = tuple(knob.coerce(a) for a in merged["auto_values"] or ())
    except UsageError as e:
        raise CatalogDataError(f"{flavour} catalog, {entry['name']} at {version}: {e}") from None
    if risky and not knob.safety_reason:
        raise CatalogDataError(f"{flavour} catalog: {entry['name']} has risky values, no reason")
    if any(knob.same(s, default) for s in samples):
        raise CatalogDataError(f"{flavour} catalog: {entry['name']} sample equals the default")
    return replace(knob, default=default, samples=samples, risky_values=risky, auto_values=auto,
                   **tune_range(knob, entry, flavour))


def tune_range(knob: Knob, entry: dict, flavour: str) -> dict[str, Any]:
    """The entry's ``tune_range`` in the knob's base units (sizes may be written 4K, 64M)."""
    raw = entry.get("tune_range")
    if not raw:
        return {}
    try:
        low, high = (knob.coerce(v) for v in raw)
    except UsageError as e:
        raise CatalogDataError(f"{flavour} catalog, {entry['name']}: tune_range: {e}") from None
    if high <= low or not entry.get("tune_reason"):
        raise CatalogDataError(f"{flavour} catalog, {entry['name']}: tune_range needs low < "
                               "high and a tune_reason")
    return {"tune_range": (low, high), "tune_reason": entry["tune_reason"]}


def risky_settings(find: Any, values: dict[str, Any]) -> list[tuple[str, Knob]]:
    """(name, knob) for each value that its knob (``find(name)``: a catalog's lookup, None for
    unknown names) classes as a durability risk, by name. A value the knob cannot even read is
    left to the value checks: it is invalid, not risky."""
    out = []
    for name in sorted(values):
        knob = find(name)
        if knob is None or not knob.risky_values or values[name] is None:
            continue
        try:
            if knob.is_risky(values[name]):
                out.append((name, knob))
        except Exception:  # noqa: BLE001 - an invalid value is another check's finding
            continue
    return out
