"""The engine contract: what the CLI, the rules, the knobs and the tuner may ask of a database
engine, and the one way the generic layers find an engine by name.

An engine is a package (``advisor/engines/<engine>/``): data plus one class. The data
(``<name>.yaml``, checked by ``engine.schema.json``) says its name, title, kind, flavours,
packages, binaries, config format, workloads and the papers its rules cite; the class (named by
the YAML's ``module``) subclasses ``Engine`` and does what differs per engine: emit and parse
its config, run it, measure it. ``engines/base.py`` has the shared implementations over the
generic layers (a file-based catalog, the shared workloads, the managed servers).

This module sits at the bottom: it imports only the errors, so every layer may import it.
The generic layers never import an engine package or the registry; they ask ``get_engine``,
``resolve`` and ``specs`` here, which the registry (the composition root,
``engines/registry.py``, loaded on first use) answers.

Everything an engine cannot do raises a one-line ``UsageError`` (exit 2: the request does not
fit the engine) or ``EnvironmentProblem`` (exit 3: something to install), never
``NotImplementedError``. The defaults below are that refusal, or the generic behaviour that
suits most engines. ``catalog``, ``emit`` and ``parse_config`` are abstract: a class that
leaves one out is a broken engine package, reported at load (exit 2) naming the engine and
its file.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pmem_advisor.errors import (
    EXIT_USAGE,
    AdvisorError,
    EnvironmentProblem,
    UsageError,
)

# -- the types the contract names -------------------------------------------------------------
# What an engine hands the generic layers and takes from them, described here at the bottom
# as protocols, so this module names no layer above it (not even for annotations: a type-only
# import upward is a circle, tests/test_import_cycles.py counts them). The classes that
# satisfy them live in those layers: knobs.catalog.Catalog, knobs.emit.Setting / Header /
# EmittedConfig, rules.memory.MemoryEstimate, rules.model.Rule, tuner.evaluator.Evaluator.


@runtime_checkable
class KnobCatalog(Protocol):
    """A flavour's knobs resolved for one version (knobs.catalog.Catalog)."""

    engine: str
    flavour: str
    title: str
    version: str
    knobs: Mapping[str, Any]

    def find(self, name: str) -> Any: ...

    def get(self, name: str) -> Any: ...


class ConfigSetting(Protocol):
    """One setting to emit: knob name, value, reason (knobs.emit.Setting)."""

    name: str
    value: Any
    reason: str


class ConfigHeader(Protocol):
    """What an emitted config's header says (knobs.emit.Header)."""

    flavour: str
    version: str


class EmittedText(Protocol):
    """An engine's config text and its warnings (knobs.emit.EmittedConfig)."""

    text: str
    warnings: list[str]


class MemoryWorstCase(Protocol):
    """Worst-case memory of a config (rules.memory.MemoryEstimate)."""

    @property
    def total_bytes(self) -> int: ...


class SizingRule(Protocol):
    """A rule the recommendation evaluates (rules.model.Rule)."""

    id: str
    engines: tuple[str, ...]


class TrialEvaluator(Protocol):
    """Measures one trial config (tuner.evaluator.Evaluator)."""

    def close(self) -> None: ...


KINDS = ("server", "embedded", "tool", "advice")


class EngineDataError(AdvisorError):
    """A broken engine package: its YAML breaks the schema, its module cannot be imported, its
    class is missing or leaves a contract method out. One line naming the engine and the file;
    exit 2; the other engines keep working."""

    exit_code = EXIT_USAGE


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


@dataclass(frozen=True)
class EvalRequest:
    """What the tuner asks an engine to measure: one object, not eleven arguments."""

    binary: Any  # the engine's EngineBinary (or instances' ServerBinary)
    workload: Any  # the engine's workload (Engine.workload)
    scale: int
    clients: int
    duration: float
    warmup: float
    data_dir: str | Path | None = None
    wal_dir: str | Path | None = None
    workdir: str | Path | None = None
    catalog: KnobCatalog | None = None
    cgroup: Any = None  # instances.cgroup.MemoryCgroup holding the engine to the budget


