"""The ``pmem-advisor`` command: a thin Typer layer over the library API."""
