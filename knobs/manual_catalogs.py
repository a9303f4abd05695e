"""MariaDB 11.4's catalog, from reference material (``make catalogs``).

    python -m pmem_advisor.knobs.manual_catalogs           # write them
    python -m pmem_advisor.knobs.manual_catalogs --check   # exit 1 when a shipped one differs

MariaDB 11.4 (Debian 12 ships 10.11) cannot be asked for its settings here. (MySQL 8.0/8.4 are
read from the servers' own recorded output by ``knobs.recorded``, no longer from a typed list.)
``knobs/data/reference/<flavour>.yaml`` lists each series' names
and says where they were read; a series may build on another (``base``: a listed series, or one
a server reported, ``generated/<flavour>-<base>.json``) with names ``added``. The curated
catalog's ``removed:`` entries and knobs with ``until`` take names out; its knobs give type,
range, enum values, scope and default where it has them. The result is written like a server's
list to ``generated/<flavour>-<series>.json`` with ``read_from: manual`` and ``complete: false``,
so every reader knows a value was read from a manual, not a server, and that a name missing
from it may still exist.
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

import jsonschema
import yaml

from pmem_advisor.knobs import catalog
from pmem_advisor.knobs.generate import FORMAT, OUT_DIR, SCHEMA, write_catalog
from pmem_advisor.knobs.version import version_in

REFERENCE = catalog.DATA / "reference"
_SCOPES = {"reinit": "restart"}  # the generated format knows no re-initialisation
_TYPES = {"path": "string"}


def reference(flavour: str) -> dict:
    with open(REFERENCE / f"{flavour}.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def _base_facts(flavour: str, ref: dict, base: str) -> dict[str, dict]:
    """name -> entry of the series ``base``: a listed one (by name only) or a server's list."""
    if base in ref["series"]:
        return {n: {} for n in names_of(flavour, ref, base)}
    path = OUT_DIR / f"{flavour}-{base}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    if doc.get("read_from") != "server":
        raise ValueError(f"{path.name}: the base of a manual list must be a server's list")
    facts = {k["name"]: k for k in doc["knobs"]}
    facts.update({o: {} for o in doc.get("options", []) if o not in facts})
    return facts


def _base_ignored(flavour: str, spec: dict) -> list[str]:
    """The base server's ignored (compatibility-only) options: kept by the later series."""
    path = OUT_DIR / f"{flavour}-{spec['base']}.json" if "base" in spec else None
    if path is None or not path.is_file():
        return []
    return json.loads(path.read_text(encoding="utf-8")).get("ignored_options", [])


def names_of(flavour: str, ref: dict, name: str) -> set[str]:
    spec = ref["series"][name]
    if "base" in spec:
        names = set(_base_facts(flavour, ref, spec["base"]))
    else:
        names = set(spec["names"].split())
    return names | set(spec.get("added", "").split())


def build(flavour: str, name: str) -> dict:
    """The generated-catalog document of series ``name`` of ``flavour``."""
    ref = reference(flavour)
    spec = ref["series"][name]
    raw = catalog._raw(flavour)
    version = str(spec["server_version"])
    base = _base_facts(flavour, ref, spec["base"]) if "base" in spec else {}
    names = names_of(flavour, ref, name)
    names -= {e["name"] for e in raw.get("removed", []) if version_in(version, e["until"], None)}
    curated = {}
    for knob in catalog._base_knobs(flavour):
        since, until = knob.versions
        if version_in(version, since, until):
            curated[knob.name] = catalog._at_version(flavour, knob.name, version)
        else:
            names.discard(knob.name)
    names |= set(curated)
    deprecated = deprecations(ref, name)
    knobs = [_entry(n, curated.get(n), base.get(n), deprecated.get(n)) for n in sorted(names)]
    ignored = [n for n in _base_ignored(flavour, spec) if n not in names]
    return {
        "format": FORMAT,
        "flavour": flavour,
        "engine": raw["engine"],
        "series": name,
        "server_version": version,
        "source": "reference material",
        "read_from": "manual",
        "complete": bool(spec.get("complete", False)),
        "reference": " ".join(str(spec["reference"]).split()),
        "generated_at": datetime.date.today().isoformat(),
        "generated_by": "make catalogs (python -m pmem_advisor.knobs.manual_catalogs)",
        **({"ignored_options": ignored} if ignored else {}),
        **({"refused": sorted(set(spec["refused"].split()) - names)}
           if spec.get("refused") else {}),
        "knobs": knobs,
    }


def deprecations(ref: dict, name: str) -> dict[str, str]:
    """name -> the release that deprecated it, for series ``name`` and the ones it builds on."""
    spec = ref["series"][name]
    out = deprecations(ref, spec["base"]) if spec.get("base") in ref["series"] else {}
    out.update({k: str(v) for k, v in (spec.get("deprecated") or {}).items()})
    return out


def _entry(name: str, knob, fact: dict | None, deprecated: str | None = None) -> dict:
    entry = _facts(name, knob, fact)
    if deprecated:
        entry["deprecated"] = deprecated
    return entry


def _facts(name: str, knob, fact: dict | None) -> dict:
    if knob is not None:  # the curated facts (from the manual, checked by a person)
        entry = {"name": name, "type": _TYPES.get(knob.type, knob.type)}
        if knob.type == "enum":
            entry["values"] = list(knob.values)
        if knob.type in catalog.NUMERIC:
            entry["min"], entry["max"] = knob.min, knob.max
        entry["default"] = None if knob.default is None else knob.render(knob.default)
        entry["scope"] = _SCOPES.get(knob.scope, knob.scope)
        entry["config_file"] = knob.config_file
        entry["category"] = knob.category
        entry["description"] = knob.description
        if knob.versions[0]:
            entry["since"] = knob.versions[0]
        return entry
    if fact:  # the base series' server fact
        return dict(fact)
    return {"name": name, "type": "string", "default": None, "scope": "restart",
            "config_file": True, "category": "server",
            "description": "known by name from the reference list; type and range not recorded"}



def series_of(flavour: str) -> list[str]:
    return list(reference(flavour)["series"])


FLAVOURS = ("mariadb",)  # MySQL: knobs.recorded


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pmem_advisor.knobs.manual_catalogs",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT_DIR, help="output folder")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when a shipped file differs")
    args = ap.parse_args(argv)
    status = 0
    for flavour in FLAVOURS:
        for name in series_of(flavour):
            doc = build(flavour, name)
            jsonschema.validate(doc, SCHEMA)
            status |= write_catalog(args.out / f"{flavour}-{name}.json", doc,
                                    check=args.check, keep=("server", "recorded"),
                                    source="read from reference material")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
