"""The engine list is data: every ``advisor/engines/<package>/<name>.yaml`` is one engine
(one package per engine; advice/ holds the advice-only ones).

``get_engine("pg")`` resolves names and aliases; ``resolve("mariadb")`` also gives the flavour
an alias picks. The YAML is checked against ``engine.schema.json`` when first read; the
Engine class is imported only when an engine is asked for (``module: package.module:Class``),
so listing engines never imports a heavy dependency.

This is the composition root: it knows every engine package (through their data) and the
knob catalogs' folders; the generic layers reach it only through ``engines.api``, which loads
it on first use. A broken engine package (bad YAML, a class that is missing or leaves a
contract method out) is one ``EngineDataError`` line naming the engine and the file; the
other engines keep working.
"""

from __future__ import annotations

import difflib
import importlib
import json
from functools import cache
from pathlib import Path

import yaml

from pmem_advisor.engines import api
from pmem_advisor.engines.api import Engine, EngineDataError, EngineSpec
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs import catalog as knob_catalog

ENGINES_DIR = Path(__file__).resolve().parent  # one sub-package per engine, its YAML inside
SCHEMA = ENGINES_DIR / "engine.schema.json"
_extra_dirs: list[Path] = []  # tests add folders of their own engines (add_data_dir)
_instances: dict[str, Engine] = {}


@cache
def _schema() -> dict:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


def shipped(path: Path) -> bool:
    """True for the YAML of an engine package shipped here (advisor/engines/<package>/):
    the tests check those against the schema (tests/engines/test_registry.py), so a run
    does not; an added folder's (``add_data_dir``) is checked when read (issue 55)."""
    return path.resolve().parent.parent == ENGINES_DIR


def validate_spec(data: object, path: Path) -> None:
    """The schema check of one engine YAML; EngineDataError (one line: file, field, problem).
    jsonschema is imported here: only data that was not shipped needs it at run time."""
    import jsonschema

    try:
        jsonschema.validate(data, _schema())
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "top level"
        raise EngineDataError(f"engine data {path.name}: {where}: {e.message}") from None


def load_spec(path: Path, *, validate: bool | None = None) -> EngineSpec:
    """One engine YAML, read (and validated unless shipped; ``validate`` forces either way);
    EngineDataError (one line: file, field, problem)."""
    try:
        # the package's own engine YAML (or a test's add_data_dir folder): no server's tree
        # by-name-safe: no tree a managed server's user can write
        with open(path, encoding="utf-8") as f:
            data = knob_catalog.load_yaml(f)
    except (OSError, yaml.YAMLError) as e:
        first = " ".join(str(e).split())
        raise EngineDataError(f"engine data {path.name}: cannot read it: {first}") from None
    if validate if validate is not None else not shipped(path):
        validate_spec(data, path)
    if data["name"] != path.stem:
        raise EngineDataError(f"engine data {path.name}: name {data['name']!r} must equal "
                              f"the file name {path.stem!r}")
    return EngineSpec.from_dict(data, source=str(path))


def _files() -> tuple[list[Path], dict[str, EngineDataError]]:
    """The engine YAML files, and the broken ones (a second file of the same engine)."""
    files: dict[str, Path] = {}
    broken: dict[str, EngineDataError] = {}
    packages = sorted(p for p in ENGINES_DIR.iterdir()
                      if p.is_dir() and (p / "__init__.py").is_file())
    for folder in (*packages, *_extra_dirs):
        for path in sorted(folder.glob("*.yaml")):
            if path.stem in files:
                broken[path.stem] = EngineDataError(
                    f"engine data {path}: engine {path.stem!r} is already defined by "
                    f"{files[path.stem]}")
                continue
            files[path.stem] = path
    return list(files.values()), broken


@cache
def _table() -> tuple[dict[str, EngineSpec], dict[str, EngineDataError]]:
    """(every good engine's spec by name, in a stable order: postgres, mysql first, then by
    name; every broken engine package's error by its file's name). One broken package leaves
    the others working: asking for it by name gives its one-line error."""
    paths, broken = _files()
    specs: dict[str, EngineSpec] = {}
    for path in paths:
        try:
            spec = load_spec(path)
        except EngineDataError as e:
            broken[path.stem] = e
            continue
        specs[spec.name] = spec
    for name, error in _alias_errors(specs).items():
        broken[name] = error
        del specs[name]
    order = sorted(specs, key=lambda n: ({"postgres": 0, "mysql": 1}.get(n, 2), n))
    return {n: specs[n] for n in order}, broken


def _specs() -> dict[str, EngineSpec]:
    return _table()[0]


def broken() -> dict[str, EngineDataError]:
    """The engine packages that cannot be read, by engine (file) name: doctor lists them."""
    return dict(_table()[1])


def _alias_errors(specs: dict[str, EngineSpec]) -> dict[str, EngineDataError]:
    errors: dict[str, EngineDataError] = {}
    seen: dict[str, str] = {n: n for n in specs}
    for spec in specs.values():
        for alias, flavour in spec.aliases.items():
            owner = seen.get(alias)
            where = Path(spec.source).name
            if owner is not None and owner != spec.name:
                errors[spec.name] = EngineDataError(
                    f"engine data {where}: alias {alias!r} is already the engine or an alias "
                    f"of {owner!r}")
                break
            seen[alias] = spec.name
            if flavour is not None and flavour not in spec.flavours:
                errors[spec.name] = EngineDataError(
                    f"engine data {where}: alias {alias!r} picks flavour {flavour!r}, not one "
                    f"of {', '.join(spec.flavours)}")
                break
    return errors


