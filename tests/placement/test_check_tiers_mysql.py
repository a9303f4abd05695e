"""CK030 on MySQL 8 without a MySQL server (none is installable here): `check --dsn` runs on
the recorded MySQL 8.0.36 snapshot test_place_mysql.py replays (tests/placement/data/
mysql8_snapshot.json), through place mysql's own reader, so what it has met is that recording,
not a live server. The general tablespace ts_old (tables orders and audit) sits in the
innodb_directories entry, the data directory holds the rest; the test puts each in a directory
of its own and gives their media by --medium (the machine has one disk and a tmpfs)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.placement.test_place_mysql import DSN, Replay, _fixture, _server


@pytest.fixture
def dirs():
    made = []

    def make(known_on: str) -> tuple[str, str]:
        data = Path(tempfile.mkdtemp(prefix="pmem-advisor-ck030-data-", dir="/var/tmp"))
        known = Path(tempfile.mkdtemp(prefix="pmem-advisor-ck030-known-", dir=known_on))
        made.extend([data, known])
        return str(data), str(known)

    yield make
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


def _check(monkeypatch, run_cli, data: str, known: str, *media: str,
           settings: dict | None = None, unsafe: bool = False) -> tuple[list, str]:
    """check --dsn on the replayed server: CK030's findings and the notes."""
    from pmem_advisor.instances import live
    from pmem_advisor.rules import placement_mariadb

    fx = _fixture(data, known, f"{known}/fast")
    fx["server"]["settings"] |= settings or {}
    server = _server(fx) | {"status": {}, "wal_dir": None, "notes": []}
    monkeypatch.setattr(live, "read_server", lambda dsn, engine: server)
    monkeypatch.setattr(placement_mariadb, "_connect", lambda dsn: Replay(fx))
    args = [a for m in media for a in ("--medium", m)]
    args += ["--allow-unsafe"] if unsafe else []
    code, out, err = run_cli("check", "--dsn", DSN, "--format", "json", "--no-measure", *args)
    assert code in (0, 1), err
    return [f for f in json.loads(out)["findings"] if f["rule"] == "CK030"], err


def _orders_counts() -> tuple[float, float, float]:
    """orders' share of ts_old's file operations, split by row operations as place does, and
    its share of all the tables' I/O: the recorded snapshot's own figures."""
    fx = _fixture("/d", "/k", "/k/fast")
    q = fx["queries"]
    files = next(v for k, v in q.items() if "file_summary_by_instance" in k)[0]
    rows = {r[1]: r[2] + r[3] for r in next(v for k, v in q.items()
                                             if "table_io_waits" in k)[0]}
    ts = next(r for r in files if r[0] == "/k/ts_old.ibd")
    part = rows["orders"] / (rows["orders"] + rows["audit"])
    reads, writes = ts[2] * part, ts[3] * part
    tables = [r for r in files if r[0].startswith("/d/shop/") or r[0] == ts[0]]
    return reads, writes, (reads + writes) / sum(r[2] + r[3] for r in tables)


def test_a_hot_table_in_a_general_tablespace_on_a_slower_directory_is_named(monkeypatch, dirs,
                                                                            run_cli):
    data, known = dirs("/dev/shm")  # two filesystems: the tiers differ by --medium
    found, err = _check(monkeypatch, run_cli, data, known, f"{known}=hdd", f"{data}=nvme")
    reads, writes, share = _orders_counts()
    assert [f["subject"] for f in found] == ["tier:`shop`.`orders`"], (found, err)
    msg, fix = found[0]["message"], found[0]["fix"]
    assert (f"`shop`.`orders` (table, 4.5 MiB) takes {share:.0%} of the tables' and indexes' "
            f"I/O ({reads:.0f} file operations read past the server's cache, {writes:.0f} "
            "written (a share of tablespace ts_old's file operations, split by row operations: "
            "an estimate); counters since the server started 2.0 h ago)") in msg, msg
    assert f"on tablespace ts_old at {known} (hdd, --medium), while {data} (nvme, --medium)" \
        in msg, msg
    st = os.statvfs(data)
    free = st.f_bavail * st.f_frsize / (1 << 30)
    assert any(f"has {free + d:.1f} GiB free" in msg for d in (-0.1, 0, 0.1)), msg
    assert ("ALTER TABLE `shop`.`orders` TABLESPACE=`innodb_file_per_table`, ALGORITHM=COPY"
            in fix), fix


