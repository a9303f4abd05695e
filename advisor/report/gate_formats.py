"""The gate's report in the formats CI systems read: JUnit XML (test results), SARIF 2.1.0
(GitHub and GitLab code scanning) and GitHub Actions workflow annotations (issue 55). Each
finding carries its file and line, the line in the included file through includes."""

from __future__ import annotations

import json
import os
import re
import socket
from datetime import UTC, datetime

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/" \
    "sarif-schema-2.1.0.json"
INFO_URI = "https://pmem-advisor.invalid/docs/check"
LEVEL = {"fail": "error", "warn": "warning", "info": "note"}
GATE_RULES = {  # the gate's own findings (advisor/gate/suppress.py)
    "ignore-without-reason": "An inline ignore gives no reason",
    "ignore-refused": "An inline ignore cannot silence a durability risk without --allow-unsafe",
}


def _where(f) -> str:
    return f"{f.file}:{f.line}" if f.file and f.line else f.file or "host"


# ---------------------------------------------------------------- JUnit
def junit(report, *, name: str = "pmem-advisor check") -> str:
    """<testsuites> with counts and a timestamp, one testcase per finding (its file:line in
    the name and a file/line attribute); findings below --fail-on are passing testcases whose
    name and system-out carry the severity."""
    import xml.etree.ElementTree as ET

    from pmem_advisor.rules.model import severity_rank

    findings, fail_on = report.findings, report.fail_on
    notes = list(report.notes)
    for t in report.targets:  # caveats (tmpfs standing in for PMEM, budget) reach CI
        notes += [b for b in t.budget or [] if b not in notes]
    limit = severity_rank(fail_on)
    failing = [f for f in findings if severity_rank(f.severity) >= limit]
    stamp = datetime.now(UTC).replace(microsecond=0).isoformat()
    counts = {"tests": str(max(1, len(findings) + len(report.errors))),
              "failures": str(len(failing)), "errors": str(len(report.errors)),
              "skipped": str(len(report.suppressed) + len(report.baselined)
                             + len(report.skipped_files)), "time": "0"}
    suites = ET.Element("testsuites", {"name": name, **counts, "timestamp": stamp})
    suite = ET.SubElement(suites, "testsuite", {"name": name, **counts, "timestamp": stamp,
                                                "hostname": socket.gethostname()})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "fail-on", "value": fail_on})
    for sev in ("fail", "warn", "info"):
        n = sum(1 for f in findings if f.severity == sev)
        ET.SubElement(props, "property", {"name": f"findings.{sev}", "value": str(n)})
    for i, note in enumerate(notes):
        ET.SubElement(props, "property", {"name": f"note.{i + 1}", "value": note})
    if notes:
        ET.SubElement(suite, "system-out").text = "\n".join(notes)
    if not findings and not report.errors:
        ET.SubElement(suite, "testcase", {"classname": "pmem-advisor", "name": "no findings",
                                          "time": "0"})
    for f in findings:
        attrs = {"classname": f"pmem-advisor.{f.rule}", "time": "0",
                 "name": f"[{f.severity}] {f.rule} {f.key}" + (f" ({_where(f)})" if f.file
                                                                else "")}
        if f.file:
            attrs["file"] = f.file
        if f.line:
            attrs["line"] = str(f.line)
        case = ET.SubElement(suite, "testcase", attrs)
        body = f.reason + (f"\nfix: {f.fix}" if f.fix else "") + (
            f"\ninsights: {', '.join(f.insights)}" if f.insights else "")
        if severity_rank(f.severity) >= limit:
            fail = ET.SubElement(case, "failure", {"type": f.severity, "message": f.reason})
            fail.text = body
        else:
            ET.SubElement(case, "system-out").text = f"{f.severity}: {body}"
    for s in [*report.suppressed]:
        case = ET.SubElement(suite, "testcase", {
            "classname": f"pmem-advisor.{s.finding.rule}", "time": "0", "file": s.finding.file,
            "name": f"[suppressed] {s.finding.rule} {s.finding.key} ({_where(s.finding)})"})
        ET.SubElement(case, "skipped", {"message": s.reason or "no reason given"})
    for f in report.baselined:
        case = ET.SubElement(suite, "testcase", {
            "classname": f"pmem-advisor.{f.rule}", "time": "0",
            "name": f"[baseline] {f.rule} {f.key} ({_where(f)})"})
        ET.SubElement(case, "skipped", {"message": "in the baseline"})
    for sk in report.skipped_files:  # a walk's nginx.conf: not judged, said
        case = ET.SubElement(suite, "testcase", {"classname": "pmem-advisor.input",
                                                 "name": sk.file, "file": sk.file, "time": "0"})
        ET.SubElement(case, "skipped", {"message": sk.to_dict()["reason"]})
    for e in report.errors:
        case = ET.SubElement(suite, "testcase", {"classname": "pmem-advisor.input",
                                                 "name": e.file, "file": e.file, "time": "0"})
        ET.SubElement(case, "error", {"type": "input", "message": str(e.error)})
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