def specs() -> list[EngineSpec]:
    """Every engine's data, without importing any engine module."""
    return list(_specs().values())


def list_engines() -> list[str]:
    """The engine names (the CLI words), postgres and mysql first."""
    return list(_specs())


def names_text(kinds: tuple[str, ...] | None = None) -> str:
    """'postgres, mysql, duckdb ...' for help and error messages."""
    return ", ".join(s.name for s in specs() if kinds is None or s.kind in kinds)


def resolve(word: str) -> tuple[Engine, str | None]:
    """(engine, flavour the word picks or None) for an engine name or alias, any case:
    'pg' -> (postgres, 'postgresql'), 'mariadb' -> (mysql, 'mariadb'), 'mysql' -> (mysql,
    None: decided by the version or the installed server). UsageError for unknown words."""
    key = str(word).strip().lower()
    table, broken_ones = _table()
    if key in broken_ones:
        raise broken_ones[key]
    if key in table:
        spec = table[key]
        return _engine(spec), spec.aliases.get(key)
    for spec in table.values():
        if key in spec.aliases:
            return _engine(spec), spec.aliases[key]
    words = list(table) + [a for s in table.values() for a in s.aliases]
    close = difflib.get_close_matches(key, words, n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}?" if close else None
    raise UsageError(f"unknown engine {word!r} (use {names_text()})", hint=hint)


def get_engine(word: str) -> Engine:
    """The engine for a name or alias ('pg', 'postgresql', 'mariadb'); UsageError if unknown."""
    return resolve(word)[0]


def engines(*, skip_broken: bool = False) -> list[Engine]:
    """Every engine, imported (for doctor and help that ask each engine something).
    ``skip_broken``: leave out an engine whose module cannot be imported, so that one broken
    engine does not take the others down (asking for it by name still fails loudly)."""
    out = []
    for s in specs():
        try:
            out.append(_engine(s))
        except (EngineDataError, ImportError):
            if not skip_broken:
                raise
    return out


def _engine(spec: EngineSpec) -> Engine:
    if spec.name in _instances:
        return _instances[spec.name]
    module_name, _, class_name = spec.module.partition(":")
    where = Path(spec.source).name
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):  # the engine's own module is missing
            raise EngineDataError(f"engine {spec.name} ({where}): module {module_name} cannot "
                                  "be imported (not installed?)") from None
        raise  # a dependency the module needs: main() names the extra to install
    cls = getattr(module, class_name, None)
    if cls is None:
        raise EngineDataError(f"engine {spec.name} ({where}): {module_name} has no class "
                              f"{class_name}")
    if not (isinstance(cls, type) and issubclass(cls, Engine)):
        raise EngineDataError(f"engine {spec.name} ({where}): {spec.module} is not an Engine "
                              "subclass")
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        raise EngineDataError(f"engine {spec.name} ({where}): {spec.module} does not implement "
                              f"{', '.join(missing)} (engines/api.py)")
    engine = cls(spec)
    _instances[spec.name] = engine
    return engine


def add_data_dir(folder: str | Path) -> None:
    """Also read engine YAML files from ``folder`` and knob catalogs from ``folder/knobs``
    (tests register engines of their own this way)."""
    folder = Path(folder)
    if folder not in _extra_dirs:
        _extra_dirs.append(folder)
        knob_catalog.EXTRA_CATALOG_DIRS.append(folder / "knobs")
    reset()


def remove_data_dir(folder: str | Path) -> None:
    folder = Path(folder)
    if folder in _extra_dirs:
        _extra_dirs.remove(folder)
        knob_catalog.EXTRA_CATALOG_DIRS.remove(folder / "knobs")
    reset()


def reset() -> None:
    """Forget what was read (after the data folders changed)."""
    _table.cache_clear()
    _instances.clear()
    knob_catalog.clear_caches()


def engine_help(kinds: tuple[str, ...] | None = None, *, default: str = "") -> str:
    """Help text naming the engines (and aliases) for a CLI argument; never fails (a broken
    engine YAML is reported when the command runs, not when --help is built)."""
    try:
        chosen = [s for s in specs() if kinds is None or s.kind in kinds]
    except EngineDataError:
        return default or "an engine name (see `pmem-advisor doctor`)"
    aliases = [a for s in chosen for a in s.aliases if a != s.name]
    text = ", ".join(s.name for s in chosen)
    return text + (f" (also {', '.join(aliases)})" if aliases else "") + "."


class _Registry(api.EngineLookup):
    """This module's answers to the generic layers' questions (``engines.api``)."""

    def get_engine(self, word: str) -> Engine:
        return get_engine(word)

    def resolve(self, word: str) -> tuple[Engine, str | None]:
        return resolve(word)

    def specs(self) -> list[EngineSpec]:
        return specs()

    def names_text(self, kinds: tuple[str, ...] | None = None) -> str:
        return names_text(kinds)


api.install_lookup(_Registry())
