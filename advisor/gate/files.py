"""Which files one run checks, and what each is for: paths, directories and globs expanded;
the engine and version from the flags, the file's first-line comment, the project file
(``.pmem-advisor.toml``) or the path's shape (issue 55)."""

from __future__ import annotations

import glob as globlib
import os
import re
from dataclasses import dataclass, field

from pmem_advisor.errors import InputError, UsageError

PROJECT_FILE = ".pmem-advisor.toml"
# What a directory walk picks up (besides files a project glob names): MySQL/MariaDB option
# files and PostgreSQL configs. A first-line comment makes any other file a config.
CONFIG_SUFFIXES = (".cnf", ".conf")
# `# pmem-advisor: mysql 8.4` (or `; pmem-advisor: ...` in a my.cnf) on the first line; not an
# `ignore` comment, which is a suppression.
HEADER = re.compile(r"^\s*[#;]\s*pmem-advisor:\s*(?!ignore\b)(\S+)(?:\s+(\S+))?\s*$")
ENTRY_KEYS = ("glob", "engine", "version", "memory", "cpus", "skip")
TOP_KEYS = ("files", "skip", "exclude")
HEAD_BYTES = 4096


@dataclass
class FileSpec:
    """One file and what it is checked as; None: not said (the next source decides)."""

    path: str
    label: str  # how errors name it: the path, or `--config PATH`
    db: str | None = None  # an engine name or alias (split_engine's input)
    version: str | None = None
    memory: str | None = None
    cpus: int | None = None
    skip: set[str] = field(default_factory=set)
    said_by: str = ""  # where the engine came from, for the notes
    found: bool = False  # by a directory walk or a glob, not named on the command line


@dataclass
class Entry:
    glob: str
    pattern: re.Pattern
    values: dict


@dataclass
class Project:
    path: str
    root: str
    entries: list[Entry]
    skip: set[str]
    exclude: list[Entry] = field(default_factory=list)

    def excludes(self, path: str) -> bool:
        """Whether an ``exclude`` glob matches the file or a directory above it (inside the
        project; a file outside it is not the project's to exclude)."""
        rel = os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
        if rel.startswith("../") or rel == "..":
            return False
        parts = rel.split("/")
        return any(e.pattern.fullmatch("/".join(parts[:i]))
                   for e in self.exclude for i in range(1, len(parts) + 1))

    def apply(self, spec: FileSpec) -> None:
        """Every entry whose glob matches the file, in file order: later entries override."""
        rel = os.path.relpath(os.path.abspath(spec.path), self.root)
        spec.skip |= self.skip
        if rel.startswith(".." + os.sep) or rel == "..":
            return  # outside the project: its entries do not speak for it
        for e in self.entries:
            if not e.pattern.fullmatch(rel.replace(os.sep, "/")):
                continue
            v = e.values
            if "engine" in v and spec.db is None:
                spec.db, spec.said_by = v["engine"], f"{PROJECT_FILE} glob {e.glob!r}"
            for key in ("version", "memory", "cpus"):
                if key in v:
                    setattr(spec, key, v[key])
            spec.skip |= set(v.get("skip", ()))


def find_project(start: str | None = None) -> str | None:
    """``.pmem-advisor.toml`` in the working directory or the nearest directory above."""
    here = os.path.abspath(start or os.getcwd())
    while True:
        candidate = os.path.join(here, PROJECT_FILE)
        if os.path.isfile(candidate):
            return candidate
        up = os.path.dirname(here)
        if up == here:
            return None
        here = up


def load_project(path: str) -> Project:
    """The project file, refused with one line naming it for an unknown key, a value of the
    wrong type or a bad glob (exit 2): a gate that half-reads its settings is no gate."""
    import tomllib

    from pmem_advisor.fileio import read_text_nofollow

    try:
        data = tomllib.loads(read_text_nofollow(path, 1 << 20))
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not TOML: {e}") from None
    _known(path, "the top level", data, TOP_KEYS)
    files = data.get("files", [])
    if not isinstance(files, list) or not all(isinstance(x, dict) for x in files):
        raise InputError(f"{path}: files must be [[files]] tables")
    entries = []
    for i, raw in enumerate(files, 1):
        where = f"[[files]] #{i}"
        _known(path, where, raw, ENTRY_KEYS)
        g = raw.get("glob")
        if not isinstance(g, str):
            raise InputError(f"{path}: {where} needs glob = \"...\" (a path pattern)")
        for key in ("engine", "version", "memory"):
            if key in raw and not isinstance(raw[key], str):
                raise InputError(f"{path}: {where} {key} must be a string")
        if "cpus" in raw and (not isinstance(raw["cpus"], int) or raw["cpus"] < 1):
            raise InputError(f"{path}: {where} cpus must be a positive integer")
        entries.append(Entry(g, glob_regex(g, f"{path}: {where}"),
                             {k: v for k, v in raw.items() if k != "glob"}))
        _rule_list(path, where, raw.get("skip", []))
    skip = _rule_list(path, "skip", data.get("skip", []))
    exclude = data.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(x, str) for x in exclude):
        raise InputError(f"{path}: exclude must be a list of path patterns such as "
                         "\"nginx/**\"")
    excluded = [Entry(g, glob_regex(g.rstrip("/") or g, f"{path}: exclude"), {})
                for g in exclude]
    return Project(path, os.path.dirname(os.path.abspath(path)), entries, skip, excluded)


