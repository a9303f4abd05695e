"""Shared implementations for the engine packages, over the generic layers.

``api.Engine`` is the contract; ``Engine`` here fills in what most engines share: the knob
catalog read from knobs/data/<flavour>.yaml, and the shared workloads that list the engine.
``ServerEngine`` adds the managed servers of ``advisor/instances`` (discovery, instances, the
ManagedEvaluator) for PostgreSQL and MySQL/MariaDB; each one's worst-case memory is in its
package (memory.py).
Only engine packages import this module; the generic layers know ``api`` alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pmem_advisor.engines import api
from pmem_advisor.engines.api import KINDS, EngineBinary, EngineDataError, EngineSpec, EvalRequest
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.catalog import Catalog, build_catalog

# The instance code, the tuner and the workloads are imported by the methods that use them:
# `check FILE` reaches an engine for its catalog and parser only, and must not pay for (or
# depend on) a server manager, Optuna or the workload drivers (issue 55's import budget,
# tests/cli/test_import_budget.py).
if TYPE_CHECKING:
    from pmem_advisor.tuner.evaluator import Evaluator

__all__ = ["KINDS", "Engine", "EngineBinary", "EngineDataError", "EngineSpec", "ServerEngine"]


class Engine(api.Engine):
    """An engine whose catalog is knobs/data/<flavour>.yaml and whose workloads are the shared
    ones that list it. Subclasses implement ``emit`` and ``parse_config``."""

    def catalog(self, flavour: str | None = None, version: str | None = None) -> Catalog:
        """The knob catalog (knobs/data/<flavour>.yaml) resolved for ``version`` (default: the
        newest series). UsageError for an unsupported version or a foreign flavour."""
        return build_catalog(self.spec, flavour, version)

    def read_config_file(self, path: str) -> dict[str, str]:
        """``parse_config`` of a file read by the one bounded config reader
        (knobs.includes.IncludeWalk: regular files only, size limits, one-line errors)."""
        import os

        from pmem_advisor.errors import InputError
        from pmem_advisor.knobs.includes import IncludeWalk

        if not os.path.lexists(path):
            raise InputError(f"--config {path}: no such file")
        text = IncludeWalk(what=f"a {self.config_format} file").read(path, 0, None, None)
        return self.parse_config(text, path)

    def workload(self, name: str, **options: Any) -> Any:
        """The shared workload ``name``, refused when it does not list this engine."""
        from pmem_advisor.workloads.registry import workload_class

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
        from pmem_advisor.workloads.registry import all_workloads

        return tuple(n for n, cls in all_workloads().items() if self.name in cls.engines)

    def find_binary(self, flavour: str | None = None, version: str | None = None) -> Any:
        """``instances.pick_server``: a ServerBinary; EnvironmentProblem naming the package."""
        from pmem_advisor.instances.discovery import pick_server

        return pick_server(self.name, flavour, version)

    def installed_version(self, flavour: str | None = None) -> tuple[str | None, str | None]:
        from pmem_advisor.instances.discovery import discover_servers

        for b in discover_servers(self.name):
            if flavour is None or b.flavour == flavour:
                return b.flavour, str(b.version)
        return flavour, None

    def binary_status(self) -> tuple[bool, str]:
        from pmem_advisor.instances.discovery import server_status

        best, detail, _ = server_status(self.name)
        return best is not None, detail

    def discovered_capability(self, better: Any = None) -> tuple[str, bool, str, str]:
        """``server_capability`` from ``instances.server_status``: "<name>-server", the server
        a managed instance would use, else the install hint; ``better(best)``: how to get a
        better server than the one found ("" when it is the best)."""
        from pmem_advisor.instances.discovery import server_status

        best, detail, hint = server_status(self.name)
        label = f"{self.name}-server"
        if best is None:
            return label, False, detail, hint
        return label, True, detail, better(best) if better else ""

    def evaluator(self, request: EvalRequest) -> Evaluator:
        from pmem_advisor.tuner import managed

        r = request  # managed.ManagedEvaluator looked up now: tests put a fake in its place
        return managed.ManagedEvaluator(r.binary, r.workload, scale=r.scale, clients=r.clients,
                                        duration=r.duration, warmup=r.warmup,
                                        data_dir=r.data_dir, wal_dir=r.wal_dir,
                                        workdir=r.workdir, catalog=r.catalog, cgroup=r.cgroup)

