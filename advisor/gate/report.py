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
class CheckReport:
    fail_on: str
    targets: list[TargetResult] = field(default_factory=list)
    findings: list[GateFinding] = field(default_factory=list)
    suppressed: list[Suppressed] = field(default_factory=list)
    baselined: list[GateFinding] = field(default_factory=list)
    skipped: int = 0  # findings of rules the project file skips
    errors: list[FileError] = field(default_factory=list)
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
    def emulated(self) -> bool:
        return any(t.emulated for t in self.targets)

    @property
    def files(self) -> list[str]:
        return [t.file for t in self.targets if t.file]
