"""Database engines as data: ``registry.get_engine("pg")`` gives the ``base.Engine`` of an
engine named by its YAML in ``data/``. See base.py for the contract an engine implements."""

from pmem_advisor.engines.base import Engine, EngineBinary, EngineDataError, EngineSpec
from pmem_advisor.engines.registry import get_engine, list_engines, resolve

__all__ = ["Engine", "EngineBinary", "EngineDataError", "EngineSpec", "get_engine",
           "list_engines", "resolve"]