# ---------------------------------------------------------------- SARIF
def _rule_text(rule_id: str) -> tuple[str, str]:
    """(title, source) of a rule: the check's or the paper rule's own class attributes."""
    if rule_id in GATE_RULES:
        return GATE_RULES[rule_id], "pmem-advisor's inline suppressions (docs/ci.md)"
    try:
        if rule_id.startswith("CK"):
            from pmem_advisor.rules.checks import get_check

            c = get_check(rule_id)
            return c.title, c.source
        from pmem_advisor.rules.registry import get_rule

        r = get_rule(rule_id)
        return r.title, r.paper
    except (KeyError, LookupError, Exception):  # noqa: BLE001 - an unknown id keeps its id
        return rule_id, ""


def _uri(path: str) -> tuple[str, str | None]:
    """(uri, uriBaseId): relative to the working directory (the repository's root in CI),
    or a file: URI for a file outside it."""
    from pathlib import Path
    from urllib.parse import quote

    rel = os.path.relpath(os.path.abspath(path))
    if rel.startswith(".."):
        return Path(os.path.abspath(path)).as_uri(), None
    return quote(rel.replace(os.sep, "/")), "SRCROOT"


def _column(f) -> int:
    """The 1-based column where the key starts on its line (1 when not found)."""
    try:
        from pmem_advisor.knobs.configfile import read_head

        line = read_head(f.file, 16 << 20).splitlines()[f.line - 1]
    except (OSError, IndexError, Exception):  # noqa: BLE001 - a column is a nicety
        return 1
    m = re.search(rf"(?<![\w.-]){re.escape(f.key)}(?![\w.-])", line.replace("-", "_"))
    return m.start() + 1 if m else len(line) - len(line.lstrip()) + 1


HOST_NOTE = ("not a finding about a line of this file (it is about the host, the server, or "
             "the run's settings taken together): shown at line 1 of the first file checked, "
             "as code scanning takes no result without a location")
WHOLE_FILE_NOTE = "a finding about this file as a whole, not one of its lines"


def _result(f, index: dict, columns: dict, anchor: str | None,
            suppression: dict | None = None) -> dict:
    """One SARIF result. GitHub's upload refuses a whole SARIF file when one result has no
    location ("locationFromSarifResult: expected at least one location") and places a result
    only by region.startLine, so every result gets a file and a line: a finding about the file
    as a whole its line 1, a host or server finding (no file) the first checked file's line 1
    (``anchor``), each with a location message saying so. With no file checked at all (the
    host alone, --dsn) a host finding keeps no location: valid SARIF 2.1.0, and the run's
    notifications say that code scanning will refuse it (docs/ci.md)."""
    res = {"ruleId": f.rule, "ruleIndex": index[f.rule], "level": LEVEL.get(f.severity, "note"),
           "message": {"text": f"{f.key}: {f.reason}" + (f" Fix: {f.fix}" if f.fix else "")},
           "properties": {"severity": f.severity, "key": f.key}}
    file, note = f.file, None
    if not file and anchor:
        file, note = anchor, HOST_NOTE
        res["message"]["text"] = f"host or run-wide finding: {res['message']['text']}"
        res["properties"]["host"] = True
    if file:
        uri, base = _uri(file)
        loc = {"artifactLocation": {"uri": uri, **({"uriBaseId": base} if base else {})}}
        if f.file and f.line:
            if (f.file, f.line, f.key) not in columns:
                columns[(f.file, f.line, f.key)] = _column(f)
            loc["region"] = {"startLine": f.line, "startColumn": columns[(f.file, f.line, f.key)]}
        else:
            loc["region"] = {"startLine": 1}
            note = note or WHOLE_FILE_NOTE
        res["locations"] = [{"physicalLocation": loc, **({"message": {"text": note}}
                                                         if note else {})}]
    if suppression is not None:
        res["suppressions"] = [suppression]
    return res


