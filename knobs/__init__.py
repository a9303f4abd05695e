"""Knob catalogs (data, validated by a schema), config parsers and emitters, server validation.

Import the pieces from their modules; the common names are re-exported here.
"""

from pmem_advisor.engines.mysql.parse import parse_mycnf
from pmem_advisor.engines.postgres.parse import parse_postgresql_conf
from pmem_advisor.knobs.catalog import Catalog, Knob, KnobNotInVersion, load_catalog
from pmem_advisor.knobs.configfile import ConfigEntry, ConfigFile
from pmem_advisor.knobs.emit import Header, Setting, emit_config, emit_mycnf, emit_postgresql_conf
from pmem_advisor.knobs.version import parse_version

__all__ = [
    "Catalog", "ConfigEntry", "ConfigFile", "Header", "Knob", "KnobNotInVersion", "Setting",
    "emit_config", "emit_mycnf", "emit_postgresql_conf", "load_catalog", "parse_mycnf",
    "parse_postgresql_conf", "parse_version",
]
