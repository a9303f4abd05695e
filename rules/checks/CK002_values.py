"""CK002 Every config value within the knob's type, range and enum for the target version.

Anti-pattern: a config the server refuses or silently rewrites: ``max_connections = -5``,
``innodb_flush_log_at_trx_commit = 7``, ``shared_buffers = 128XB``, a knob the target version
does not have (``wal_decode_buffer_size`` on PostgreSQL 13), or a name the running server does
not know. PostgreSQL refuses to start on any of these; MySQL and MariaDB refuse unknown options
and bad enum values and clamp out-of-range numbers with a warning, so the config no longer says
what runs.

Recommendation: values inside the range the knob catalog gives (the servers' own lists:
``pg_settings`` of PostgreSQL 13-18, SYSTEM_VARIABLES of MariaDB 10.11; MySQL 8.0/8.4 and
MariaDB 11.4 from reference material), names the version has. MySQL 8.0/8.4's and MariaDB
11.4's lists are the servers' own ``mysqld --verbose --help`` as their source trees record it
(``knobs/data/recorded``): complete except the plugin prefixes that listing leaves out
(``Catalog.covers``), so a name they lack fails, one under such a prefix is reported. MariaDB
11.4's types, ranges and enum words are its SYSTEM_VARIABLES rows as its sys_vars suite records
them (``sysvars_server_notembedded.result``). Where a range bounds nothing the fix says how the
server spells a value (``Knob.accepted``), not ``-inf .. inf``.
A removed name fails naming the release that removed it and what replaces it
(``wal_keep_segments`` -> ``wal_keep_size`` in 13);
a name close to a known one fails as a likely misspelling; any other name a server's complete
list lacks fails, since the server would refuse it. A name a partial list (read from a manual)
lacks, an extension's dotted name, a ``loose-`` option or one a loaded plugin may provide is
reported (info, with the nearest names), never a crash. MariaDB still accepts the InnoDB options
it removed, and ignores them: a warning, not a failure.

A pair the server does not run as written warns (``knobs.pairs.ORDERED_PAIRS``, the list the
tuner orders its own trials by): ``innodb_io_capacity`` above ``innodb_io_capacity_max``
(MariaDB raises the max to twice it, with a warning) and ``min_wal_size`` above
``max_wal_size`` (PostgreSQL recycles WAL up to max_wal_size only).

An option is not always its variable: ``log_bin`` in SYSTEM_VARIABLES is the read-only ON/OFF
status, but the option ``--log-bin[=name]`` takes the binary log's base name, so
``log_bin = mysql-bin`` is the normal my.cnf form and passes (any control character still fails).

Sources: PostgreSQL manual §20.1 (setting parameters), appendix E (release notes: removed
parameters) and ``pg_settings`` min_val/max_val/enumvals; MySQL Server Version Reference
(options added, deprecated, removed); MySQL 8.4 manual §7.1.8 (server system variables) and
§19.1.6.4 (``--log-bin=file_name``), MariaDB KB "Server system variables" and "Activating the
Binary Log" (``log_bin`` with an optional basename); the knob catalogs in ``knobs/data``.
"""

from __future__ import annotations

import difflib

from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.rules.checks import Check, CheckInput
from pmem_advisor.rules.model import Finding

# MySQL/MariaDB options whose variable is an ON/OFF status but whose option takes a file name
# (MySQL 8.4 §19.1.6.4 "--log-bin=file_name"; MariaDB KB "--log-bin[=name]")
OPTION_TAKES_NAME = {"log_bin": "the binary log's base name"}


