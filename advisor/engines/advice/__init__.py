"""The advice-only engines (SQL Server, openGauss MOT, Hyrise, VoltDB): their YAML and the one
Engine class that answers recommend/check for them; nothing runs here.

Importing the package imports nothing: the registry loads ``engine.py`` when the engine is
asked for (the spec YAML beside it names the class)."""
