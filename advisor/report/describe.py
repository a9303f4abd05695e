"""Sentences every tuning output shares: the verdict, failures, why the run ended, the
hardware it ran on, the emulation caveat, and how to apply the file.

One source for the console (outcome_lines), the config header, report.md and report.html.
"""

from __future__ import annotations

from typing import Any

from pmem_advisor.engines import api

GiB = 1024**3

# Every output that used /dev/shm says so (tmpfs stands in for PMEM here).
EMULATION_NOTE = (
    "note: /dev/shm is tmpfs (DRAM-backed); it stands in for persistent memory here, "
    "as the papers' memmap= emulation did. Real PMEM is slower, above all for writes."
)


def verdict_line(summary: dict[str, Any]) -> str:
    v = summary.get("verdict")
    if not v:
        return "verdict: none (no config was measured successfully)"
    return "verdict: " + (v.get("text_full") or v.get("text") or "n/a")


def emitted_line(summary: dict[str, Any]) -> str:
    best = summary.get("best")
    if not best:
        return "emitted: nothing (no config passed the final comparison)"
    least = (summary.get("verdict") or {}).get("min_change_pct")
    by = f" by {least:g}% or more" if least else ""  # a study from before says it without
    what = {"tuned": f"the tuned config (trial {best['trial']})",
            "rules": f"the rules-only config (trial {best['trial']}): nothing tuned beat it "
                     f"significantly{by}",
            "default": "the server defaults (only production-sized settings are set): "
                       f"neither the rules nor tuning beat them significantly{by}",
            }.get(best["role"], best["role"])
    return f"emitted: {what}"


def dashboard_line(summary: dict[str, Any]) -> str | None:
    """When Optuna's best trial (a lucky single run) is not the verdict's, say so."""
    return ((summary.get("optuna_best") or {}).get("note")) or None


def failure_lines(summary: dict[str, Any]) -> list[str]:
    out = []
    for f in summary.get("failures") or []:
        where = f"trial {f['trial']}" + (f" ({f['role']})" if f.get("role") else "")
        if f.get("round"):
            where += f", round {f['round']}"
        out.append(f"failed run, {f['phase']}, {where}: {f.get('reason') or 'no reason given'}")
    skipped = summary.get("points_over_budget")
    if skipped:
        out.append(f"{skipped} sampled config(s) over the memory budget were not run and not "
                   "counted (the sampler was asked again)")
    return out


def end_line(summary: dict[str, Any]) -> str | None:
    end = summary.get("run_end")
    if not end:
        return None
    text = f"run ended: {end.get('reason', '?')}"
    return text + (f" ({end['detail']})" if end.get("detail") else "")


def target_lines(summary: dict[str, Any]) -> list[str]:
    meta = summary.get("meta") or {}
    t = meta.get("target") or {}
    out = []
    if t.get("connections"):
        out.append(f"production target: {t['connections']} connections "
                   f"({t.get('connections_source') or 'default'})"
                   + (f", memory {t['memory_bytes'] / 1024**3:.1f} GiB "
                      f"({t.get('memory_source') or 'default'})" if t.get("memory_bytes")
                      else ""))
    out += [str(n) for n in t.get("notes") or []]
    out += [str(n) for n in meta.get("data_notes") or []]
    return out


def hardware_lines(profile: dict[str, Any] | None, meta: dict[str, Any] | None = None
                   ) -> list[str]:
    """The machine the config was tuned on, in a DBA's words."""
    if not profile:
        return ["hardware: not recorded in this study"]
    cpu, mem = profile.get("cpu") or {}, profile.get("memory") or {}
    total = mem.get("total_bytes")
    line = (f"hardware: {cpu.get('model') or 'CPU'}, {cpu.get('cores', '?')} cores / "
            f"{cpu.get('threads', '?')} threads, "
            + (f"{total / GiB:.1f} GiB RAM" if total else "RAM unknown"))
    budget = (meta or {}).get("memory_bytes")
    if budget:
        line += f", server memory budget {budget / GiB:.1f} GiB"
    out = [line]
    for p in profile.get("paths") or []:
        note = p.get("medium_note") or f"medium: {p.get('medium') or 'unknown'}"
        out.append(f"path {p.get('path')}: {p.get('fstype') or '?'} on "
                   f"{p.get('device') or '?'}; {note}")
    return out


