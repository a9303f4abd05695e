"""CK006 A server series past (or near) its end of life.

Anti-pattern: deploying a major series its project no longer fixes: no security fixes, no
fixes for data-corruption bugs, and the packages age out of the distributions. PostgreSQL
supports a major version for five years; MariaDB's long-term series for five years (short-term
ones one year); Oracle's MySQL 8.0 reached its end of extended support in April 2026 (8.4 is
the long-term series).

Recommendation: plan the upgrade before the date (``pg_upgrade``, ``mariadb-upgrade``); the
dates and their sources are data in ``rules/checks/eol_dates.yaml``.

Sources: https://www.postgresql.org/support/versioning/; MariaDB Foundation maintenance policy
(https://mariadb.org/about/#maintenance-policy); Oracle Lifetime Support Policy (MySQL).
"""

from __future__ import annotations

import datetime
from functools import cache
from pathlib import Path

import yaml

from pmem_advisor.knobs.version import parse_version
from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding

SOON_DAYS = 180  # half a year: time to plan and test an upgrade


@cache
def eol_dates() -> dict:
    with open(Path(__file__).with_name("eol_dates.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def end_of_life(flavour: str, version: str) -> tuple[str, datetime.date, str] | None:
    """(series, end-of-life date, source) of a version, or None when the data has no entry."""
    data = eol_dates().get(flavour)
    if not data:
        return None
    try:
        v = parse_version(version)
    except Exception:  # noqa: BLE001 - a version text the parser cannot read has no date
        return None
    series = str(v[0]) if flavour == "postgresql" else ".".join(str(p) for p in v[:2])
    date = data["series"].get(series)
    if date is None:
        return None
    return series, date, data["source"]


class EndOfLife(Check):
    id = "CK006"
    title = "Server series past or near its end of life"
    source = "PostgreSQL versioning policy; MariaDB maintenance policy; Oracle lifetime support"
    engines = ("postgres", "mysql")

    def run(self, inp: CheckInput) -> list[Finding]:
        f = inp.facts
        if not f.version or not f.flavour:
            return []
        found = end_of_life(f.flavour, f.version)
        if found is None:
            return []
        series, date, source = found
        name = {"postgresql": "PostgreSQL", "mariadb": "MariaDB", "mysql": "MySQL"}[f.flavour]
        left = (date - inp.today).days
        if left < 0:
            return [self.finding(
                "warn", "version", f"{name} {series} reached its end of life on {date} "
                f"({source}): no more security or data-corruption fixes",
                "upgrade to a supported series")]
        if left <= SOON_DAYS:
            return [self.finding(
                "info", "version", f"{name} {series} reaches its end of life on {date}, in "
                f"{left} days ({source})", "plan the upgrade")]
        return []


CHECK = EndOfLife()
