"""MySQL and MariaDB (two flavours of one engine): spec, option-file parsing, baseline, managed
instance.

Importing the package imports nothing: the registry loads ``engine.py`` when the engine is
asked for (the spec YAML beside it names the class)."""
