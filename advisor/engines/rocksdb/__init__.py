"""RocksDB through db_bench: spec, OPTIONS files, the bench runner, baseline and YCSB-like
workload.

Importing the package imports nothing: the registry loads ``engine.py`` when the engine is
asked for (the spec YAML beside it names the class)."""
