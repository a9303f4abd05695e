"""The last by-name reads in the engines (issue 50): a file root reads back from a tree a
managed server's user (``nobody`` here) can write. A link that user plants there must not lead
root to a file the user could not read, a FIFO must not block root, and root's canaries keep
owner, mode and content. Against the by-name ``open()`` calls these replaced, the link was
followed (the canary's header decided the answer, its lines were counted as transactions) and
the FIFO blocked root for good."""

from __future__ import annotations

import os
import threading

import pytest

from pmem_advisor.engines.postgres.pgbench import log_names, parse_transaction_logs
from pmem_advisor.engines.server_validate import config_flavour
from pmem_advisor.fileio import PlantedFile, held_dir
from pmem_advisor.knobs.configfile import ConfigFile
from tests.security.conftest import as_root_only, chown_nobody, fingerprint

pytestmark = as_root_only()

# a pgbench per-transaction log line: client, txn, latency us, script, epoch s, epoch us
CANARY_LOG = "".join(f"0 {i} 1000 0 1795357997 {i}\n" for i in range(50))


def bounded(fn, seconds: float = 20):
    """fn()'s result or exception; a call still blocked after ``seconds`` fails the test."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"root blocked for {seconds} s on a file the attacker planted"
    if "error" in out:
        raise out["error"]
    return out["value"]


@pytest.fixture
def canary(root_only):
    (root_only / "server.cnf").write_text("# target: MariaDB 11.4\n[mysqld]\n")
    (root_only / "server.cnf").chmod(0o600)
    (root_only / "txn.log").write_text(CANARY_LOG)
    (root_only / "txn.log").chmod(0o600)
    return root_only


def test_a_link_at_the_validated_config_leads_root_to_nothing_the_user_cannot_read(user_dir,
                                                                                    canary):
    """check --validate reads the my.cnf header again after the parse: the server's user swaps
    a link to a root-only file in (its own data directory holds the config)."""
    before = fingerprint(canary)
    cnf = user_dir / "my.cnf"
    cnf.symlink_to(canary / "server.cnf")
    chown_nobody(cnf)
    # by name, root followed the link and the root-only header said "MariaDB"
    assert bounded(lambda: config_flavour(ConfigFile(format="mycnf", path=str(cnf)))) is None
    assert fingerprint(canary) == before


def test_a_fifo_at_the_validated_config_does_not_block_root(user_dir, canary):
    before = fingerprint(canary)
    cnf = user_dir / "my.cnf"
    os.mkfifo(cnf)
    chown_nobody(cnf)
    assert bounded(lambda: config_flavour(ConfigFile(format="mycnf", path=str(cnf)))) is None
    assert fingerprint(canary) == before


def test_the_validated_config_of_its_owner_is_still_read(user_dir):
    """The refusal above is the trust rule, not a blanket one: the user's own file is read."""
    cnf = user_dir / "my.cnf"
    cnf.write_text("# target: MariaDB 11.4\n[mysqld]\n")
    chown_nobody(cnf)
    found = config_flavour(ConfigFile(format="mycnf", path=str(cnf)))
    assert found is not None and found[0] == "mariadb"


def test_the_engines_config_reader_refuses_a_link_to_a_root_only_file(user_dir, canary):
    from pmem_advisor.engines import get_engine
    from pmem_advisor.errors import InputError

    before = fingerprint(canary)
    link = user_dir / "engine.conf"
    link.symlink_to(canary / "server.cnf")
    chown_nobody(link)
    with pytest.raises(InputError, match="could not read it"):
        bounded(lambda: get_engine("rocksdb").read_config_file(str(link)))
    assert fingerprint(canary) == before


@pytest.mark.parametrize("plant", ["link", "fifo", "hardlink"])
def test_a_file_planted_among_pgbench_logs_is_refused_not_read(user_dir, canary, plant):
    """pgbench's logs are read back from their directory: one planted there (a link to a
    root-only file, a FIFO, a hard link to root's file) is PlantedFile, one line naming it,
    and nothing of root's is counted, blocked on or changed."""
    before = fingerprint(canary)
    (user_dir / "txn.100").write_text("0 1 2000 0 1795357997 5\n")  # root's own log
    planted = user_dir / "txn.101"
    if plant == "link":
        planted.symlink_to(canary / "txn.log")
        chown_nobody(planted)
    elif plant == "fifo":
        os.mkfifo(planted)
        chown_nobody(planted)
    else:  # root stands in for a kernel without fs.protected_hardlinks
        os.link(canary / "txn.log", planted)
        before = fingerprint(canary)  # the link count is the attack, not a change by the tool
    with held_dir(user_dir) as dfd:
        names = log_names(dfd)
        assert names == ["txn.100", "txn.101"]
        with pytest.raises(PlantedFile, match=r"refusing to use txn\.101: it is "):
            bounded(lambda: parse_transaction_logs(names, None, dfd))
    with pytest.raises(PlantedFile, match=f"refusing to use {planted}: it is "):
        bounded(lambda: parse_transaction_logs([user_dir / "txn.100", planted]))
    assert fingerprint(canary) == before


def test_the_pgbench_log_reader_still_reads_its_own_logs(base):
    """Root's own logs in root's directory are read (the refusal is not a blanket one)."""
    d = base / "logs"
    d.mkdir(mode=0o700)
    (d / "txn.1").write_text(CANARY_LOG)
    with held_dir(d) as dfd:
        r = parse_transaction_logs(log_names(dfd), None, dfd)
    assert r["logged"] == 50 and r["latency_ms"]["p50"] == 1.0
