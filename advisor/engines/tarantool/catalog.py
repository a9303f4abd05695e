"""The Tarantool box.cfg catalog (knobs/data/tarantool.yaml) as a ``knobs.catalog.Catalog``.

The YAML is in the shared catalog format (knobs/data/catalog.schema.json); it is validated here
against that schema with ``tarantool`` admitted as engine and flavour (until the schema lists
every engine), and each knob is built by the same ``build_knob`` the PostgreSQL/MySQL catalogs use,
so parsing, ranges and ``risky_values`` behave the same. Tarantool has no server-generated
list: every knob is curated.
"""

from __future__ import annotations

import copy
from functools import lru_cache

import jsonschema
import yaml

from pmem_advisor.errors import UsageError
from pmem_advisor.knobs import catalog as kc
from pmem_advisor.knobs.version import parse_version, series, version_in

ENGINE = FLAVOUR = "tarantool"
PATH = kc.DATA / "tarantool.yaml"


def _schema() -> dict:
    schema = copy.deepcopy(kc.catalog_schema())
    for key in ("engine", "flavour"):
        enum = schema["properties"][key].get("enum")  # older schemas list the engines
        if enum is not None and FLAVOUR not in enum:
            enum.append(FLAVOUR)
    return schema


@lru_cache(maxsize=1)
def raw() -> dict:
    data = yaml.safe_load(PATH.read_text(encoding="utf-8"))
    try:
        jsonschema.validate(data, _schema())
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path)
        raise kc.CatalogDataError(f"{PATH.name}: {where}: {e.message}") from None
    names = [k["name"] for k in data["knobs"]]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise kc.CatalogDataError(f"{PATH.name}: duplicate knobs {sorted(dupes)}")
    return data


def supported_versions() -> list[str]:
    return list(raw()["series"])


@lru_cache(maxsize=16)
def load(version: str | None = None) -> kc.Catalog:
    """The box.cfg knobs of ``version`` (default: the newest series, 2.6)."""
    data = raw()
    supported = data["series"]
    version = str(version or supported[-1]).strip()
    try:
        wanted = parse_version(version)
    except (ValueError, TypeError):
        raise UsageError(f"Tarantool version {version!r} is not a version number") from None
    if series(version, 2) not in supported and not (
            data.get("open_ended") and wanted > parse_version(supported[-1])):
        raise UsageError(f"Tarantool {version} is not supported (supported: "
                         f"{', '.join(supported)}{' and newer' if data.get('open_ended') else ''})")
    knobs, absent = {}, {}
    for entry in data["knobs"]:
        since, until = entry.get("since"), entry.get("until")
        if not version_in(version, since, until):
            absent[entry["name"]] = (since, until)
            continue
        knobs[entry["name"]] = kc.build_knob(ENGINE, FLAVOUR, entry, version)
    return kc.Catalog(ENGINE, FLAVOUR, data["title"], version, knobs, absent, None)