class KnobValues(Check):
    id = "CK002"
    title = "Config values inside each knob's type, range and enum; names the version has"
    source = "PostgreSQL manual §20.1, pg_settings; MySQL 8.4 manual §7.1.8; MariaDB KB"
    engines = ("postgres", "mysql")

    def run(self, inp: CheckInput) -> list[Finding]:
        # a running server's own values passed its checks; only config files are judged here
        if inp.source != "config" or inp.catalog is None:
            return []
        from pmem_advisor.knobs.catalog import KnobNotInVersion

        f = inp.facts
        title = f"{inp.catalog.title} {inp.catalog.version}"
        out, unchecked = [], []
        judged = inp.where or inp.settings  # with --dsn and --config: the file's lines only
        for name in sorted(judged):
            text, at = inp.settings[name], inp.at(name)
            try:
                knob = inp.catalog.get(name)
            except KnobNotInVersion as e:
                out.append(self._refused(inp, name, e, at))
                continue
            except UnknownKnobError:
                out += self._unknown(inp, name, at, title, unchecked)
                continue
            if not knob.config_file:
                out.append(self.finding(
                    "fail", name, f"{name}{at} cannot be set in a config file: it is fixed at "
                    f"{knob.init_option or 'initialisation'}",
                    f"remove the line; use {knob.init_option}" if knob.init_option
                    else "remove the line"))
                continue
            ahead = inp.catalog.removal_ahead(name)
            deprecated = knob.deprecated
            if deprecated and not ahead:
                out.append(self.finding(
                    "info", name, f"{name}{at} is deprecated since {inp.catalog.title} "
                    f"{deprecated}: a later release may remove it", ""))
            if ahead:
                use = ahead.get("replacement")
                out.append(self.finding(
                    "info", name, f"{name}{at} is removed in {inp.catalog.title} "
                    f"{ahead['until']}: a server of that release or later refuses to start "
                    "with it", f"before upgrading, {'use ' + use if use else 'remove it'}"))
            try:
                _parse_option(inp, knob, name, text)
            except (UsageError, ArithmeticError, ValueError) as e:
                consequence = ("PostgreSQL refuses to start" if f.pg else
                               f"{'MariaDB' if f.mariadb else 'MySQL'} refuses it or clamps it "
                               "with a warning")
                why = getattr(e, "message", None) or f"{name}: {text!r} is not a usable value"
                out.append(self.finding(
                    "fail", name, f"{why}{at}: {consequence}",
                    f"use {knob.accepted()}"))
        out += self._out_of_order(inp, judged)
        if unchecked:
            out.append(self.finding(
                "info", "unchecked knobs",
                f"{len(unchecked)} setting(s) outside the advisor's {title} catalog, not "
                f"checked: {', '.join(unchecked)}", ""))
        return out

    def _out_of_order(self, inp: CheckInput, judged) -> list[Finding]:
        """A pair the server does not run as written (``knobs.pairs.ORDERED_PAIRS``): it
        starts, but the file no longer says what runs."""
        from pmem_advisor.knobs.pairs import ORDERED_PAIRS

        out = []
        for low, high, instead in ORDERED_PAIRS:
            if low not in judged and high not in judged:
                continue  # neither line is the file's: the pair is the server's business
            try:
                lo = inp.catalog.get(low).parse(inp.settings[low])
                hi = inp.catalog.get(high).parse(inp.settings[high])
            except (KeyError, UsageError, UnknownKnobError, ArithmeticError, ValueError):
                continue  # one is unset or unusable: reported above, or the default's
            if isinstance(lo, int | float) and isinstance(hi, int | float) and lo > hi:
                out.append(self.finding(
                    "warn", low, f"{low} = {inp.settings[low]}{inp.at(low)} is above {high} "
                    f"= {inp.settings[high]}{inp.at(high)}: {instead}",
                    f"raise {high} to at least {inp.settings[low]}, or lower {low}"))
        return out

    def _refused(self, inp: CheckInput, name: str, e, at: str) -> Finding:
        """A name the flavour has, but not the target version (removed, or not yet)."""
        message = f"{e.message}{at}"
        if e.ignored:  # it starts, but the line does nothing: a config that says what it isn't
            return self.finding("warn", name, f"{message}: the setting has no effect",
                                "remove the line")
        fix = (f"replace it by {e.replacement}" if e.replacement else
               "remove the line") + (" or target a version that has it"
                                     if not e.removed_in else "")
        if inp.facts.pg:
            return self.finding("fail", name, f"{message}: PostgreSQL refuses to start", fix)
        if name in inp.loose:
            return self.finding("warn", name, f"{message}: the server ignores it (loose- "
                                "prefix), so the setting has no effect", fix)
        return self.finding("fail", name, f"{message}: the server refuses to start with an "
                            "unknown option", fix)

    def _unknown(self, inp: CheckInput, name: str, at: str, title: str,
                 unchecked: list[str]) -> list[Finding]:
        """A name this version's catalog does not have. Misspelt (one close name) or unknown
        to a complete list (the server's own): FAIL, the server refuses to start. Unknown to
        a partial list (read from a manual), a dotted extension name, a loose- option or one
        a loaded plugin may provide: info with the nearest names, never a guess of FAIL."""
        f, cat = inp.facts, inp.catalog
        server = "PostgreSQL" if f.pg else "the server"
        if inp.server_names is not None and f.pg and "." not in name:
            if name not in inp.server_names:
                close = difflib.get_close_matches(name, sorted(inp.server_names), n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                return [self.finding(
                    "fail", name, f"the running server does not know the parameter {name}{at}"
                    f"{hint}: PostgreSQL refuses to start with it", "remove or correct the line")]
            unchecked.append(name)
            return []
        if name in inp.loose or "." in name:  # ignored when unknown / an extension's own
            unchecked.append(name)
            return []
        other = _other_flavour_has(inp, name)
        if other:
            # a partial list (MySQL's, from a manual) may lack a name both servers have
            sure = cat.covers(name) or name in cat.refused
            return [self.finding(
                "fail" if sure else "warn", name,
                f"{name}{at} is a {other} option, not a {title} one: the server refuses to "
                "start with an unknown option (is the flavour right?)",
                f"remove it, or check against {other} (--db {other.lower()} --version ...)")]
        close = [c for c in cat.nearest(name, n=3, cutoff=0.85) if c != name]
        if close:
            return [self.finding(
                "fail", name, f"{name}{at} is not a {title} parameter; did you mean "
                f"{close[0]}? A misspelt name stops {server} from starting",
                f"correct the spelling: {close[0]}")]
        nearest = cat.nearest(name)
        near = f" (nearest: {', '.join(nearest)})" if nearest else ""
        if cat.covers(name) and not (f.mysql and _loads_plugins(inp)):
            # mysqld's own words for it: "unknown variable 'name=value'"
            said = f" (unknown variable '{name}')" if f.mysql else ""
            return [self.finding(
                "fail", name, f"{name}{at} is not a {title} parameter{near}: "
                f"{title if f.mysql else server} refuses to start on an unknown name{said} "
                f"(checked against {cat.generated_from})", "remove or correct the line")]
        if cat.complete and not cat.covers(name):
            why = (f"the {title} list ({cat.generated_from}) leaves out the options of plugins "
                   "that may or may not be built, and this is one's prefix")
        elif cat.complete:
            why = "a loaded plugin may provide it"
        else:
            why = f"the {title} list here is partial ({cat.generated_from or 'curated only'})"
        return [self.finding("info", name, f"{name}{at} is not in the advisor's {title} "
                             f"catalog{near}; not checked: {why}", "")]


def _loads_plugins(inp: CheckInput) -> bool:
    """Whether the config loads server plugins, whose options the server's list lacks."""
    return any(n in inp.settings for n in ("plugin_load", "plugin_load_add",
                                           "early_plugin_load"))


def _parse_option(inp: CheckInput, knob, name: str, text: str) -> None:
    """The knob's own parse, or for a name-taking option (log_bin) any file name too."""
    if inp.facts.mysql and name in OPTION_TAKES_NAME:
        from pmem_advisor.knobs.catalog import has_control_chars

        try:
            knob.parse(text)
            return
        except UsageError:
            if text.strip() and not has_control_chars(text):
                return  # a base name: the option's documented form
            raise UsageError(f"{name}: {text!r} is neither on/off nor a usable file name "
                             f"({OPTION_TAKES_NAME[name]})") from None
    knob.parse(text)


def _other_flavour_has(inp: CheckInput, name: str) -> str | None:
    """'MySQL' or 'MariaDB' when the other flavour's catalog knows a name this one lacks."""
    f = inp.facts
    if not f.mysql or name in inp.loose:
        return None
    from pmem_advisor.knobs.catalog import load_catalog, supported_versions

    other = "mysql" if f.mariadb else "mariadb"
    # every series: a recorded --help list leaves plugin names out (aria_* on 11.4), which
    # the server-read 10.11 list has
    for version in supported_versions("mysql", other):
        try:
            cat = load_catalog("mysql", other, version=version)
        except UsageError:
            continue
        if name in cat or name in cat.absent:
            return cat.title
    return None


CHECK = KnobValues()
