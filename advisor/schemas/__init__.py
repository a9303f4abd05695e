"""JSON Schemas of every ``--json`` output, one file per schema id.

``pmem-advisor.<kind>/<n>`` lives in ``<kind>-<n>.json`` next to this module; ``envelope.json``
is what every stamped document has in common (schema id, tool version, optional target).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PREFIX = "pmem-advisor."
SCHEMA_PREFIX = PREFIX


def schema_file(schema_id: str) -> Path:
    """The file holding ``schema_id`` ("pmem-advisor.knobs/1" -> knobs-1.json)."""
    kind, _, number = schema_id.removeprefix(PREFIX).partition("/")
    return HERE / f"{kind}-{number}.json"


def known_ids() -> list[str]:
    """Every schema id shipped with the package."""
    ids = []
    for path in sorted(HERE.glob("*-*.json")):
        kind, _, number = path.stem.rpartition("-")
        ids.append(f"{PREFIX}{kind}/{number}")
    return ids


@lru_cache(maxsize=32)
def load(schema_id: str) -> dict:
    """The JSON Schema for ``schema_id`` ("envelope" for the common part)."""
    path = HERE / "envelope.json" if schema_id == "envelope" else schema_file(schema_id)
    if not path.is_file():
        raise KeyError(f"no JSON Schema shipped for {schema_id!r}")
    return json.loads(path.read_text(encoding="utf-8"))


def validate(doc: Any) -> str:
    """Check ``doc`` against the envelope and its own schema (by ``doc["schema"]``) when one
    is shipped; returns the schema id. jsonschema.ValidationError when it does not conform."""
    import jsonschema

    jsonschema.validate(doc, load("envelope"))
    schema_id = doc["schema"]
    if schema_file(schema_id).is_file():
        jsonschema.validate(doc, load(schema_id))
    return schema_id


def stamp(
    doc: Mapping[str, Any] | list,
    schema: str,
    *,
    engine: str | None = None,
    flavour: str | None = None,
    version: str | None = None,
    key: str = "items",
) -> dict:
    """``doc`` with the contract fields first: schema id, tool version and the target.

    ``schema`` is ``pmem-advisor.<kind>/<n>`` (the prefix may be left out). A list is wrapped
    as ``{key: list}``. ``target`` ({engine, flavour, version}) is added when any is given.
    """
    schema = schema if schema.startswith(SCHEMA_PREFIX) else SCHEMA_PREFIX + schema
    kind, _, number = schema[len(SCHEMA_PREFIX):].partition("/")
    if not kind or not number.isdigit():
        raise ValueError(f"schema id must look like pmem-advisor.<kind>/<n>: {schema!r}")
    body = {key: list(doc)} if isinstance(doc, list) else dict(doc)
    head: dict[str, Any] = {"schema": schema, "tool_version": _tool_version()}
    if engine or flavour or version:
        head["target"] = {"engine": engine, "flavour": flavour,
                          "version": None if version is None else str(version)}
    for k in head:
        body.pop(k, None)
    return {**head, **body}


def _tool_version() -> str:
    from pmem_advisor import __version__

    return __version__
