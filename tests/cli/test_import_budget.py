"""Issue 55: `--version` and `check FILE` import only what they use.

Each run is a fresh interpreter (a subprocess), so sys.modules shows exactly what the command
path pulled in; a module that only another command needs is a failure naming it.
"""

from __future__ import annotations

import json
import subprocess
import sys

# Modules only other commands need (tune, instances, workload, probe): the check path of a
# config file must not reach them. The shipped catalogs and engine specs are checked by the
# tests, not at run time, and a probed profile by its shape, so jsonschema is not imported
# either; only the named engine's package is loaded (its baseline rules), so no other
# engine's runner, workloads or instance code (tests/knobs/test_shipped_data.py,
# tests/engines/test_registry.py hold the schema checks). PostgreSQL's check does reach
# pmem_advisor.instances: instances.discovery finds the installed server whose build features
# (lz4) the rules read, and the package's __init__ loads its managed-server modules with it.
FORBIDDEN_FOR_CHECK = (
    "optuna", "scipy", "sklearn", "psycopg", "pymysql", "duckdb", "jsonschema",
    "pmem_advisor.tuner", "pmem_advisor.workloads", "pmem_advisor.instances.live",
    "pmem_advisor.cli.tune", "pmem_advisor.cli.instances", "pmem_advisor.cli.workload",
    "pmem_advisor.cli.probe", "pmem_advisor.cli.doctor", "pmem_advisor.cli.config",
    "pmem_advisor.engines.duckdb.engine", "pmem_advisor.engines.duckdb.runner",
    "pmem_advisor.engines.rocksdb", "pmem_advisor.engines.tarantool",
    "pmem_advisor.engines.server_validate",
    "pmem_advisor.library.tune", "pmem_advisor.library.workload",
    "pmem_advisor.library.probe", "pmem_advisor.library.config",
    # typer 0.29 validates every parameter through pydantic (~60 ms); the instance machinery
    # (base, golden, cgroups, psutil) is not needed to ask discovery for a version.
    "pydantic", "psutil", "pmem_advisor.instances.base", "pmem_advisor.instances.golden",
    "pmem_advisor.instances.cgroup",
)
# Besides, each engine's check loads no other server engine's package (its parser, emitter).
OTHER_ENGINE = {"mysql": ("pmem_advisor.engines.postgres.engine",
                          "pmem_advisor.engines.postgres.parse"),
                "postgres": ("pmem_advisor.engines.mysql.engine",
                             "pmem_advisor.engines.mysql.parse")}
FORBIDDEN_FOR_VERSION = FORBIDDEN_FOR_CHECK + (
    "pmem_advisor.cli.check", "pmem_advisor.cli.recommend", "pmem_advisor.engines.registry",
    "pmem_advisor.knobs", "pmem_advisor.rules", "pmem_advisor.instances",
    "pmem_advisor.workloads", "pmem_advisor.tuner", "jsonschema",
)

_RUNNER = (
    "import json, sys\n"
    "from pmem_advisor.cli.main import main\n"
    "rc = main(sys.argv[1:])\n"
    "mods = sorted(sys.modules)\n"
    "sys.stderr.write('\\nMODULES ' + json.dumps({'rc': rc, 'mods': mods}) + '\\n')\n"
)


def _modules(*args: str) -> tuple[int, set[str]]:
    r = subprocess.run([sys.executable, "-c", _RUNNER, *args], capture_output=True, text=True,
                       timeout=120)
    line = [x for x in r.stderr.splitlines() if x.startswith("MODULES ")][-1]
    data = json.loads(line[len("MODULES "):])
    return data["rc"], set(data["mods"])


def _hits(mods: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(m for m in mods for f in forbidden if m == f or m.startswith(f + "."))


def test_version_imports_no_command(tmp_path):
    rc, mods = _modules("--version")
    assert rc == 0
    assert _hits(mods, FORBIDDEN_FOR_VERSION) == []


def test_check_file_imports_only_the_check_path(tmp_path):
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[mysqld]\ninnodb_flush_log_at_trx_commit = 1\nmax_connections = 100\n")
    rc, mods = _modules("check", "--config", str(cnf), "--db", "mysql", "--version", "8.4")
    assert rc in (0, 1)  # findings or none: the run completed
    assert "pmem_advisor.cli.check" in mods  # the runner really ran check
    assert "pmem_advisor.engines.mysql.engine" in mods
    assert _hits(mods, FORBIDDEN_FOR_CHECK + OTHER_ENGINE["mysql"]) == []


def test_check_postgres_file_imports_only_the_check_path(tmp_path):
    conf = tmp_path / "postgresql.conf"
    conf.write_text("shared_buffers = '1GB'\nfsync = on\n")
    rc, mods = _modules("check", "--config", str(conf), "--db", "postgres", "--version", "16")
    assert rc in (0, 1)
    assert "pmem_advisor.cli.check" in mods
    assert "pmem_advisor.engines.postgres.engine" in mods
    assert _hits(mods, FORBIDDEN_FOR_CHECK + OTHER_ENGINE["postgres"]) == []


def test_check_without_version_asks_discovery_only(tmp_path):
    # No --version: the installed server's version is asked of instances.discovery, which
    # must not pull in the instance machinery with it (the package's lazy __init__).
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[mysqld]\nmax_connections = 100\n")
    rc, mods = _modules("check", "--config", str(cnf), "--db", "mariadb")
    assert rc in (0, 1)
    assert "pmem_advisor.instances.discovery" in mods
    assert _hits(mods, FORBIDDEN_FOR_CHECK) == []
