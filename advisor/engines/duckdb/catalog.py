"""DuckDB's settings catalog (knobs/data/duckdb.yaml) and DuckDB's own value syntax.

DuckDB sizes are text: a number and a unit, KB/MB/GB/TB = 1000^i bytes and KiB/MiB/GiB/TiB =
1024^i (DuckDB's parser says so in its error), or a percentage of RAM ('80%'). The catalog holds
sizes in bytes. A few defaults DuckDB derives from the host (memory_limit, threads,
max_temp_directory_size) are written in the YAML as DuckDB words them and resolved here.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import jsonschema
import yaml

from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.catalog import (
    DATA,
    Catalog,
    CatalogDataError,
    Knob,
    catalog_schema,
    tune_range,
)
from pmem_advisor.knobs.version import parse_version

CATALOG_FILE = DATA / "duckdb.yaml"
# DuckDB's unit words (case-insensitive), as its parser lists them, plus bytes.
SIZE_UNITS = {"": None, "b": 1, "byte": 1, "bytes": 1,
              "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
              "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*|%)\s*$")
_TRUE = ("true", "on", "1", "yes", "t", "y")
_FALSE = ("false", "off", "0", "no", "f", "n")
# Defaults DuckDB derives from the host: the YAML text -> how to resolve it.
DERIVED = {"80% of RAM", "logical CPUs", "90% of available disk space", "<database>.tmp"}


def ram_bytes() -> int:
    """The RAM DuckDB sizes its 80% default from: physical memory, or a tighter cgroup limit."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        # by-name-safe: cgroupfs, written only by root and the kernel, no server's tree
        text = open("/sys/fs/cgroup/memory.max", encoding="ascii").read().strip()
        if text.isdigit():
            total = min(total, int(text))
    except OSError:
        pass
    return total


def parse_size(text: str, name: str, *, ram: int | None = None) -> int:
    """DuckDB size text -> bytes; UsageError naming the setting when it is not one."""
    m = _SIZE.match(str(text))
    if not m:
        raise UsageError(f"{name}: {text!r} is not a DuckDB size (e.g. 4GiB, 512MB, 80%)")
    num, unit = float(m.group(1)), m.group(2).lower()
    if unit == "%":
        if num > 100:
            raise UsageError(f"{name}: {text!r} is more than 100% of RAM")
        return int((ram or ram_bytes()) * num / 100)
    if unit not in SIZE_UNITS or SIZE_UNITS[unit] is None:
        raise UsageError(f"{name}: {text!r} needs a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, "
                         "TiB or %)")
    return int(num * SIZE_UNITS[unit])


def render_size(n: int) -> str:
    """Bytes as DuckDB text: the largest exact binary unit ('4GiB'), else bytes ('1000B')."""
    n = int(n)
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B"


def parse_shown_size(text: str) -> int | None:
    """What DuckDB prints back ('953.6 MiB', '16.0 MiB', '0 bytes'), approximately in bytes."""
    try:
        return parse_size(text, "readback")
    except UsageError:
        return None


@dataclass(frozen=True)
class DuckKnob(Knob):
    """A DuckDB setting: DuckDB's size syntax and boolean words on top of ``Knob``."""

    default_text: str = ""  # how DuckDB words a derived default ("80% of RAM")

    def parse(self, text: str, *, check_range: bool = True) -> Any:
        text = str(text).strip()
        if self.type == "size":
            value = parse_size(text, self.name)
            return self._check_range(value) if check_range else value
        if self.type == "bool":
            low = text.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise UsageError(f"{self.name}: {text!r} is not a boolean (use true or false)")
        if self.type == "int":
            if not re.fullmatch(r"[-+]?\d+", text):
                raise UsageError(f"{self.name}: {text!r} is not an integer")
            value = int(text)
            if self.name == "default_block_size" and value & (value - 1):
                raise UsageError(f"{self.name}: {value} is not a power of two")
            return self._check_range(value) if check_range else value
        return super().parse(text, check_range=check_range)

    def coerce(self, value: Any) -> Any:
        n = getattr(value, "n", None)  # rules.model.Bytes: already in bytes
        if self.type == "size" and isinstance(n, int):
            value = n
        if self.name == "default_block_size" and isinstance(value, int) and value & (value - 1):
            raise UsageError(f"{self.name}: {value} is not a power of two")
        return super().coerce(value)

    def render(self, value: Any) -> str:
        if self.type == "size":
            return render_size(int(value))
        if self.type == "bool":
            return "true" if value else "false"
        return super().render(value)

    def to_dict(self) -> dict:
        out = super().to_dict()
        if self.default_text:  # DuckDB's own wording of a host-derived default
            here = "" if self.default is None else f" ({self.render(self.default)} here)"
            out["default_text"] = self.default_text + here
        return out

    def describe_range(self) -> str:
        if self.type == "size":
            lo = render_size(int(self.min or 0))
            hi = "unlimited" if self.max is None else render_size(int(self.max))
            return f"{lo} .. {hi} (bytes; DuckDB text such as 4GiB, 512MB, 80%)"
        if self.type == "bool":
            return "true or false"
        return super().describe_range()