def test_a_hot_table_in_a_slower_data_directory_is_sent_to_place_mysql(monkeypatch, dirs,
                                                                       run_cli):
    data, known = dirs("/dev/shm")  # the other way round: ts_old's directory is the faster
    media = (f"{known}=nvme", f"{data}=hdd")
    assert _check(monkeypatch, run_cli, data, known, *media)[0] == []  # tmpfs: no target
    found, err = _check(monkeypatch, run_cli, data, known, *media, unsafe=True)
    files = next(v for k, v in _fixture(data, known)["queries"].items()
                 if "file_summary_by_instance" in k)[0]
    reads, writes = next(r[2:4] for r in files if r[0] == f"{data}/shop/hot.ibd")
    tables = [r for r in files if r[0].startswith(f"{data}/shop/") or r[0].endswith("ts_old.ibd")]
    share = (reads + writes) / sum(r[2] + r[3] for r in tables)
    assert [f["subject"] for f in found] == ["tier:`shop`.`hot`"], (found, err)
    msg, fix = found[0]["message"], found[0]["fix"]
    assert (f"`shop`.`hot` (table, 2.0 MiB) takes {share:.0%} of the tables' and indexes' I/O "
            f"({reads} file operations read past the server's cache, {writes} written; ") in msg
    assert f"on {data} (hdd, --medium), while tablespace ts_old at {known} (nvme" in msg, msg
    assert "(tmpfs: lost at reboot, accepted with --allow-unsafe)" in msg, msg
    assert f"pmem-advisor place mysql --dsn ... --fast {known} --allow-unsafe`" in fix, fix


def test_all_on_one_filesystem_is_one_tier_and_says_nothing(monkeypatch, dirs, run_cli):
    data, known = dirs("/var/tmp")  # one filesystem, whatever --medium says of each path
    found, err = _check(monkeypatch, run_cli, data, known, f"{known}=hdd", f"{data}=nvme")
    assert found == [], found
    assert "CK030" not in err and "not checked" not in err, err
    # not silence for want of a reading: both locations were read, on one filesystem
    from pmem_advisor.rules import placement_mariadb
    from pmem_advisor.rules.checks import CK030_hot_object_on_slow_tier as ck
    from pmem_advisor.rules.checks.CK030_hot_object_on_slow_tier import read_tiers

    fx = _fixture(data, known)
    monkeypatch.setattr(placement_mariadb, "_connect", lambda dsn: Replay(fx))
    tiers = read_tiers(DSN, _server(fx), notes := [])
    assert {loc["path"]: loc["tablespace"] for loc in tiers["locations"]} == {
        data: None, known: "ts_old"}, (tiers, notes)
    assert len({loc["dev"] for loc in tiers["locations"]}) == 1
    # a table in the system tablespace, as INNODB_DATAFILES names ibdata1: the data directory
    assert ck._mysql_dir(data, "System", "./ibdata1") == data
    assert ck._mysql_dir(data, "Single", "/elsewhere/shop/t.ibd") == "/elsewhere"  # DATA DIR.
    objs = {o["name"]: o for o in tiers["objects"]}
    assert objs["`shop`.`orders`"]["location"] == known
    assert objs["`shop`.`orders`"]["tablespace"] == "ts_old"  # its counts a share: said so
    assert objs["`shop`.`events`"]["movable"] is False  # partitioned: never named, no SQL
    assert "movable" not in objs["`shop`.`hot`"]


def test_performance_schema_off_with_several_locations_is_a_note(monkeypatch, dirs, run_cli):
    data, known = dirs("/dev/shm")
    found, err = _check(monkeypatch, run_cli, data, known, f"{known}=hdd", f"{data}=nvme",
                        settings={"performance_schema": "OFF"})
    assert found == []
    assert "hot objects on the slow tier (CK030) not checked: performance_schema is OFF" in err
