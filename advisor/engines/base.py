"""The Engine interface: what the CLI, the rules and the tuner ask of a database engine.

An engine is a package: data plus one class. The data (``advisor/engines/<engine>/<name>.yaml``,
checked by ``engine.schema.json``) says its name, title, kind, flavours, packages, binaries, config
format, workloads and the papers its rules cite; the class (named by the YAML's ``module``)
does what differs per engine: emit and parse its config, run it, measure it.

Adding an engine means, each in its own place:
  knobs/data/<flavour>.yaml                  the knob catalog (safety classes, risky_values)
  advisor/engines/<engine>/<name>.yaml       this engine's data
  advisor/engines/<engine>/engine.py         the Engine subclass (emit, parse, run, measure)
  advisor/engines/<engine>/workload.py       its workloads (made by ``Engine.workload``)
  advisor/engines/<engine>/baseline.py, rules/catalog/PMnnn_*.py   its rules
                                             (``Rule.engines = (name,)``)

Everything an engine cannot do raises a one-line ``UsageError`` (exit 2: the request does not
fit the engine) or ``EnvironmentProblem`` (exit 3: something to install), never
``NotImplementedError``. The defaults below are that refusal, or the generic behaviour that
suits most engines.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pmem_advisor.errors import AdvisorError, EnvironmentProblem, UsageError

if TYPE_CHECKING:  # only for the annotations: importing them here would load everything
    from pmem_advisor.knobs.catalog import Catalog
    from pmem_advisor.knobs.emit import EmittedConfig, Header, Setting
    from pmem_advisor.rules.memory import MemoryEstimate
    from pmem_advisor.rules.model import Rule
    from pmem_advisor.tuner.evaluator import Evaluator

KINDS = ("server", "embedded", "tool", "advice")


class EngineDataError(AdvisorError):
    """An engine YAML breaks its schema or names a module that cannot be imported: the
    installation is broken (exit 3), said in one line naming the file and the field."""


@dataclass(frozen=True)
class EngineSpec:
    """One engine's YAML, validated. See engine.schema.json for what each field means."""

    name: str
    title: str
    kind: str
    flavours: tuple[str, ...]
    config_format: str
    module: str
    packages: Mapping[str, Any]
    aliases: Mapping[str, str | None] = field(default_factory=dict)
    version_parts: int = 2
    binaries: tuple[str, ...] = ()
    config_name: str | None = None
    workloads: tuple[str, ...] = ()
    tuning: Mapping[str, Any] = field(default_factory=dict)
    papers: tuple[str, ...] = ()
    notes: str = ""
    source: str = ""  # the YAML file it came from (for messages)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "") -> EngineSpec:
        return cls(
            name=data["name"], title=data["title"], kind=data["kind"],
            flavours=tuple(data["flavours"]), config_format=data["config_format"],
            module=data["module"], packages=dict(data.get("packages") or {}),
            aliases=dict(data.get("aliases") or {}),
            version_parts=int(data.get("version_parts", 2)),
            binaries=tuple(data.get("binaries") or ()), config_name=data.get("config_name"),
            workloads=tuple(data.get("workloads") or ()), tuning=dict(data.get("tuning") or {}),
            papers=tuple(data.get("papers") or ()), notes=data.get("notes") or "",
            source=source,
        )


@dataclass(frozen=True)
class EngineBinary:
    """An installed engine program (or, for embedded engines, its Python module).

    The same attributes as ``instances.discovery.ServerBinary`` (engine, flavour, version,
    bindir, source, describe()), so the tuner treats both alike."""

    engine: str
    flavour: str
    version: str
    bindir: Path
    source: str  # debian | path | pypi | embedded
    path: Path | None = None  # the executable itself (None: a Python module)

    @property
    def server(self) -> Path | None:
        return self.path

    def tool(self, name: str) -> Path | None:
        """A companion program next to the binary or on PATH."""
        if (self.bindir / name).is_file() and os.access(self.bindir / name, os.X_OK):
            return self.bindir / name
        found = shutil.which(name)
        return Path(found) if found else None

    def describe(self) -> str:
        return f"{self.flavour} {self.version} ({self.source}: {self.path or self.bindir})"