class Engine(ABC):
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
    @abstractmethod
    def catalog(self, flavour: str | None = None, version: str | None = None) -> KnobCatalog:
        """The knob catalog resolved for ``version`` (default: the newest series). UsageError
        for an unsupported version or a foreign flavour. ``base.Engine`` reads
        knobs/data/<flavour>.yaml."""

    @abstractmethod
    def emit(self, settings: list[ConfigSetting], header: ConfigHeader | None = None, *,
             catalog: KnobCatalog | None = None, fragment: bool = True) -> EmittedText:
        """The config text in this engine's format (``config_format``): every setting checked
        against the catalog (``knobs.emit.resolve_settings``: out of range or wrong type is a
        one-line UsageError naming the setting), one reason per line, and the text passed
        through ``knobs.emit.checked`` (no control characters). ``fragment``: only the given
        settings (False: a complete file where the format has one). Returns
        ``knobs.emit.EmittedConfig`` (text, warnings, resolved settings); an engine that cannot
        write its config raises a one-line UsageError."""

    def build_features(self, flavour: str | None, version: str | None) -> frozenset[str]:
        """What the installed server of ``version`` was built with ({"lz4", "zstd"}), read
        from the build; empty when unknown or not installed (the rules then assume none)."""
        return frozenset()

    takes_sql = False  # settings a client sets with SQL statements (sql_statement below)

    def no_sql(self) -> UsageError:
        return UsageError(f"--format sql is for servers a client configures (PostgreSQL, "
                          f"MySQL, MariaDB), not {self.title}",
                          hint="use --format conf for its own config file")

    def sql_statement(self, knob: Any, value: Any, flavour: str, version: str | None) -> Any:
        """The ``knobs.emit.Statement`` that sets ``knob`` to ``value`` on a running server
        (``recommend --format sql``, ``check --diff``); engines with ``takes_sql``."""
        raise self.no_sql()

    def sql_epilogue(self, statements: list[Any]) -> list[str]:
        """Lines after the statements (what applies them, what they cannot set)."""
        return []

    @abstractmethod
    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        """``{knob name: value text}`` of a config in this engine's format, for ``check
        --config``; a line that cannot be read is a one-line UsageError naming ``origin``,
        the line and the setting. Values are checked against the catalog by the caller; an
        engine that cannot read its format raises a one-line UsageError."""

    @abstractmethod
    def read_config_file(self, path: str) -> dict[str, str]:
        """``parse_config`` of a file; a missing or unreadable file is a one-line InputError.
        One reader for every engine (``engines.base.Engine``: knobs.includes.IncludeWalk,
        regular files only, opened without blocking, size limits, and as root the trust rule:
        a link another user owns, a managed server's user in its own data directory, counts
        as that user's claim), so the contract itself opens no file by name."""

    # -- rules ---------------------------------------------------------------------------
    def baseline_rules(self) -> tuple[SizingRule, ...]:
        """The engine's baseline sizing rules (its package's baseline.py), lowest priority;
        each has ``engines = (self.name,)``. Paper rules live in rules/catalog and are found
        there by their ``engines``. Default: none."""
        return ()

    def memory(self, settings: Mapping[str, Any], *, flavour: str, version: str | None,
               catalog: KnobCatalog | None, host_memory_bytes: int | None = None
               ) -> MemoryWorstCase | None:
        """Worst-case memory of ``settings`` (knob -> base-unit value, ``rules.model.Bytes`` or
        config text; knobs not given take the catalog default) as
        ``rules.memory.MemoryEstimate``: global bytes + per-connection bytes x connections,
        with ``parts`` naming each term and why. None: the engine has no memory model (the
        recommendation then says so instead of a fit)."""
        return None

    # True when ``memory`` takes ``files_in_memory=True``: the data directory is tmpfs and the
    # files the engine writes there (WAL, flushed and compacted files) are counted as memory.
    counts_files_in_memory = False
    # True when ``memory`` takes ``host_cpus=N``: a default the server derives from the CPUs
    # changes what it allocates (MySQL 8.4's buffer pool instances, and so its rounding).
    uses_host_cpus = False

    def fit_memory(self, rec: Any, view: Any, budget_bytes: int) -> None:
        """Lower the recommendation's memory settings (``rec.settings``) until ``memory``
        fits ``budget_bytes``; each change says why (see rules/fit.py). Default: nothing, and
        the caller notes a worst case that does not fit."""
        return None

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
        Default: refused (``base.Engine``: the shared workloads that list this engine)."""
        raise UsageError(f"{self.title} runs no workload {name!r}", hint=self.workload_hint())

    #: The managed-server class (``instances.base.Instance``) of a server engine; None: the
    #: engine is not run by ``instances.create_instance``.
    instance_class: type | None = None

    def own_workloads(self) -> dict[str, Callable[..., Any]]:
        """Workloads only this engine runs, by name (PostgreSQL's pgbench-*): the workload
        registry lists them beside the shared ones. Default: none."""
        return {}

    def workload_hint(self) -> str | None:
        return f"{self.name} runs: {', '.join(self.workloads)}" if self.workloads else None

    def evaluator(self, request: EvalRequest) -> TrialEvaluator:
        """A ``tuner.evaluator.Evaluator`` that, per trial, starts ``request.binary`` with the
        trial's config (``TrialConfig.params``: knob -> base-unit value) on a fresh copy of the
        loaded data (golden copy, loaded once at ``request.scale``) in ``request.data_dir``
        (``wal_dir``: the log), runs ``request.workload`` with ``clients`` for ``warmup`` +
        ``duration`` seconds, measures, stops it, and inside ``cgroup`` when given.
        ``close()`` removes everything it made. Scratch lives under ``workdir`` (registered so
        the reaper removes it after a kill)."""
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

    def workload_knobs(self, workload: Any) -> list[str]:
        """Knobs searched beside the defaults because of where ``workload`` keeps its data
        (Tarantool's vinyl caches when its data is in vinyl). Default: none."""
        return []

    @property
    def host_derived_defaults(self) -> bool:
        """Whether a catalog default may be derived from the host (DuckDB's memory_limit: 80%
        of its RAM), so a search range capped by the budget need not hold it (YAML
        ``tuning.host_derived_defaults``, default true; false where the catalog holds the
        server's own fixed defaults, read from pg_settings or SYSTEM_VARIABLES)."""
        return bool(self.spec.tuning.get("host_derived_defaults", True))

    # -- doctor ----------------------------------------------------------------------------
    def server_capability(self) -> tuple[str, bool, str, str] | None:
        """``doctor``'s row for a managed server the instances layer finds: (label, found,
        what was found or why not, how to get it or a better one). None: the engine is listed
        as "engine NAME" with its ``binary_status``."""
        return None
    def data_bounds(self, workload: Any, scale: int, catalog: KnobCatalog,
                    budget_bytes: int | None = None) -> list[Any]:
        """What ``workload`` at ``scale`` within ``budget_bytes`` demands of any config that
        is to run it, as ``tuner.feasible.DataBound`` (knob, low/high in the catalog's unit,
        reason): an arena that must hold the data, an allocation unit no larger than the
        records, a buffer cap that the budget holds. Every search space and both baselines
        stay inside them. Default: none (a cache only caches)."""
        return []


# -- finding an engine by name (the registry answers; the generic layers ask) ---------------
class EngineLookup(ABC):
    """What the registry offers the generic layers: engines by name, and their specs."""

    @abstractmethod
    def get_engine(self, word: str) -> Engine:
        """The engine for a name or alias; UsageError if unknown, EngineDataError if broken."""

    @abstractmethod
    def resolve(self, word: str) -> tuple[Engine, str | None]:
        """(engine, the flavour the word picks or None)."""

    @abstractmethod
    def specs(self) -> list[EngineSpec]:
        """Every engine's data, without importing any engine module."""

    @abstractmethod
    def names_text(self, kinds: tuple[str, ...] | None = None) -> str:
        """'postgres, mysql, duckdb ...' for messages."""


REGISTRY = "pmem_advisor.engines.registry"  # the composition root, loaded on first use
_LOOKUP: list[EngineLookup] = []


def install_lookup(lookup: EngineLookup) -> None:
    """Called by the registry when it is loaded."""
    _LOOKUP[:] = [lookup]


def _lookup() -> EngineLookup:
    if not _LOOKUP:
        # Loaded by name on first use, as the registry loads each engine's class from its YAML:
        # the registry sits above every layer that asks (it imports the knob catalogs), so a
        # static import here would be an upward one.
        importlib.import_module(REGISTRY)
    return _LOOKUP[0]


def get_engine(word: str) -> Engine:
    """The engine for a name or alias ('pg', 'mariadb'); UsageError if unknown."""
    return _lookup().get_engine(word)


def engine_of(engine: str | Engine) -> Engine:
    """``engine`` itself when the caller passed the engine (what the generic layers should be
    given: the engine package builds its catalog and memory model and hands itself down), else
    the registry's engine of that name, for callers that still name it by a word."""
    return engine if isinstance(engine, Engine) else get_engine(engine)


def resolve(word: str) -> tuple[Engine, str | None]:
    return _lookup().resolve(word)


def specs() -> list[EngineSpec]:
    return _lookup().specs()


def names_text(kinds: tuple[str, ...] | None = None) -> str:
    return _lookup().names_text(kinds)


def loadable_engines() -> list[Engine]:
    """Every engine whose package loads, in the registry's order; a broken one is left out
    (asking for it by name gives its one-line error)."""
    out = []
    for spec in specs():
        try:
            out.append(get_engine(spec.name))
        except (EngineDataError, ImportError):
            continue
    return out


def spec_of(name: str) -> EngineSpec:
    """The data of the engine called ``name`` (its name, not an alias); UsageError if none."""
    for spec in specs():
        if spec.name == name:
            return spec
    raise UsageError(f"unknown engine {name!r} (use {names_text()})")
