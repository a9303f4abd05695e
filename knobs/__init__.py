"""Knob catalogs (data, validated by a schema), config parsers and emitters."""
