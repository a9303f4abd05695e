"""Which server a command targets: an engine name or alias, its flavour and version."""

from __future__ import annotations

from pmem_advisor.errors import EnvironmentProblem


def resolve_engine(engine: str, flavour: str | None) -> tuple[str, str | None]:
    """(engine name, flavour) for an engine name or alias ('mariadb' -> mysql, mariadb);
    UsageError for an unknown engine (the list is the YAML files in advisor/engines/*/)."""
    from pmem_advisor.engines.registry import resolve

    eng, picked = resolve(engine)
    return eng.name, flavour or picked


def resolve_target(engine: str, flavour: str | None, version: str | None
                   ) -> tuple[str | None, str | None]:
    """Flavour and version from the options, else from the local server binary (mysql with a
    version: the installed server of that version decides MySQL or MariaDB)."""
    engine, flavour = resolve_engine(engine, flavour)
    if engine == "mysql" and flavour is None:
        if version is None:  # MySQL means MySQL; MariaDB when asked for (recommend's rule)
            return "mysql", None
        try:
            from pmem_advisor.instances import pick_server

            binary = pick_server(engine, None, version)
            return binary.flavour, version or binary.version
        except EnvironmentProblem:
            return None, version
    return flavour, version
