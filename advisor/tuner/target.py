"""What the tuned file is sized for (production), apart from what the benchmark needs.

A benchmark drives a few clients against a small server; a DBA deploys the tuned file to a
server that takes its application's peak connections in its whole memory budget. The knobs
that size for that load (``max_connections``, per-connection memory, the memory budget) come
from the target described here, never from ``--clients``. Each value says where it came from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from pmem_advisor.errors import UsageError

# superuser_reserved_connections (3) plus room for monitoring and admin tools: the same +10
# the rules' baselines add to a client count.
RESERVED_CONNECTIONS = 10


@dataclass
class ProductionTarget:
    """The production load the tuned file is sized for."""

    connections: int | None  # peak client connections; None = the rules' default for the kind
    connections_source: str
    memory_bytes: int
    memory_source: str
    notes: list[str] = field(default_factory=list)

    def describe(self) -> list[str]:
        from pmem_advisor.rules.model import human_bytes

        conn = (f"{self.connections} client connections" if self.connections is not None
                else "the rules' default connections")
        return [f"production target: {conn} ({self.connections_source})",
                f"production target: memory {human_bytes(self.memory_bytes)} "
                f"({self.memory_source})", *self.notes]

    def to_dict(self) -> dict[str, Any]:
        return {"connections": self.connections, "connections_source": self.connections_source,
                "memory_bytes": self.memory_bytes, "memory_source": self.memory_source,
                "notes": list(self.notes)}


def host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 << 30


def machine_memory(profile: dict | None) -> tuple[int, str]:
    """The machine's memory budget: the cgroup-aware budget when the rules provide it."""
    try:
        from pmem_advisor.rules.budget import effective_budget

        b = effective_budget(profile or {})
        if b.memory_bytes and b.memory_bytes > 0:
            return int(b.memory_bytes), f"this machine: {b.memory_source} (no --memory)"
    except Exception:  # noqa: BLE001 - no budget module or no limits probed: the host's RAM
        pass
    return host_memory(), "this machine's RAM (no --memory)"


def live_connections(dsn: str, engine: str) -> tuple[int, str]:
    """Client connections of a running server: its max_connections minus the reserve."""
    from pmem_advisor.connection import redact_dsn
    from pmem_advisor.instances.live import read_server

    settings = read_server(dsn, engine).get("settings") or {}
    try:
        live = int(settings["max_connections"])
    except (KeyError, TypeError, ValueError):
        raise UsageError(f"the server at {redact_dsn(dsn)} did not report max_connections; "
                         "pass --connections") from None
    clients = max(1, live - RESERVED_CONNECTIONS)
    return clients, (f"the live server's max_connections {live} at {redact_dsn(dsn)}, "
                     f"less {RESERVED_CONNECTIONS} reserved")


def production_target(engine: str, *, clients: int, connections: int | None = None,
                      memory_bytes: int | None = None, dsn: str | None = None,
                      profile: dict | None = None, default_connections: int | None = None
                      ) -> ProductionTarget:
    """The target from ``--connections``/``--memory``/``--dsn``, else the machine's memory and
    the rules' default connection count for the workload's kind (``default_connections``).

    ``--connections`` below the benchmark's ``clients`` is refused: the benchmark would open
    more connections than the file allows."""
    notes: list[str] = []
    if connections is not None:
        conn_source = "--connections"
        if connections < clients:
            raise UsageError(f"--connections {connections} is below the benchmark's --clients "
                             f"{clients}; pass --connections {clients} or more (the peak of "
                             "the production load), or fewer --clients")
    elif dsn:
        connections, conn_source = live_connections(dsn, engine)
    else:
        connections = None
        conn_source = ("no --connections or --dsn: the rules' default for this workload"
                       + (f" ({default_connections})" if default_connections else ""))
        if default_connections is not None and clients > default_connections:
            connections = clients
            conn_source = (f"--clients {clients}: more than the rules' default "
                           f"{default_connections}; pass --connections for production")
    if connections is not None and connections < clients:
        notes.append(f"note: the live server allows {connections} client connections, fewer "
                     f"than the benchmark's {clients}; the tuned file keeps the live value")
    if memory_bytes is not None:
        mem, mem_source = memory_bytes, "--memory"
    else:
        mem, mem_source = machine_memory(profile)
    return ProductionTarget(connections, conn_source, int(mem), mem_source, notes)
