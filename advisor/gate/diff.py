"""`check --diff`: what `recommend` would change on a running server, as the statements that
set it and what must follow (a reload, a restart, the my.cnf line)."""

from __future__ import annotations

from pmem_advisor.engines.registry import get_engine
from pmem_advisor.errors import UsageError


def server_diff(rec, settings: dict, catalog, flavour: str, version: str | None) -> list[dict]:
    """What ``recommend`` would change on the running server, with the statement that sets it
    and whether a restart is needed (the catalog's scope)."""
    rows = []
    for s in rec.settings:
        if catalog is None or s.name not in catalog:
            continue
        knob = catalog.get(s.name)
        now = settings.get(s.name)
        if now is None:
            continue
        try:
            same = knob.same(knob.parse(now, check_range=False), s.value)
        except UsageError:
            same = False
        if same:
            continue
        # the statement recommend --format sql prints for it (the engine's one SQL emitter)
        st = get_engine(knob.engine).sql_statement(knob, s.value, flavour, version)
        restart, sql = st.restart, st.sql
        if st.sql is None and not st.config_line:
            how = knob.init_option or "re-initialise the data directory"
        elif flavour == "postgresql":
            how = "restart the server" if restart else "SELECT pg_reload_conf();"
        elif st.config_line is None:  # MySQL 8: persisted by the server itself
            how = "restart the server" if restart else "takes effect now, kept on restart"
        else:
            cnf = f"[mysqld] {st.config_line}"
            how = (f"add to my.cnf: {cnf}; restart the server" if restart
                   else f"also add to my.cnf (SET GLOBAL is lost at restart): {cnf}")
        rows.append({"name": s.name, "running": knob.render(knob.parse(now, check_range=False))
                     if _parses(knob, now) else now, "recommended": s.text,
                     "restart": restart, "statement": sql, "then": how, "rule": s.rule,
                     "reason": s.reason})
    return rows


def _parses(knob, text) -> bool:
    try:
        knob.parse(text, check_range=False)
        return True
    except UsageError:
        return False
