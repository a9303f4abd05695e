"""What both config parsers return: settings with the file and line they came from."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ConfigEntry:
    name: str  # canonical: lowercase; MySQL also '-' -> '_' and no 'loose-' prefix
    value: str | None  # unquoted text; None for a bare MySQL flag ("skip-log-bin" sets OFF)
    file: str
    line: int
    raw_name: str = ""
    group: str | None = None  # my.cnf group; None for postgresql.conf
    loose: bool = False  # my.cnf 'loose-' prefix: the server ignores it when unknown

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class ConfigFile:
    format: str  # "postgresql" | "mycnf"
    path: str
    entries: list[ConfigEntry] = field(default_factory=list)  # in the order the server reads
    files: list[str] = field(default_factory=list)  # every file read, includes too
    ignored: list[ConfigEntry] = field(default_factory=list)  # my.cnf groups the server skips
    notes: list[str] = field(default_factory=list)  # e.g. include_if_exists of a missing file

    def effective(self) -> dict[str, ConfigEntry]:
        """Last one wins, as in the servers."""
        result: dict[str, ConfigEntry] = {}
        for e in self.entries:
            result.pop(e.name, None)  # keep the order of the winning lines
            result[e.name] = e
        return result

    def to_dict(self) -> dict:
        return {
            "format": self.format, "path": self.path, "files": self.files, "notes": self.notes,
            "settings": [
                {"name": e.name, "value": e.value, "file": e.file, "line": e.line,
                 "group": e.group, "loose": e.loose} for e in self.effective().values()
            ],
        }