class Engine:
    """One database engine. Subclasses set nothing by hand: ``self.spec`` (the YAML) is given
    to ``__init__`` by the registry; they override the methods below that their engine can do.

    Names: ``name`` is the CLI word and the ``engine`` of its catalogs, facts, rules
    (``Rule.engines``), workloads (``Workload.engines``) and JSON output; a ``flavour`` is one
    catalog of the engine (``mysql``/``mariadb``); a ``version`` is text like "18", "10.11.19".
    """

    def __init__(self, spec: EngineSpec) -> None:
        self.spec = spec

    def __repr__(self) -> str:
        return f"<Engine {self.name}>"

    # -- identity (from the YAML) --------------------------------------------------------
    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def title(self) -> str:
        return self.spec.title

    @property
    def kind(self) -> str:
        """server | embedded | tool | advice (advice: nothing runs here, no tune)."""
        return self.spec.kind

    @property
    def flavours(self) -> tuple[str, ...]:
        return self.spec.flavours

    @property
    def config_format(self) -> str:
        return self.spec.config_format

    @property
    def config_name(self) -> str:
        """File name of a tuned config in a ``tune --out`` folder."""
        return self.spec.config_name or f"{self.name}.tuned.conf"

    @property
    def workloads(self) -> tuple[str, ...]:
        return self.spec.workloads

    @property
    def tunable(self) -> bool:
        """True when ``tune`` can measure this engine here (not an advice-only engine)."""
        return self.kind != "advice"

    # -- flavour and version -------------------------------------------------------------
    def resolve_flavour(self, flavour: str | None = None, version: str | None = None) -> str:
        """The flavour to use: ``flavour`` when it is one of ours (UsageError otherwise), else
        the default (the first in the YAML). MySQL overrides: a version >= 10 is MariaDB."""
        if flavour:
            flavour = flavour.lower()
            if flavour not in self.flavours:
                raise UsageError(f"flavour {flavour!r} is not one of "
                                 f"{', '.join(self.flavours)} for {self.name}")
            return flavour
        return self.flavours[0]

    def installed_version(self, flavour: str | None = None) -> tuple[str | None, str | None]:
        """(flavour, version) of the installed engine, or (flavour, None) when none is found.
        ``recommend``/``check`` use it to pick the catalog version; a missing binary is not
        an error there."""
        try:
            b = self.find_binary(flavour, None)
        except (EnvironmentProblem, UsageError):
            return flavour, None
        return b.flavour, b.version

    # -- knobs ---------------------------------------------------------------------------
    def catalog(self, flavour: str | None = None, version: str | None = None) -> Catalog:
        """The knob catalog (knobs/data/<flavour>.yaml) resolved for ``version`` (default: the
        newest series). UsageError for an unsupported version or a foreign flavour."""
        from pmem_advisor.knobs.catalog import load_catalog

        return load_catalog(self.name, flavour, version)

    def emit(self, settings: list[Setting], header: Header | None = None, *,
             catalog: Catalog | None = None, fragment: bool = True) -> EmittedConfig:
        """The config text in this engine's format (``config_format``): every setting checked
        against the catalog (``knobs.emit.resolve_settings``: out of range or wrong type is a
        one-line UsageError naming the setting), one reason per line, and the text passed
        through ``knobs.emit.checked`` (no control characters). ``fragment``: only the given
        settings (False: a complete file where the format has one). Returns
        ``knobs.emit.EmittedConfig`` (text, warnings, resolved settings)."""
        raise UsageError(f"{self.title}: pmem-advisor cannot write its config yet")

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        """``{knob name: value text}`` of a config in this engine's format, for ``check
        --config``; a line that cannot be read is a one-line UsageError naming ``origin``,
        the line and the setting. Values are checked against the catalog by the caller."""
        raise UsageError(f"{self.title}: check --config cannot read {self.config_format} "
                         "files yet; pass the settings with --set NAME=VALUE")

    def read_config_file(self, path: str) -> dict[str, str]:
        """``parse_config`` of a file; a missing or unreadable file is a one-line UsageError."""
        from pmem_advisor.errors import InputError

        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            raise InputError(f"--config {path}: no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"--config {path}: cannot read it: "
                             f"{getattr(e, 'strerror', None) or e}") from None
        return self.parse_config(text, path)

    # -- rules ---------------------------------------------------------------------------
    def baseline_rules(self) -> tuple[Rule, ...]:
        """The engine's baseline sizing rules (its package's baseline.py), lowest priority;
        each has ``engines = (self.name,)``. Paper rules live in rules/catalog and are found
        there by their ``engines``. Default: none."""
        return ()

    def memory(self, settings: Mapping[str, Any], *, flavour: str, version: str | None,
               catalog: Catalog | None, host_memory_bytes: int | None = None
               ) -> MemoryEstimate | None:
        """Worst-case memory of ``settings`` (knob -> base-unit value, ``rules.model.Bytes`` or
        config text; knobs not given take the catalog default) as
        ``rules.memory.MemoryEstimate``: global bytes + per-connection bytes x connections,
        with ``parts`` naming each term and why. None: the engine has no memory model (the
        recommendation then says so instead of a fit)."""
        return None

    def fit_memory(self, rec: Any, view: Any, budget_bytes: int) -> None:
        """Lower the recommendation's memory settings (``rec.settings``) until ``memory``
        fits ``budget_bytes``; each change says why (see rules/fit.py). Default: nothing, and
        the caller notes a worst case that does not fit."""

    # -- running it ----------------------------------------------------------------------
    def install_hint(self) -> str:
        """How to install the engine, from the YAML's packages."""
        p = self.spec.packages
        parts = []
        if p.get("debian"):
            parts.append("apt-get install " + " ".join(p["debian"]))
        if p.get("pypi"):
            parts.append("pip install " + " ".join(p["pypi"]))
        if p.get("hint"):
            parts.append(p["hint"])
        return ", or ".join(parts) or f"install {self.title}"

    def missing(self, what: str | None = None) -> EnvironmentProblem:
        """The exit-3 error for a missing program, naming the package to install."""
        return EnvironmentProblem(f"{what or self.title} is not installed",
                                  hint=self.install_hint())

    def find_binary(self, flavour: str | None = None, version: str | None = None
                    ) -> EngineBinary:
        """The installed engine program matching ``flavour`` and a ``version`` prefix.

        Default: the first of the YAML's ``binaries`` found on PATH (``python:<module>``: an
        importable module), version from ``binary_version``. Raises ``EnvironmentProblem``
        (exit 3) naming the package to install when none is found, or none of the version."""
        if self.kind == "advice":
            raise EnvironmentProblem(f"{self.title} is advice-only: pmem-advisor does not run "
                                     "it here", hint=f"use recommend/check {self.name}")
        fl = self.resolve_flavour(flavour, version)
        for entry in self.spec.binaries:
            if entry.startswith("python:"):
                module = entry.split(":", 1)[1]
                import importlib.util

                found_spec = importlib.util.find_spec(module)
                if found_spec is None:
                    continue
                where = Path(found_spec.origin or ".").parent
                b = EngineBinary(self.name, fl, self.binary_version(None), where, "pypi")
            else:
                found = shutil.which(entry)
                if not found:
                    continue
                path = Path(found)
                b = EngineBinary(self.name, fl, self.binary_version(path), path.parent,
                                 "path", path)
            if version and not (b.version == version
                                or b.version.startswith(version.rstrip(".") + ".")):
                raise EnvironmentProblem(f"no {self.title} {version} found (found: "
                                         f"{b.describe()})", hint=self.install_hint())
            return b
        names = ", ".join(b.split(":", 1)[-1] for b in self.spec.binaries) or self.name
        raise self.missing(f"{self.title} ({names})")

    def binary_version(self, path: Path | None) -> str:
        """The version of the installed program (``path``; None for a Python module).
        Default: "unknown"; engines override (``db_bench --version``, ``duckdb.__version__``)."""
        return "unknown"

    def binary_status(self) -> tuple[bool, str]:
        """(present, detail) for ``doctor``: the binary found, or the package to install."""
        if self.kind == "advice":
            return True, "advice only (nothing to install)"
        try:
            return True, self.find_binary().describe()
        except EnvironmentProblem as e:
            return False, str(e)

    def validate_by_starting(self, config_text: str, workdir: str | Path, *,
                             binary: Any = None) -> None:
        """Start the engine (``binary``, default ``find_binary()``) with ``config_text`` in a
        scratch directory under ``workdir``, then stop it and remove everything. Returns when
        it started; raises ``UsageError`` naming the setting the engine refused (its own
        message), ``EnvironmentProblem`` when it cannot be run here."""
        raise EnvironmentProblem(f"{self.title}: validating a config by starting it is not "
                                 "supported", hint=f"use `pmem-advisor check {self.name} "
                                 "--config FILE`")

    def workload(self, name: str, **options: Any) -> Any:
        """The workload ``name`` for this engine, with its own ``options``.

        The tuner reads: ``name``, ``kind`` (oltp|olap|mixed|kv: the rules' workload),
        ``default_scale``, ``data_bytes(scale)``, ``scale_for_bytes(nbytes)``,
        ``bytes_per_scale``, ``scale_per_client`` (see workloads/base.py: subclassing
        ``Workload`` gives them). The engine's evaluator is the only one that runs it.
        Default: the shared registry's workload, refused when it does not list this engine."""
        from pmem_advisor.workloads.registry import workload_class

        cls = workload_class(name)
        if self.name not in cls.engines:
            raise UsageError(f"workload {name} runs on {'/'.join(cls.engines)}, not on "
                             f"{self.name}", hint=self._workload_hint())
        return cls(**options)

    def _workload_hint(self) -> str | None:
        return f"{self.name} runs: {', '.join(self.workloads)}" if self.workloads else None

    def evaluator(self, binary: Any, workload: Any, *, scale: int, clients: int,
                  duration: float, warmup: float, data_dir: str | Path | None,
                  wal_dir: str | Path | None, workdir: str | Path | None,
                  catalog: Catalog, cgroup: Any = None) -> Evaluator:
        """A ``tuner.evaluator.Evaluator`` that, per trial, starts ``binary`` with the trial's
        config (``TrialConfig.params``: knob -> base-unit value) on a fresh copy of the loaded
        data (golden copy, loaded once at ``scale``) in ``data_dir`` (``wal_dir``: the log),
        runs ``workload`` with ``clients`` for ``warmup`` + ``duration`` seconds, measures,
        stops it, and inside ``cgroup`` when given. ``close()`` removes everything it made.
        Scratch lives under ``workdir`` (registered so the reaper removes it after a kill)."""
        raise EnvironmentProblem(f"{self.title} cannot be tuned here (advice only)",
                                 hint=f"use `pmem-advisor recommend {self.name}`")

    def apply_lines(self, path: str, settings: Mapping[str, str], restart: list[str],
                    flavour: str | None = None) -> list[str]:
        """How a DBA deploys the tuned file ``path`` (``settings``: name -> rendered value;
        ``restart``: names read at start only), as lines for the tune summary. Default: use
        the file as the engine's config and restart it."""
        return [f"apply: use {path} as the {self.title} {self.config_format} config (or merge "
                f"its {len(settings)} settings into yours) and restart {self.title}"]

    # -- tuning hints (from the YAML's ``tuning``) ---------------------------------------
    @property
    def main_buffer(self) -> str | None:
        """The knob the tuned data must outgrow (shared_buffers); None: size by RAM/4."""
        return self.spec.tuning.get("main_buffer")

    def default_connections(self, kind: str) -> int | None:
        """The connection count the rules assume for a workload kind when none is given."""
        value = (self.spec.tuning.get("default_connections") or {}).get(kind)
        return None if value is None else int(value)

    @property
    def production_knobs(self) -> frozenset[str]:
        """Knobs the rules size for the production load and budget (YAML
        ``tuning.production_knobs``): a tuned file keeps the rules' value whichever trial
        wins, so its worst case stays within the budget (PostgreSQL/MySQL: the per-connection
        memory and max_connections, tuner/session.py PRODUCTION_KNOBS)."""
        return frozenset(self.spec.tuning.get("production_knobs") or ())

    def default_tune_knobs(self) -> list[str]:
        """Knobs ``tune`` searches when the rules name none."""
        return list(self.spec.tuning.get("default_knobs") or ())

    def data_bounds(self, workload: Any, scale: int, catalog: Catalog,
                    budget_bytes: int | None = None) -> list[Any]:
        """What ``workload`` at ``scale`` within ``budget_bytes`` demands of any config that
        is to run it, as ``tuner.feasible.DataBound`` (knob, low/high in the catalog's unit,
        reason): an arena that must hold the data, an allocation unit no larger than the
        records, a buffer cap that the budget holds. Every search space and both baselines
        stay inside them. Default: none (a cache only caches)."""
        return []