def sarif(report) -> str:
    from pmem_advisor import __version__

    everything = [*report.findings, *(s.finding for s in report.suppressed), *report.baselined]
    ids = sorted({f.rule for f in everything})
    index = {r: i for i, r in enumerate(ids)}
    rules = []
    for r in ids:
        title, source = _rule_text(r)
        rules.append({"id": r, "name": r, "shortDescription": {"text": title},
                      "fullDescription": {"text": f"{title}. Source: {source}" if source
                                          else title},
                      "help": {"text": f"{title}." + (f" Source: {source}." if source else "")
                               + " See docs/check.md."}, "helpUri": INFO_URI})
    columns: dict = {}
    anchor = report.files[0] if report.files else None  # where host findings are shown
    results = [_result(f, index, columns, anchor) for f in report.findings]
    results += [_result(s.finding, index, columns, anchor,
                        {"kind": "inSource", "status": "accepted",
                         "justification": s.reason or "no reason given"})
                for s in report.suppressed]
    results += [_result(f, index, columns, anchor, {"kind": "external", "status": "accepted",
                                                    "justification": "in the baseline"})
                for f in report.baselined]
    notifications = [{"level": "note", "message": {"text": n}} for n in report.notes]
    unplaced = sum(1 for r in results if "locations" not in r)
    if unplaced:
        notifications.append({"level": "warning", "message": {"text": (
            f"{unplaced} result(s) about the host or server have no location: no config file "
            "was checked to show them at. GitHub code scanning refuses a SARIF file with such "
            "a result; check a config file in the same run, or read --format json/junit")}})
    notifications += [{"level": "error", "message": {"text": str(e.error)},
                       "locations": [{"physicalLocation": {"artifactLocation": {
                           "uri": _uri(e.file)[0]}}}]} for e in report.errors]
    root = os.path.abspath(os.getcwd()).rstrip("/") + "/"
    from pathlib import Path

    doc = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "pmem-advisor", "version": __version__,
                            "semanticVersion": __version__, "informationUri": INFO_URI,
                            "rules": rules}},
        "originalUriBaseIds": {"SRCROOT": {"uri": Path(root).as_uri() + "/"}},
        "invocations": [{"executionSuccessful": not report.errors,
                         "exitCode": report.exit_code,
                         "toolExecutionNotifications": notifications}],
        "results": results}]}
    return json.dumps(doc, indent=2) + "\n"


# ---------------------------------------------------------------- GitHub annotations
def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github(report) -> str:
    """``::error file=F,line=N,title=T::message`` per finding (warning/notice below fail);
    GitHub Actions shows them on the lines of the pull request."""
    kind = {"fail": "error", "warn": "warning", "info": "notice"}
    lines = []
    for f in report.findings:
        props = []
        if f.file:
            props.append(f"file={_escape_prop(os.path.relpath(os.path.abspath(f.file)))}")
        if f.line:
            props.append(f"line={f.line}")
        props.append(f"title={_escape_prop(f'{f.rule} {f.key}')}")
        text = f.reason + (f" Fix: {f.fix}" if f.fix else "")
        lines.append(f"::{kind.get(f.severity, 'notice')} {','.join(props)}::"
                     f"{_escape_data(text)}")
    for e in report.errors:
        lines.append(f"::error file={_escape_prop(e.file)},title=pmem-advisor::"
                     f"{_escape_data(str(e.error))}")
    if not lines:
        lines.append("::notice title=pmem-advisor::no findings")
    return "\n".join(lines) + "\n"
