"""The JSON Schemas shipped in the package, and the stamp every JSON output carries."""

import json

import jsonschema
import pytest

from pmem_advisor import schemas
from pmem_advisor.cli.output import stamp


def test_every_shipped_schema_is_valid():
    ids = schemas.known_ids()
    assert {"pmem-advisor.knobs/1", "pmem-advisor.doctor/1"} <= set(ids)
    for path in sorted(schemas.HERE.glob("*.json")):
        doc = json.loads(path.read_text())
        jsonschema.Draft202012Validator.check_schema(doc)
    for schema_id in ids:  # each kind's schema pins its own id
        assert schemas.load(schema_id)["properties"]["schema"]["const"] == schema_id


def test_stamp_puts_the_contract_first():
    doc = stamp({"findings": [], "schema": "spoofed"}, "check/1", engine="mysql",
                flavour="mariadb", version=10.11)
    assert list(doc)[:3] == ["schema", "tool_version", "target"]
    assert doc["schema"] == "pmem-advisor.check/1"
    assert doc["target"] == {"engine": "mysql", "flavour": "mariadb", "version": "10.11"}
    assert schemas.validate(doc) == "pmem-advisor.check/1"  # envelope only: no kind schema
    wrapped = stamp([1, 2], "pmem-advisor.instances/1", key="instances")
    assert wrapped["instances"] == [1, 2] and "target" not in wrapped
    with pytest.raises(ValueError):
        stamp({}, "pmem-advisor.knobs")


def test_validation_rejects_broken_documents():
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate({"knobs": []})  # no schema id
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate({"schema": "pmem-advisor.knobs/1", "tool_version": "x",
                          "target": {"engine": "postgres", "flavour": "postgresql",
                                     "version": "18"},
                          "knobs": [{"name": "shared_buffers"}]})
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate({"schema": "pmem-advisor.doctor/1", "tool_version": "x",
                          "target": {"engine": "oracle"}, "capabilities": []})


def test_the_envelope_names_every_registered_engine_and_flavour():
    """The engines are data (advisor/engines/*/): the envelope's lists follow them."""
    from pmem_advisor.engines.api import specs

    target = schemas.load("envelope")["properties"]["target"]["properties"]
    assert set(target["engine"]["enum"]) - {None} == {s.name for s in specs()}
    assert set(target["flavour"]["enum"]) - {None} == {f for s in specs() for f in s.flavours}
