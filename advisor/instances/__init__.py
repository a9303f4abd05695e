"""Managed database instances: discover servers, initialise with placement, start with a
candidate config, golden snapshots, and a registry so nothing outlives the run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pmem_advisor.instances.base import Instance
    from pmem_advisor.instances.discovery import ServerBinary

__all__ = [
    "DB_NAME",
    "Instance",
    "ServerBinary",
    "create_instance",
    "discover_servers",
    "pick_server",
    "reap_stale",
]


def create_instance(
    binary: ServerBinary,
    workdir: str | Path | None = None,
    *,
    data_dir: str | Path | None = None,
    wal_dir: str | Path | None = None,
    init_settings: dict[str, Any] | None = None,
    tcp: bool = False,
    golden_dir: str | Path | None = None,
) -> Instance:
    """A registered, not yet initialised instance of ``binary``'s server.

    Stale instances of dead earlier runs are reaped first. ``golden_dir`` (optional) is a
    snapshot cache shared between instances; by default snapshots live with the instance.
    """
    from pmem_advisor.engines import api
    from pmem_advisor.instances.registry import reap_stale

    notes: list[str] = []
    reap_stale(notes)
    for note in notes:  # what the reaper left alone, and why: the user should know
        print(f"note: {note}", file=sys.stderr)
    cls = api.get_engine(binary.engine).instance_class
    return cls(binary, workdir, data_dir=data_dir, wal_dir=wal_dir,
               init_settings=init_settings, tcp=tcp, golden_dir=golden_dir)


def __getattr__(name: str) -> Any:
    # Lazy (PEP 562) so that `check`, which only asks discovery for the installed version,
    # does not import the instance machinery (base, golden, cgroups, psutil): issue 55's
    # start-up budget. The imports stay explicit so the import-cycle test sees them.
    if name in ("DB_NAME", "Instance"):
        from pmem_advisor.instances import base

        return getattr(base, name)
    if name in ("ServerBinary", "discover_servers", "pick_server"):
        from pmem_advisor.instances import discovery

        return getattr(discovery, name)
    if name == "reap_stale":
        from pmem_advisor.instances.registry import reap_stale

        return reap_stale
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
