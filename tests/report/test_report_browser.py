"""report.html opened by a real browser: headless Chromium (Debian's `chromium`) loads a
report written by the real report code and the test fails on any JavaScript error or console
message, or on a chart plotly did not draw. A control run (plotly.min.js removed) proves the
harness sees both failures."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pmem_advisor.report.build import write_reports
from tests.report.test_build import _tuned_study

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None,
                                 reason="Debian's chromium is not installed (make deps)")]

CONSOLE = re.compile(r':CONSOLE(?:\(\d+\))?:?\d*\] "(?P<message>.*)", source: (?P<source>.*)$')
# What the browser itself says about a machine without a GPU: not the report's doing.
BROWSER_NOTICES = ("Automatic fallback to software WebGL", "GL Driver Message")
GRAPH = re.compile(r'<div id="(?P<id>[0-9a-f-]{36})" class="plotly-graph-div(?P<cls>[^"]*)"')
DRAWN = re.compile(r'class="(trace|parcoords)[" ]')


def open_in_chromium(html: Path, tmp: Path) -> tuple[str, list[str]]:
    """The DOM after the page ran (plotly draws on load), and the page's console messages."""
    r = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp / 'chromium-profile'}", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=20000", "--dump-dom", html.as_uri()],
        capture_output=True, text=True, timeout=240, cwd=tmp)
    assert r.returncode == 0, r.stderr[-2000:]
    messages = [m.group("message") for line in r.stderr.splitlines()
                if (m := CONSOLE.search(line))]
    return r.stdout, [m for m in messages if not m.startswith(tuple(f"[]{n}" for n in
                                                                    BROWSER_NOTICES))
                      and not any(n in m for n in BROWSER_NOTICES)]


def undrawn_charts(source: str, dom: str) -> list[str]:
    """Chart divs of the report that hold no drawn trace in the browser's DOM."""
    ids = GRAPH.findall(source)
    assert ids, "the report holds no chart at all"
    starts = {m.group("id"): m.start() for m in GRAPH.finditer(dom)}
    bad = []
    for chart_id, _ in ids:
        if chart_id not in starts:
            bad.append(f"{chart_id}: not in the DOM")
            continue
        later = [s for s in starts.values() if s > starts[chart_id]]
        body = dom[starts[chart_id]:min(later) if later else len(dom)]
        if "js-plotly-plot" not in body[:300] or "main-svg" not in body or not DRAWN.search(body):
            bad.append(f"{chart_id}: no plot drawn")
    return bad


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("browser")
    write_reports(_tuned_study(tmp, trials=6, repeats=2), tmp / "out")
    return tmp / "out" / "report.html"


def test_the_report_runs_without_errors_and_draws_every_chart(report, tmp_path):
    dom, messages = open_in_chromium(report, tmp_path)
    assert not messages, messages
    source = report.read_text(encoding="utf-8")
    assert not undrawn_charts(source, dom)
    assert len(GRAPH.findall(source)) >= 3  # progress, importance, parallel coordinates


def test_the_harness_sees_an_error_and_an_empty_chart(report, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    shutil.copy(report, broken / "report.html")  # without the plotly.min.js beside it
    dom, messages = open_in_chromium(broken / "report.html", tmp_path)
    assert any("Plotly is not defined" in m for m in messages), messages
    assert undrawn_charts(report.read_text(encoding="utf-8"), dom)