def _known(path: str, where: str, table: dict, keys: tuple[str, ...]) -> None:
    for k in table:
        if k not in keys:
            raise InputError(f"{path}: unknown key {k!r} in {where} (known: {', '.join(keys)})")


def _rule_list(path: str, where: str, value) -> set[str]:
    if not isinstance(value, list) or not all(
            isinstance(x, str) and re.fullmatch(r"(CK|PM)\d{3}", x) for x in value):
        raise InputError(f"{path}: {where} skip must be a list of rule ids such as \"CK017\"")
    return set(value)


def glob_regex(pattern: str, where: str) -> re.Pattern:
    """A project glob (relative to the project file; ``**`` any depth, ``*``/``?`` within one
    path part, ``[...]`` a class) as a regex; a bad glob is a one-line error."""
    if not pattern or pattern.startswith("/") or ".." in pattern.split("/"):
        raise InputError(f"{where}: glob {pattern!r}: give a path pattern relative to the "
                         "project file, without '..'")
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1:i + 2] in ("!", "]") else i + 1)
            if end < 0:
                raise InputError(f"{where}: glob {pattern!r}: '[' without its ']'")
            body = pattern[i + 1:end]
            negate = body.startswith("!")
            # a glob class's characters are literal but for ranges: escape what a regex class
            # would read as syntax ('^' first, '\\', a nested '[', set operations)
            body = "".join("\\" + ch if ch in "\\[]^&~|" else ch
                           for ch in (body[1:] if negate else body))
            if not body:
                raise InputError(f"{where}: glob {pattern!r}: a '[!]' class of no character")
            out.append("[" + ("^" if negate else "") + body + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.compile("".join(out))
    except re.error as e:  # a class whose range runs backwards ([z-a]) and the like
        raise InputError(f"{where}: glob {pattern!r}: {e.msg}") from None


def expand(paths: list[str]) -> tuple[list[tuple[str, bool]], list[tuple[str, InputError]]]:
    """(files, errors): each path as given, a directory's config files (recursively, in name
    order, hidden directories skipped), a glob's matches; a glob matching nothing, or a
    directory holding no config file, is an error naming it. Each file comes with whether a
    walk or a glob found it (False: named as it is)."""
    files: list[tuple[str, bool]] = []
    errors: list[tuple[str, InputError]] = []
    for p in paths:
        if os.path.isdir(p):
            found = _walk(p)
            if not found:
                errors.append((p, InputError(f"{p}: a directory with no config file (*.cnf, "
                                             "*.conf) in it")))
            files += [(f, True) for f in found]
        elif os.path.lexists(p) or not globlib.has_magic(p):
            files.append((p, False))  # a missing file is the checker's one-line error
        else:
            matched = sorted(m for m in globlib.glob(p, recursive=True))
            expanded = [f for m in matched for f in (_walk(m) if os.path.isdir(m) else [m])]
            if not expanded:
                errors.append((p, InputError(f"{p}: the glob matches no file")))
            files += [(f, True) for f in expanded]
    named = {os.path.abspath(f) for f, found in files if not found}
    seen: set[str] = set()
    unique = [(f, os.path.abspath(f) not in named) for f, _ in files
              if not (os.path.abspath(f) in seen or seen.add(os.path.abspath(f)))]
    return unique, errors


def _walk(top: str) -> list[str]:
    found = []
    for d, dirs, names in os.walk(top):  # symlinked directories are not followed
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))
        for n in sorted(names):
            path = os.path.join(d, n)
            if n.endswith(CONFIG_SUFFIXES) and not n.startswith(".") or _has_header(path):
                found.append(path)
    return found


def _has_header(path: str) -> bool:
    try:
        return header_of(path) is not None
    except (OSError, UsageError):
        return False


def header_of(path: str) -> tuple[str, str | None] | None:
    """(engine, version) of a `# pmem-advisor: ENGINE [VERSION]` first line."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:  # a regular file (checked above); only its first line
            first = f.read(HEAD_BYTES).split(b"\n", 1)[0]
    except OSError as e:  # mode 000 for a user who is not root: the file's own one line
        raise InputError(f"{path}: cannot read it: {e.strerror}") from None
    m = HEADER.match(first.decode("utf-8", "replace"))
    return (m.group(1), m.group(2)) if m else None


def shape_engine(path: str) -> str | None:
    """The engine a path's shape says: my.cnf and *.cnf are MySQL/MariaDB option files,
    postgresql.conf and postgresql.auto.conf PostgreSQL's; anything else: the content."""
    name = os.path.basename(path)
    if name.endswith(".cnf"):
        return "mysql"
    if name in ("postgresql.conf", "postgresql.auto.conf"):
        return "postgres"
    return None


def engine_and_paths(targets: list[str], db: str | None) -> tuple[str | None, list[str]]:
    """`check ENGINE PATH...` as `recommend ENGINE ...`: the first target is the engine when
    it names one (or looks like a misspelt one) and no such path exists; it and ``--db`` must
    agree. Returns (the engine, the paths)."""
    from pmem_advisor.library.recommend import split_engine

    paths = list(targets or [])
    if paths and not os.path.exists(paths[0]) and _is_engine(paths[0]):
        engine = paths.pop(0)
        if db is not None and split_engine(db) != split_engine(engine):
            raise UsageError(f"the engine {engine} and --db {db} contradict each other: give one")
        db = engine
    return db, paths


def _is_engine(name: str) -> bool:
    from pmem_advisor.library.recommend import split_engine

    try:
        split_engine(name)
    except UsageError:
        return "/" not in name and "*" not in name and "." not in name  # a misspelt engine
    return True
