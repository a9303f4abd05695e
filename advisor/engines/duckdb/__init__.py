"""DuckDB, the in-process analytic engine: its spec, catalog reading, SQL config, the child
process that opens it, memory model, baseline and workload.

Importing the package imports nothing: the registry loads ``engine.py`` when the engine is
asked for (the spec YAML beside it names the class)."""
