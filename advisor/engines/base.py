"""Shared implementations for the engine packages, over the generic layers.

``api.Engine`` is the contract; ``Engine`` here fills in what most engines share: the knob
catalog read from knobs/data/<flavour>.yaml, and the shared workloads that list the engine.
``ServerEngine`` adds the managed servers of ``advisor/instances`` (discovery, instances, the
ManagedEvaluator, the worst-case memory of rules/memory.py) for PostgreSQL and MySQL/MariaDB.
Only engine packages import this module; the generic layers know ``api`` alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pmem_advisor.engines import api
from pmem_advisor.engines.api import KINDS, EngineBinary, EngineDataError, EngineSpec, EvalRequest
from pmem_advisor.errors import UsageError
from pmem_advisor.instances.discovery import discover_servers, pick_server, server_status
from pmem_advisor.knobs.catalog import Catalog, build_catalog
from pmem_advisor.rules.memory import server_worst_case
from pmem_advisor.tuner import managed
from pmem_advisor.workloads.registry import all_workloads, workload_class

if TYPE_CHECKING:
    from pmem_advisor.rules.memory import MemoryEstimate
    from pmem_advisor.tuner.evaluator import Evaluator

__all__ = ["KINDS", "Engine", "EngineBinary", "EngineDataError", "EngineSpec", "ServerEngine"]


class Engine(api.Engine):
    """An engine whose catalog is knobs/data/<flavour>.yaml and whose workloads are the shared
    ones that list it. Subclasses implement ``emit`` and ``parse_config``."""

    def catalog(self, flavour: str | None = None, version: str | None = None) -> Catalog:
        """The knob catalog (knobs/data/<flavour>.yaml) resolved for ``version`` (default: the
        newest series). UsageError for an unsupported version or a foreign flavour."""
        return build_catalog(self.spec, flavour, version)

    def workload(self, name: str, **options: Any) -> Any:
        """The shared workload ``name``, refused when it does not list this engine."""
        cls = workload_class(name)
        if self.name not in cls.engines:
            raise UsageError(f"workload {name} runs on {'/'.join(cls.engines)}, not on "
                             f"{self.name}", hint=self.workload_hint())
        return cls(**options)


class ServerEngine(Engine):
    """An engine run as a managed server by ``advisor/instances`` (PostgreSQL, MySQL/MariaDB):
    discovery, instances, the ManagedEvaluator and validate-by-starting are shared."""

    @property
    def workloads(self) -> tuple[str, ...]:
        """The shared workloads whose ``engines`` list this engine (workloads/registry.py)."""
        if self.spec.workloads:
            return self.spec.workloads
        return tuple(n for n, cls in all_workloads().items() if self.name in cls.engines)

    def find_binary(self, flavour: str | None = None, version: str | None = None) -> Any:
        """``instances.pick_server``: a ServerBinary; EnvironmentProblem naming the package."""
        return pick_server(self.name, flavour, version)

    def installed_version(self, flavour: str | None = None) -> tuple[str | None, str | None]:
        for b in discover_servers(self.name):
            if flavour is None or b.flavour == flavour:
                return b.flavour, str(b.version)
        return flavour, None

    def binary_status(self) -> tuple[bool, str]:
        best, detail, _ = server_status(self.name)
        return best is not None, detail

    def evaluator(self, request: EvalRequest) -> Evaluator:
        r = request  # managed.ManagedEvaluator looked up now: tests put a fake in its place
        return managed.ManagedEvaluator(r.binary, r.workload, scale=r.scale, clients=r.clients,
                                        duration=r.duration, warmup=r.warmup,
                                        data_dir=r.data_dir, wal_dir=r.wal_dir,
                                        workdir=r.workdir, catalog=r.catalog, cgroup=r.cgroup)

    def memory(self, settings: Mapping[str, Any], *, flavour: str, version: str | None,
               catalog: Catalog | None, host_memory_bytes: int | None = None
               ) -> MemoryEstimate | None:
        return server_worst_case(self.name, settings, flavour=flavour, version=version,
                                 catalog=catalog, host_memory_bytes=host_memory_bytes)
