"""Knob catalogs (data, validated by a schema), config-file model and the generic emitter.

Import the pieces from their modules; the common names are re-exported here. Each engine's
own config parser and emitter live in its package (advisor/engines/<engine>/).
"""

from pmem_advisor.knobs.catalog import Catalog, Knob, KnobNotInVersion, load_catalog
from pmem_advisor.knobs.configfile import ConfigEntry, ConfigFile
from pmem_advisor.knobs.emit import Header, Setting, emit_config
from pmem_advisor.knobs.version import parse_version

__all__ = [
    "Catalog", "ConfigEntry", "ConfigFile", "Header", "Knob", "KnobNotInVersion", "Setting",
    "emit_config", "load_catalog", "parse_version",
]
