"""Advice-only engines (SQL Server, openGauss MOT, Hyrise, VoltDB): findings, OS steps and a
commented snippet; pmem-advisor never runs, tunes or validates them.

Their rules are rules/catalog/PM080-PM091 (``Rule.engines = (name,)``). The knob catalog is
empty: the papers name no knob of these engines that a catalog could bound safely, and the few
vendor settings the rules recommend (mssql-conf ``memory.memorylimitmb``, trace flags,
VoltDB's deployment.xml paths) travel as OS steps. ``emit`` writes what those steps put in
the engine's own config file (their ``config``: ``rules.model.ConfigLine`` data, never their
wording) as a snippet in that format where it has one (mssql.conf, deployment.xml), every
other line a comment.
"""

from __future__ import annotations

from typing import Any

from pmem_advisor.engines.base import Engine
from pmem_advisor.errors import UsageError
from pmem_advisor.knobs.catalog import Catalog
from pmem_advisor.knobs.emit import EmittedConfig, Header, checked, header_lines, one_line
from pmem_advisor.rules.model import ConfigLine


def advice_only(title: str) -> UsageError:
    """The one-line refusal (exit 2) of everything that would run the engine."""
    return UsageError(f"advice only: pmem-advisor does not run {title}",
                      hint="use `recommend` or `check` for its findings and OS steps")


class AdviceEngine(Engine):
    """One class for every ``kind: advice`` engine; the YAML says which."""

    @property
    def tunable(self) -> bool:
        return False

    # -- knobs: none ---------------------------------------------------------------------
    def catalog(self, flavour: str | None = None, version: str | None = None):
        fl = self.resolve_flavour(flavour, version)
        return Catalog(engine=self.name, flavour=fl, title=self.title,
                       version=version or "any", knobs={}, absent={})

    def emit(self, settings: list, header: Any = None, *, catalog: Any = None,
             fragment: bool = True):
        """A commented snippet: the header (whose notes carry the rules' OS steps), then the
        lines of those steps that belong in the engine's config file, uncommented."""
        header = header or Header()
        catalog = catalog or self.catalog(header.flavour or None, header.version or None)
        if settings:  # the catalog is empty: nothing can be set through it
            raise UsageError(f"{self.title} has no knob catalog: "
                             f"{', '.join(s.name for s in settings)} cannot be set here")
        lines = header_lines(header, catalog, "advice snippet")
        lines.append(f"# advice only: pmem-advisor does not run {one_line(self.title)}; apply "
                     "the steps above by hand, measured before and after.")
        # the rules' findings as comments, so the snippet says why each step is there
        for f in getattr(header, "findings", ()) or ():
            lines.append(f"# {one_line(f.rule)} [{one_line(f.severity)}] {one_line(f.subject)}: "
                         f"{one_line(f.message)}")
        lines_of_steps = tuple(c for s in getattr(header, "steps", ()) or ()
                               for c in getattr(s, "config", ()) or ()
                               if c.file == self.config_format)
        body = self._body(lines_of_steps)
        if body:
            lines.append(f"# --- {self.config_format} ---")
            lines += body
        return EmittedConfig(checked("\n".join(lines) + "\n"))

    def _body(self, config: tuple[ConfigLine, ...]) -> list[str]:
        if self.config_format == "mssql.conf":
            return _mssql_conf(config)
        if self.config_format == "deployment.xml":
            return list(dict.fromkeys(c.value for c in config))
        return []

    def parse_config(self, text: str, origin: str) -> dict[str, str]:
        """``check --config``: mssql.conf as ``section.key`` (``memory.memorylimitmb``,
        ``traceflag.traceflag0``), deployment.xml as ``element.attribute`` paths
        (``commandlog.synchronous``, ``paths.voltdbroot.path``); the rules PM082, PM084 and
        PM090 read them. Engines without a config file refuse in one line."""
        if self.config_format == "mssql.conf":
            return _parse_ini(text, origin)
        if self.config_format == "deployment.xml":
            return _parse_deployment(text, origin)
        raise UsageError(f"{self.title} has no config file pmem-advisor reads: check it "
                         "without --config")

    # -- running it: never ---------------------------------------------------------------
    def find_binary(self, flavour: str | None = None, version: str | None = None):
        raise advice_only(self.title)

    def installed_version(self, flavour: str | None = None):
        return flavour, None  # nothing is looked up: the user's --version is all we know

    def binary_status(self) -> tuple[bool, str]:
        return True, "advice only (nothing to install)"

    def validate_by_starting(self, config_text: str, workdir: Any, *, binary: Any = None):
        raise advice_only(self.title)

    def evaluator(self, request: Any):
        raise advice_only(self.title)

    def workload(self, name: str, **options: Any):
        raise advice_only(self.title)


def _mssql_conf(config: tuple[ConfigLine, ...]) -> list[str]:
    """mssql.conf sections for the steps' settings (the file mssql-conf itself writes:
    ``[memory] memorylimitmb = N``, ``[traceflag] traceflag0 = 809``)."""
    sections: dict[str, dict[str, str]] = {}
    flags: list[str] = []
    for c in config:
        if c.section == "traceflag":
            flags += [c.value] if c.value not in flags else []
        else:  # the last step for a key wins, as mssql-conf does
            sections.setdefault(c.section, {})[c.key] = c.value
    if flags:
        sections["traceflag"] = {f"traceflag{i}": f for i, f in enumerate(flags)}
    out = []
    for name, entries in sections.items():
        out.append(f"[{name}]")
        out += [f"{key} = {value}" for key, value in entries.items()]
    return out


def _parse_ini(text: str, origin: str) -> dict[str, str]:
    """mssql.conf (the INI file mssql-conf writes): ``[section]`` then ``key = value``."""
    out: dict[str, str] = {}
    section = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip().lower()
            continue
        key, eq, value = line.partition("=")
        if not eq or not key.strip() or section is None:
            raise UsageError(f"{origin}:{n}: not a mssql.conf line (want [section] then "
                             f"key = value): {line[:60]!r}")
        out[f"{section}.{key.strip().lower()}"] = value.strip()
    return out


def _parse_deployment(text: str, origin: str) -> dict[str, str]:
    """VoltDB's deployment.xml flattened: every attribute as ``element.path.attribute``."""
    import xml.etree.ElementTree as ET

    if "<!DOCTYPE" in text or "<!ENTITY" in text:  # no entity expansion from user files
        raise UsageError(f"{origin}: DOCTYPE/ENTITY declarations are not read in deployment.xml")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise UsageError(f"{origin}: not valid XML: {e}") from None
    if root.tag != "deployment":
        raise UsageError(f"{origin}: the root element is <{root.tag}>, not <deployment>")
    out: dict[str, str] = {}

    def walk(el, prefix: str) -> None:
        for k, v in el.attrib.items():
            out[f"{prefix}.{k.lower()}"] = v
        for child in el:
            walk(child, f"{prefix}.{str(child.tag).lower()}")

    for child in root:
        walk(child, str(child.tag).lower())
    return out
