"""`pmem-advisor check`: a pre-deployment gate for the host, a config file or a running server.

Exit 0 when no finding reaches ``--fail-on``, 1 when one does, 2 on bad input. JUnit XML for CI.
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qs, unquote, urlparse
from xml.sax.saxutils import escape, quoteattr

import typer

from pmem_advisor.cli.output import EMULATION_NOTE, console, out, print_json
from pmem_advisor.cli.recommend import installed_version, load_profile, split_engine
from pmem_advisor.errors import EXIT_FINDINGS, InputError, UsageError

FORMATS = ("text", "json", "junit")


# ---------------------------------------------------------------- DSNs, never printing a password
def dsn_engine(dsn: str) -> str:
    low = dsn.strip().lower()
    if low.startswith(("postgres://", "postgresql://")):
        return "postgres"
    if low.startswith(("mysql://", "mariadb://")):
        return "mysql"
    keys = set(_kv(dsn))
    if keys & {"socket", "unix_socket"}:
        return "mysql"
    return "postgres"


def _kv(dsn: str) -> dict[str, str]:
    """libpq-style ``key=value key='quoted value'`` pairs."""
    pairs = re.findall(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", dsn)
    return {k.lower(): v[1:-1].replace("\\'", "'") if v.startswith("'") else v for k, v in pairs}


def redact(dsn: str) -> str:
    """The DSN with any password replaced, for messages."""
    text = re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", dsn, flags=re.I)
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", text)


def _scrub(message: str, dsn: str) -> str:
    secret = _kv(dsn).get("password") or (urlparse(dsn).password if "://" in dsn else None)
    text = " ".join(str(message).split())
    return text.replace(secret, "***") if secret else text


def _mysql_params(dsn: str) -> dict:
    if "://" in dsn:
        u = urlparse(dsn)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        params = {"user": unquote(u.username or "root"), "password": unquote(u.password or ""),
                  "host": u.hostname or "localhost", "port": u.port or 3306,
                  "database": (u.path or "/").lstrip("/") or None}
        if "unix_socket" in q or "socket" in q:
            params["unix_socket"] = q.get("unix_socket") or q.get("socket")
        return params
    kv = _kv(dsn)
    params = {"user": kv.get("user", "root"), "password": kv.get("password", ""),
              "host": kv.get("host", "localhost"), "port": int(kv.get("port", 3306)),
              "database": kv.get("database") or kv.get("dbname")}
    if kv.get("socket") or kv.get("unix_socket"):
        params["unix_socket"] = kv.get("socket") or kv.get("unix_socket")
    return params


def read_server(dsn: str, engine: str) -> dict:
    """Settings, data/WAL directories, version and CPUs of a running server."""
    try:
        if engine == "postgres":
            return _read_pg(dsn)
        return _read_mysql(dsn)
    except Exception as e:  # the drivers' errors, scrubbed of the password
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"cannot read the server at {redact(dsn)}: "
                         f"{_scrub(first, dsn)}") from None


def _read_pg(dsn: str) -> dict:
    import psycopg

    with psycopg.connect(dsn, connect_timeout=5, autocommit=True) as conn:
        rows = conn.execute("SELECT name, setting FROM pg_settings").fetchall()
        settings = {n.lower(): v for n, v in rows}
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    data = settings.get("data_directory")
    wal = os.path.join(data, "pg_wal") if data else None
    if wal and os.path.islink(wal):
        wal = os.path.realpath(wal)
    version = settings.get("server_version", "").split()[0] or None
    return {"engine": "postgres", "flavour": "postgresql", "version": version,
            "settings": settings, "data_dir": data, "wal_dir": wal, "pid": pid}


def _read_mysql(dsn: str) -> dict:
    import pymysql

    conn = pymysql.connect(connect_timeout=5, **_mysql_params(dsn))
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW GLOBAL VARIABLES")
            settings = {str(n).lower(): str(v) for n, v in cur.fetchall()}
            cur.execute("SELECT CONNECTION_ID()")
    finally:
        conn.close()
    ver = settings.get("version", "")
    data = settings.get("datadir", "").rstrip("/") or None
    home = settings.get("innodb_log_group_home_dir") or "./"
    wal = os.path.normpath(os.path.join(data, home)) if data else None
    pid = None
    try:
        with open(settings.get("pid_file", ""), encoding="utf-8") as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        pass
    return {"engine": "mysql", "flavour": "mariadb" if "mariadb" in ver.lower() else "mysql",
            "version": re.split(r"[-+]", ver)[0] or None, "settings": settings,
            "data_dir": data, "wal_dir": wal, "pid": pid}


def _server_cpus(pid: int | None) -> tuple[int, ...] | None:
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            line = next(x for x in f if x.startswith("Cpus_allowed_list:"))
    except (OSError, StopIteration):
        return None
    cpus: list[int] = []
    for part in line.split(":", 1)[1].strip().split(","):
        lo, _, hi = part.partition("-")
        if lo.strip().isdigit():
            cpus.extend(range(int(lo), int(hi or lo) + 1))
    return tuple(cpus)


# ---------------------------------------------------------------- config files
def read_config(path: str, engine: str | None, flavour: str | None, version: str | None
                ) -> tuple[str, dict]:
    if not os.path.isfile(path):
        raise InputError(f"--config {path}: no such file")
    if engine is None:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        engine = "mysql" if re.search(r"^\s*\[(mysqld|mariadb|server)", text, re.M) else "postgres"
    if engine == "postgres":
        from pmem_advisor.knobs.parse_pg import parse_postgresql_conf

        parsed = parse_postgresql_conf(path)
    else:
        from pmem_advisor.knobs.parse_mycnf import parse_mycnf

        parsed = parse_mycnf(path, flavour=flavour, version=version)
    return engine, {name: ("ON" if e.value is None else e.value)
                    for name, e in parsed.effective().items()}


# ---------------------------------------------------------------- output
def junit(findings, fail_on: str) -> str:
    from pmem_advisor.rules.model import severity_rank

    limit = severity_rank(fail_on)
    failing = [f for f in findings if severity_rank(f.severity) >= limit]
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuite name="pmem-advisor check" tests="{max(1, len(findings))}" '
             f'failures="{len(failing)}">']
    if not findings:
        lines.append('  <testcase classname="pmem-advisor" name="no findings"/>')
    for f in findings:
        name = quoteattr(f"{f.rule} {f.subject}")
        lines.append(f'  <testcase classname="pmem-advisor.{f.rule}" name={name}>')
        body = escape(f"{f.message}" + (f"\nfix: {f.fix}" if f.fix else "")
                      + f"\ninsights: {', '.join(f.insights)}")
        if severity_rank(f.severity) >= limit:
            lines.append(f'    <failure type="{f.severity}" message={quoteattr(f.message)}>'
                         f"{body}</failure>")
        else:
            lines.append(f"    <system-out>{f.severity}: {body}</system-out>")
        lines.append("  </testcase>")
    lines.append("</testsuite>")
    return "\n".join(lines) + "\n"


def check_cmd(
    profile: str | None = typer.Option(None, "--profile", help="A probe profile (JSON)."),
    root: str | None = typer.Option(None, "--root", help="Probe a machine tree below DIR."),
    db: str | None = typer.Option(None, "--db", help="postgres or mysql."),
    config: str | None = typer.Option(None, "--config", help="A config file to check."),
    dsn: str | None = typer.Option(None, "--dsn", help="A running server to check."),
    data_dir: str | None = typer.Option(None, "--data-dir", help="Data directory."),
    wal_dir: str | None = typer.Option(None, "--wal-dir", help="WAL / redo log directory."),
    fmt: str = typer.Option("text", "--format", help="text, json or junit."),
    fail_on: str = typer.Option("fail", "--fail-on", help="warn or fail: exit 1 from here."),
) -> None:
    """Check the host (PMEM mode, namespaces, DAX, NUMA, block size) and a config or server."""
    from pmem_advisor.rules import build_facts, check
    from pmem_advisor.rules.model import severity_rank

    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: use text, json or junit")
    if fail_on not in ("warn", "fail"):
        raise UsageError(f"--fail-on {fail_on!r}: use warn or fail")
    engine, flavour = split_engine(db) if db else (None, None)
    version, settings, cpus = None, None, None
    if dsn:
        dsn_eng = dsn_engine(dsn)
        if engine and dsn_eng != engine and "://" in dsn:
            raise UsageError(f"--dsn is a {dsn_eng} DSN but --db is {engine}")
        engine = engine or dsn_eng
        server = read_server(dsn, engine)
        flavour, version, settings = server["flavour"], server["version"], server["settings"]
        data_dir = data_dir or server["data_dir"]
        wal_dir = wal_dir or server["wal_dir"]
        cpus = _server_cpus(server["pid"])
    if config:
        if engine and flavour is None:
            flavour, version = installed_version(engine, flavour)
        engine, cfg = read_config(config, engine, flavour, version)
        settings = {**(settings or {}), **cfg}
    prof = load_profile(profile, root, [data_dir, wal_dir])
    facts = build_facts(prof, engine=engine, flavour=flavour, version=version,
                        data_dir=data_dir, wal_dir=wal_dir, root=root)
    if cpus is not None:
        from dataclasses import replace

        facts = replace(facts, server_cpus=cpus)
    findings = check(facts, settings)
    if facts.emulated:
        console.print(EMULATION_NOTE)
    if fmt == "json":
        print_json({"findings": [f.to_dict() for f in findings]})
    elif fmt == "junit":
        out.file.write(junit(findings, fail_on))
    else:
        for f in findings:
            out.print(f"{f.severity:4} [{f.rule}] {f.subject}: {f.message}"
                      + (f"\n     fix: {f.fix}" if f.fix else ""), markup=False)
        if not findings:
            out.print("no findings")
    limit = severity_rank(fail_on)
    if any(severity_rank(f.severity) >= limit for f in findings):
        raise typer.Exit(EXIT_FINDINGS)


def register(app: typer.Typer) -> None:
    app.command("check")(check_cmd)