class ServerEngine(Engine):
    """An engine run as a managed server by ``advisor/instances`` (PostgreSQL, MySQL/MariaDB):
    discovery, instances, the ManagedEvaluator and validate-by-starting are shared."""

    @property
    def workloads(self) -> tuple[str, ...]:
        """The shared workloads whose ``engines`` list this engine (workloads/registry.py)."""
        if self.spec.workloads:
            return self.spec.workloads
        from pmem_advisor.workloads.registry import WORKLOADS

        return tuple(n for n, cls in WORKLOADS.items() if self.name in cls.engines)

    def find_binary(self, flavour: str | None = None, version: str | None = None) -> Any:
        """``instances.pick_server``: a ServerBinary; EnvironmentProblem naming the package."""
        from pmem_advisor.instances.discovery import pick_server

        return pick_server(self.name, flavour, version)

    def installed_version(self, flavour: str | None = None) -> tuple[str | None, str | None]:
        try:
            from pmem_advisor.instances import discover_servers
        except ImportError:
            return flavour, None
        for b in discover_servers(self.name):
            if flavour is None or b.flavour == flavour:
                return b.flavour, str(b.version)
        return flavour, None

    def binary_status(self) -> tuple[bool, str]:
        from pmem_advisor.capabilities import server_capability

        cap = server_capability(self.name, f"{self.name}-server")
        return cap.available, cap.detail

    def evaluator(self, binary: Any, workload: Any, *, scale: int, clients: int,
                  duration: float, warmup: float, data_dir: str | Path | None,
                  wal_dir: str | Path | None, workdir: str | Path | None,
                  catalog: Catalog, cgroup: Any = None) -> Evaluator:
        from pmem_advisor.tuner.managed import ManagedEvaluator

        return ManagedEvaluator(binary, workload, scale=scale, clients=clients,
                                duration=duration, warmup=warmup, data_dir=data_dir,
                                wal_dir=wal_dir, workdir=workdir, catalog=catalog,
                                cgroup=cgroup)

    def memory(self, settings: Mapping[str, Any], *, flavour: str, version: str | None,
               catalog: Catalog | None, host_memory_bytes: int | None = None
               ) -> MemoryEstimate | None:
        from pmem_advisor.rules.memory import server_worst_case

        return server_worst_case(self.name, settings, flavour=flavour, version=version,
                                 catalog=catalog, host_memory_bytes=host_memory_bytes)