def _derived_default(name: str, text: str) -> Any:
    if text == "80% of RAM":  # whole MiB: DuckDB itself shows it rounded ('18.8 GiB')
        return ram_bytes() * 8 // 10 // (1 << 20) * (1 << 20)
    if text == "logical CPUs":
        return os.cpu_count() or 1
    return None  # depends on the temp directory's disk / the database file: unknown here


@lru_cache(maxsize=1)
def _raw() -> dict:
    data = yaml.safe_load(CATALOG_FILE.read_text(encoding="utf-8"))
    schema = copy.deepcopy(catalog_schema())
    # The shared schema may not list duckdb yet (ENG extends it); the shape is the same.
    for key in ("engine", "flavour"):
        enum = schema["properties"][key].get("enum")
        if enum is not None and "duckdb" not in enum:
            schema["properties"][key]["enum"] = [*enum, "duckdb"]
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path)
        raise CatalogDataError(f"duckdb.yaml: {where}: {e.message}") from None
    names = [k["name"] for k in data["knobs"]]
    if len(set(names)) != len(names):
        raise CatalogDataError("duckdb.yaml: duplicate knobs")
    return data


def _build(entry: dict) -> DuckKnob:
    risky = tuple(entry.get("risky_values") or ())
    knob = DuckKnob(
        name=entry["name"], engine="duckdb", flavour="duckdb", type=entry["type"],
        default=None, scope=entry["scope"], description=entry["description"],
        doc_url=entry["doc"], category=entry["category"], unit=entry.get("unit"),
        min=entry.get("min"), max=entry.get("max"), values=tuple(entry.get("values") or ()),
        safety="durability-risk" if risky else "safe",
        safety_reason=entry.get("safety_reason") or "",
        versions=(entry.get("since"), entry.get("until")),
        source="manual, checked against duckdb_settings() of DuckDB 2.0.0",
    )
    raw_default = entry["default"]
    try:
        if isinstance(raw_default, str) and raw_default in DERIVED:
            default = _derived_default(knob.name, raw_default)
            knob = replace(knob, default_text=raw_default)
        else:
            default = knob.coerce(raw_default)
        samples = tuple(knob.coerce(s) for s in entry.get("samples") or ())
        risky = tuple(knob.coerce(r) for r in risky)
    except UsageError as e:
        raise CatalogDataError(f"duckdb catalog, {entry['name']}: {e}") from None
    if risky and not knob.safety_reason:
        raise CatalogDataError(f"duckdb catalog: {knob.name} has risky values, no reason")
    return replace(knob, default=default, samples=samples, risky_values=risky,
                   **tune_range(knob, entry, "duckdb"))


def load_duckdb_catalog(version: str | None = None) -> Catalog:
    """The curated DuckDB settings (every DuckDB setting outside it is unknown to us)."""
    raw = _raw()
    version = str(version or raw["series"][-1]).strip()
    try:
        newest = parse_version(raw["series"][-1])
        ok = parse_version(version)[:2] >= newest[:2] or version in raw["series"]
    except (ValueError, TypeError):
        ok = False
    if not ok:
        raise UsageError(f"DuckDB {version} is not supported (supported: "
                         f"{', '.join(raw['series'])} and newer)")
    knobs = {e["name"]: _build(e) for e in raw["knobs"]}
    return Catalog("duckdb", "duckdb", raw["title"], version, knobs, {}, None)
