"""Findings silenced on purpose: an inline ``# pmem-advisor: ignore CK017 reason`` on the
finding's line or the line above, and a baseline of a legacy fleet's known findings. Neither
passes a durability risk without --allow-unsafe: the same rule as today (issue 55)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace

from pmem_advisor.errors import InputError
from pmem_advisor.gate.report import GateFinding, Suppressed

IGNORE = re.compile(r"[#;]\s*pmem-advisor:\s*ignore\s+((?:CK|PM)\d{3}(?:\s*,\s*(?:CK|PM)\d{3})*)"
                    r"(?:\s+(.*?))?\s*$")
BASELINE_SCHEMA = "pmem-advisor.baseline/1"
NO_REASON = "ignore-without-reason"
REFUSED = "ignore-refused"


def _lines(path: str, cache: dict) -> list[str]:
    if path not in cache:
        from pmem_advisor.knobs.configfile import read_head

        try:
            cache[path] = read_head(path, 16 << 20).splitlines()
        except (OSError, InputError):
            cache[path] = []
    return cache[path]


def _comment(lines: list[str], line: int, rule: str) -> tuple[int, str] | None:
    """(comment line, reason) of an ignore for ``rule`` on ``line`` or a comment-only line
    right above it."""
    for n in (line, line - 1):
        if not 1 <= n <= len(lines):
            continue
        text = lines[n - 1]
        if n != line and not text.lstrip().startswith(("#", ";")):
            continue
        m = IGNORE.search(text)
        if m and rule in re.split(r"\s*,\s*", m.group(1)):
            return n, (m.group(2) or "").strip()
    return None


def apply_suppressions(findings: list[GateFinding], allow_unsafe: bool
                       ) -> tuple[list[GateFinding], list[Suppressed], list[GateFinding]]:
    """(kept, suppressed, warnings): a finding with an ignore comment for its rule is
    suppressed; one without a reason is a warning at the comment; a durability FAIL stays
    (a warning says why) unless --allow-unsafe accepted the risk."""
    cache: dict = {}
    kept, suppressed, warnings = [], [], []
    for f in findings:
        hit = _comment(_lines(f.file, cache), f.line, f.rule) if f.file and f.line else None
        if hit is None:
            kept.append(f)
            continue
        line, reason = hit
        if f.risk and not allow_unsafe:
            kept.append(f)
            warnings.append(GateFinding(
                REFUSED, "warn", f.key, f"the ignore of {f.rule} on line {line} does not "
                "silence a durability risk: accept it with --allow-unsafe, or fix it",
                file=f.file, line=line))
            continue
        suppressed.append(Suppressed(f, reason, line))
        if not reason:
            warnings.append(GateFinding(
                NO_REASON, "warn", f.key, f"the ignore of {f.rule} gives no reason: say why "
                f"after the rule id (# pmem-advisor: ignore {f.rule} REASON)",
                file=f.file, line=line))
    return kept, suppressed, warnings


def _rel(path: str | None) -> str:
    """A baseline's file names: relative to the working directory, so the baseline is the
    same in every checkout."""
    return os.path.relpath(os.path.abspath(path)) if path else ""


def _key(f: GateFinding) -> tuple[str, str, str]:
    return (_rel(f.file), f.rule, f.key)


def baseline_doc(findings: list[GateFinding]) -> str:
    """The baseline of these findings: keyed by file, rule and key, not by line (lines move
    when a file is edited; the finding is the same)."""
    keys = sorted({_key(f) for f in findings})
    return json.dumps({"schema": BASELINE_SCHEMA, "findings": [
        {"file": k[0], "rule": k[1], "key": k[2]} for k in keys]}, indent=2) + "\n"


def write_baseline(path: str, findings: list[GateFinding]) -> None:
    from pmem_advisor.fileio import write_file_safely

    write_file_safely(path, baseline_doc(findings), backup=True)


def read_baseline(path: str) -> set[tuple[str, str, str]]:
    from pmem_advisor.fileio import read_text_nofollow

    try:
        doc = json.loads(read_text_nofollow(path, 64 << 20))
    except OSError as e:
        raise InputError(f"--baseline {path}: cannot read: {e.strerror}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"--baseline {path}: not JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("schema") != BASELINE_SCHEMA or not isinstance(
            doc.get("findings"), list):
        raise InputError(f"--baseline {path}: not a pmem-advisor baseline (schema "
                         f"{BASELINE_SCHEMA}; write one with --write-baseline)")
    out = set()
    for i, e in enumerate(doc["findings"], 1):
        if not isinstance(e, dict) or not all(isinstance(e.get(k), str)
                                              for k in ("file", "rule", "key")):
            raise InputError(f"--baseline {path}: finding #{i} needs file, rule and key")
        out.add((e["file"], e["rule"], e["key"]))
    return out


def apply_baseline(findings: list[GateFinding], path: str, allow_unsafe: bool = False
                   ) -> tuple[list[GateFinding], list[GateFinding]]:
    """(new, known): findings in the baseline are known and do not fail the run, except a
    durability FAIL (known or not, it fails without --allow-unsafe)."""
    known_keys = read_baseline(path)
    new, known = [], []
    for f in findings:
        if _key(f) in known_keys and not (f.risk and not allow_unsafe):
            known.append(replace(f))
        else:
            new.append(f)
    return new, known
