"""What one run of the gate found: findings located at file and line, suppressions, baseline
matches, per-file errors and notes, and the exit code they decide (issue 55)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pmem_advisor.errors import EXIT_FINDINGS, EXIT_OK, AdvisorError


@dataclass(frozen=True)
class GateFinding:
    """A finding where a CI system shows it: rule, severity, the key it is about, the file and
    line that set the key (the included file's line through includes), reason and fix."""

    rule: str
    severity: str
    key: str
    reason: str
    fix: str = ""
    insights: tuple[str, ...] = ()
    file: str | None = None
    line: int | None = None
    risk: bool = False  # a durability risk: suppressible only with --allow-unsafe

    @property
    def subject(self) -> str:  # the rules' name for the key
        return self.key

    @property
    def message(self) -> str:
        return self.reason

    def to_dict(self) -> dict:
        return {"rule": self.rule, "insights": list(self.insights), "severity": self.severity,
                "subject": self.key, "message": self.reason, "fix": self.fix,
                "file": self.file, "line": self.line}

    def baseline_key(self) -> tuple[str, str, str]:
        """(file, rule, key): lines move when a file is edited; these do not."""
        return (self.file or "", self.rule, self.key)


@dataclass(frozen=True)
class Suppressed:
    finding: GateFinding
    reason: str  # the text after the rule id ("" when none was given: itself a warning)
    line: int  # the line of the comment

    def to_dict(self) -> dict:
        return {**self.finding.to_dict(), "suppressed_by": {"line": self.line,
                                                            "reason": self.reason}}


@dataclass
class TargetResult:
    """One checked target (a config file, a server, or the host alone)."""

    file: str | None
    engine: str | None
    flavour: str | None
    version: str | None
    source: str
    findings: list[GateFinding] = field(default_factory=list)
    budget: list[str] | None = None
    memory: dict | None = None
    memory_lines: list[str] = field(default_factory=list)
    diff: list[dict] | None = None
    emulated: bool = False
    files: list[str] = field(default_factory=list)  # the file and the includes it read


@dataclass
class FileError:
    """A file that could not be checked: the one-line error and its exit code."""

    file: str
    error: AdvisorError

    @property
    def exit_code(self) -> int:
        return self.error.exit_code

    def to_dict(self) -> dict:
        return {"file": self.file, "error": str(self.error), "exit_code": self.exit_code}


@dataclass
class SkippedFile:
    """A file a walk or a glob found whose engine nothing tells (an nginx.conf in conf.d):
    not the gate's to judge, so not an error; named in a note and counted."""

    file: str
    why: str

    def to_dict(self) -> dict:
        return {"file": self.file, "reason": self.why}


@dataclass
class CheckReport:
    fail_on: str
    targets: list[TargetResult] = field(default_factory=list)
    findings: list[GateFinding] = field(default_factory=list)
    suppressed: list[Suppressed] = field(default_factory=list)
    baselined: list[GateFinding] = field(default_factory=list)
    skipped: int = 0  # findings of rules the project file skips
    errors: list[FileError] = field(default_factory=list)
    skipped_files: list[SkippedFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def failing(self) -> list[GateFinding]:
        from pmem_advisor.rules.model import severity_rank

        limit = severity_rank(self.fail_on)
        return [f for f in self.findings if severity_rank(f.severity) >= limit]

    @property
    def exit_code(self) -> int:
        """The worst outcome decides: an unreadable file (2) or environment problem (3) above
        a finding at or above --fail-on (1) above none (0)."""
        codes = [e.exit_code for e in self.errors]
        if self.failing:
            codes.append(EXIT_FINDINGS)
        return max(codes, default=EXIT_OK)

    @property
    def errors_exit_code(self) -> int:
        """The exit code when the findings are written as the baseline (--write-baseline):
        only a file that could not be checked fails the run."""
        return max((e.exit_code for e in self.errors), default=EXIT_OK)

    @property
    def target(self) -> dict:
        """The engine, flavour and version checked (of the first target), for the JSON
        envelope."""
        one = self.targets[0] if self.targets else None
        return {"engine": one.engine if one else None,
                "flavour": one.flavour if one else None,
                "version": one.version if one else None}

    def to_json(self) -> dict:
        """What `check --format json` prints under its schema envelope."""
        one = self.targets[0] if self.targets else None
        return {
            "source": one.source if one else "none",
            "findings": [f.to_dict() for f in self.findings],
            "diff": one.diff if one else None,
            "budget": one.budget if one else None,
            "memory": one.memory if one else None,
            "notes": self.notes,
            "emulated_pmem": self.emulated,
            "files": self.files,
            "suppressed": [s.to_dict() for s in self.suppressed],
            "baselined": [f.to_dict() for f in self.baselined],
            "skipped": self.skipped,
            "errors": [e.to_dict() for e in self.errors],
            "skipped_files": [s.to_dict() for s in self.skipped_files],
        }

    def text_lines(self) -> list[str]:
        """What `check` prints for a person: the findings with their fixes, the memory and
        budget lines, suppressions, what the baseline and the project file left out, and
        the diff against recommend (--diff)."""
        lines = [f"{f.severity:4} [{f.rule}] {f.key}: {f.reason}"
                 + (f"\n     fix: {f.fix}" if f.fix else "") for f in self.findings]
        if not self.findings:
            lines.append("no findings" + (f" ({len(self.errors)} file(s) could not be checked:"
                                          " see the errors)" if self.errors else ""))
        many = len(self.targets) > 1
        budget: list[str] = []
        for t in self.targets:
            lines += [f"memory: {t.file}: {m}" if many else f"memory: {m}"
                      for m in t.memory_lines]
            budget += [b for b in t.budget or [] if b not in budget]
        lines += [f"budget: {b}" for b in budget]
        lines += [f"suppressed [{s.finding.rule}] {s.finding.key} ({s.finding.file}:{s.line})"
                  f": {s.reason or '(no reason given)'}" for s in self.suppressed]
        if self.baselined or self.skipped:
            lines.append(f"{len(self.baselined)} finding(s) in the baseline, {self.skipped} of "
                         "rules the project file skips: not reported")
        if self.skipped_files:
            lines.append(f"{len(self.skipped_files)} file(s) skipped: found by a walk or a "
                         "glob, and not a config of an engine the gate can tell (see the notes)")
        rows = self.targets[0].diff if self.targets else None
        if rows is not None:
            lines.append(f"\ndiff against recommend ({len(rows)} setting(s) differ):")
            for r in rows:
                lines.append(f"  {r['name']}: {r['running']} -> {r['recommended']}  "
                             f"[{r['rule']}]{'  (restart)' if r['restart'] else ''}")
                if r["statement"]:
                    lines.append(f"    {r['statement']}")
                lines.append(f"    then: {r['then']}")
        return lines

    @property
    def emulated(self) -> bool:
        return any(t.emulated for t in self.targets)

    @property
    def files(self) -> list[str]:
        return [t.file for t in self.targets if t.file]
