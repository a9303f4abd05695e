"""PostgreSQL: spec, postgresql.conf parsing, baseline, managed instance and pgbench.

Importing the package imports nothing: the registry loads ``engine.py`` when the engine is
asked for (the spec YAML beside it names the class)."""