def caveat_lines(summary: dict[str, Any]) -> list[str]:
    emulated = summary.get("emulated_pmem") or any(
        p.get("emulated_pmem") for p in (summary.get("profile") or {}).get("paths") or [])
    return [EMULATION_NOTE.removeprefix("note: ")] if emulated else []


def apply_lines(engine: str, path: str, settings: dict[str, str], restart: list[str],
                flavour: str | None = None, catalog: Any = None) -> list[str]:
    """How to deploy: an include line, or the statements ``recommend --format sql`` prints
    (the engine's ``sql_statement``: MySQL wants bytes, not "1G"); engines without SQL
    settings say it themselves (Engine.apply_lines). ``settings``: rendered values."""
    eng = api.get_engine(engine)
    if not eng.takes_sql:
        return eng.apply_lines(path, settings, restart, flavour)
    if catalog is None:
        from pmem_advisor.knobs.catalog import load_catalog

        catalog = load_catalog(engine, flavour, None)
    statements = [eng.sql_statement(catalog.get(k), catalog.get(k).parse(v, check_range=False),
                                    flavour or catalog.flavour, catalog.version)
                  for k, v in settings.items()]
    sql = [f"  {st.sql}" for st in statements if st.sql]
    if engine == "postgres":
        return ([f"apply: add `include '{path}'` at the end of postgresql.conf, or run:"] + sql
                + ["  then SELECT pg_reload_conf();"
                   + (f" and restart for {', '.join(restart)}" if restart else "")])
    lost = any(st.config_line for st in statements)  # MariaDB: SET GLOBAL until the restart
    out = [f"apply: add `!include {path}` at the end of my.cnf (later settings win), or run"
           + (" (until the next restart; keep the file for after it):" if lost else ":")]
    out += sql
    if restart:
        out.append(f"  restart needed for {', '.join(restart)} (read at startup only)")
    return out


def timing_line(summary: dict[str, Any]) -> str | None:
    """Trials per hour, what pruning saved, the time to the final config."""
    t = summary.get("timing") or {}
    if not t.get("trials"):
        return None
    line = (f"time: {t['trials']} trials in {t['search_s'] / 60:.1f} min"
            + (f" ({t['trials_per_hour']:.0f} trials/hour)" if t.get("trials_per_hour") else ""))
    if t.get("pruned_by_interim"):
        line += (f"; {t['pruned_by_interim']} pruned by interim throughput, saving "
                 f"{t['saved_by_pruning_s']:.0f} s"
                 + (f" (paid for {t['extra_rounds_from_pruning']} more re-measurement rounds)"
                    if t.get("extra_rounds_from_pruning") else ""))
    if t.get("side_by_side"):
        line += (f"; {t['side_by_side']} of {t['search_trials']} search trials measured side "
                 "by side with rules-only, ranked by their ratio to it")
    if t.get("alone") and t.get("search_trials"):
        line += (f"; {t['alone']} of {t['search_trials']} search trials measured alone "
                 f"({t['alone_why']})")
    if t.get("time_to_final_config_s") is not None:
        line += f"; final config after {t['time_to_final_config_s'] / 60:.1f} min"
    return line


def outcome_lines(summary: dict[str, Any]) -> list[str]:
    """What `tune` and `report` print at the end (console, plain text)."""
    out = [verdict_line(summary), emitted_line(summary)]
    best = summary.get("best")
    if best and best.get("throughput_tps") is not None:
        out.append(f"  median {best['throughput_tps']:.1f} tps over {best['runs']} "
                   f"{'re-measured ' if best.get('repeated') else ''}runs")
    out += failure_lines(summary)
    if timing_line(summary):
        out.append(timing_line(summary))
    if dashboard_line(summary):
        out.append(dashboard_line(summary))
    if end_line(summary):
        out.append(end_line(summary))
    if summary.get("config_file"):
        out.append(f"config: {summary['config_file']}")
    for note in (summary.get("gate") or {}).get("notes") or []:
        out.append(f"check: {note}")
    out += [f"note: {c}" for c in caveat_lines(summary)]
    return out
