"""Database engines as packages: ``api`` is the contract (``Engine``, ``EngineSpec``) and the
lookup the generic layers use; ``registry`` (the composition root) reads every
``<engine>/<name>.yaml`` and loads the engine's class on demand; ``base`` holds what engine
packages share. One package per engine: postgres/, mysql/, duckdb/, rocksdb/, tarantool/,
advice/ (the advice-only engines)."""

from pmem_advisor.engines.api import (
    Engine,
    EngineBinary,
    EngineDataError,
    EngineSpec,
    get_engine,
    resolve,
    specs,
)

__all__ = ["Engine", "EngineBinary", "EngineDataError", "EngineSpec", "get_engine", "resolve",
           "specs"]
