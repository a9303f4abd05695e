"""Tarantool engine against the real /usr/bin/tarantool: catalog defaults read back from
box.cfg, validation by starting (Tarantool's own reasons), the managed instance leaves nothing,
the evaluator at tiny scale on /dev/shm and on disk, and recommend on a captured PMEM machine
gives an init file Tarantool starts with."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import psutil
import pytest

from pmem_advisor.engines.api import EvalRequest
from pmem_advisor.errors import EnvironmentProblem, UsageError
from pmem_advisor.knobs.emit import Header, Setting

try:
    from pmem_advisor.engines.tarantool.instance import find_tarantool

    BINARY = find_tarantool()
except EnvironmentProblem:
    BINARY = None

pytestmark = [pytest.mark.server, pytest.mark.skipif(
    BINARY is None, reason="tarantool missing (apt-get install tarantool)")]
MB, GB = 1 << 20, 1 << 30


def _engine():
    from pmem_advisor.engines.registry import get_engine

    return get_engine("tarantool")


@pytest.fixture
def base(request):
    """A data/WAL base the unprivileged server user can reach, removed afterwards."""
    where = getattr(request, "param", "/var/tmp")
    d = Path(tempfile.mkdtemp(prefix="tara-test-", dir=where))
    d.chmod(0o711)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_catalog_defaults_match_the_binary():
    from pmem_advisor.engines.tarantool.instance import TarantoolInstance

    catalog = _engine().catalog(version=BINARY.version)
    with TarantoolInstance(BINARY) as inst:
        inst.initialize()
        inst.start("box.cfg{}\n")
        live = inst.settings()
    for knob in catalog:
        if knob.type == "path":  # the instance places them; their default is '.'
            continue
        assert knob.name in live, f"{knob.name}: Tarantool {BINARY.version} has no such option"
        have = knob.coerce(float(live[knob.name]) if knob.type in ("int", "size", "real")
                           else {"true": True, "false": False}.get(live[knob.name],
                                                                   live[knob.name]))
        assert knob.same(have, knob.default), (knob.name, live[knob.name], knob.default)
    assert live["wal_mode"] == "write"  # why the emitter always writes fsync


def test_instance_is_unprivileged_on_a_private_socket_and_leaves_nothing():
    from pmem_advisor.engines.tarantool.instance import TarantoolInstance
    from pmem_advisor.instances import registry

    inst = TarantoolInstance(BINARY)
    try:
        inst.initialize()
        inst.start("box.cfg{wal_mode = 'fsync'}\n")
        pid, home, socket_dir = inst.pid, inst.home, inst.socket_dir
        proc = psutil.Process(pid)
        if os.geteuid() == 0:
            assert proc.uids().real != 0, "Tarantool must not run as root"
        assert stat.S_IMODE(socket_dir.stat().st_mode) == 0o700
        assert stat.S_ISSOCK(inst.socket_path.stat().st_mode)
        assert not [c for c in proc.net_connections(kind="inet") if c.status == "LISTEN"]
        assert inst.settings()["wal_mode"] == "fsync"
    finally:
        inst.destroy()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not home.exists() and not socket_dir.exists()
    assert inst.id not in {r.id for r in registry.load_all()}


def test_validate_by_starting_good_and_bad():
    eng = _engine()
    good = eng.emit([Setting("memtx_memory", 64 * MB, "test"),
                     Setting("checkpoint_interval", 600, "test")], Header()).text
    eng.validate_by_starting(good, None)
    with pytest.raises(UsageError, match=r"Tarantool 2\.\d+\.\d+ refused the config: ER_CFG: "
                                         r"Incorrect value for option 'readahead'"):
        eng.validate_by_starting(good.replace("box.cfg{\n", "box.cfg{\n    readahead = 1,\n"),
                                 None)
    with pytest.raises(UsageError, match="cannot read the box.cfg file"):
        eng.validate_by_starting("box.cfg{memtx_memory = }\n", None)
    # in the catalog's range, refused by Tarantool itself (its slab classes do not fit)
    with pytest.raises(UsageError, match="can't initialize storage: Failed to allocate"):
        eng.validate_by_starting("box.cfg{memtx_min_tuple_size = 1048280}\n", None)


def test_config_validate_cli(run_cli, tmp_path):
    good = tmp_path / "good.lua"
    good.write_text("box.cfg{memtx_memory = 64 * 1024 * 1024, wal_mode = 'fsync'}\n")
    code, out, err = run_cli("config", "validate", str(good), "tarantool")
    assert code == 0, err
    assert "Tarantool 2.6.0 started with all 2 settings" in out or "started with all 2" in out
    bad = tmp_path / "bad.lua"
    bad.write_text("box.cfg{memtx_memory = '1G'}\n")
    code, out, err = run_cli("config", "validate", str(bad), "tarantool")
    assert code == 2 and "memtx_memory = '1G' is a string" in err


def test_find_binary_missing_names_the_package(monkeypatch):
    from pmem_advisor.engines.tarantool import instance as tarantool_instance

    monkeypatch.setattr(tarantool_instance, "_which", lambda name: None)
    monkeypatch.setattr(tarantool_instance, "FALLBACK_PATHS", ("/nonexistent/tarantool",))
    monkeypatch.delenv("PMEM_ADVISOR_TARANTOOL", raising=False)
    with pytest.raises(EnvironmentProblem) as e:
        _engine().find_binary()
    assert "apt-get install tarantool" in str(e.value)


@pytest.mark.parametrize("base", ["/dev/shm", "/var/tmp"], indirect=True)
def test_evaluator_tiny(base):
    from pmem_advisor.tuner.evaluator import TrialConfig

    eng = _engine()
    ev = eng.evaluator(EvalRequest(BINARY, eng.workload("ycsb-b"), scale=2, clients=2, duration=1.0,
                       warmup=0.2, data_dir=base / "data", wal_dir=base / "wal", workdir=None,
                       catalog=eng.catalog()))
    with ev:
        ok = ev.evaluate(TrialConfig({}))
        assert ok.ok, ok.failure
        assert ok.throughput_tps > 0 and ok.latency_ms["p99"] is not None
        wal = list((base / "wal").glob("*.xlog"))
        assert wal and not list((base / "wal").glob("*.snap")), "the WAL is apart from the data"
        again = ev.evaluate(TrialConfig({"memtx_memory": 128 * MB, "readahead": 65536}))
        assert again.ok and ev.initialisations == 1  # one golden copy (.snap + .xlog)
        # in the catalog's range, refused by Tarantool itself: the loaded 1 KB records are
        # larger than a 1024-byte tuple limit, and the reason comes from its log
        refused = ev.evaluate(TrialConfig({"memtx_max_tuple_size": 1024}))
        assert not refused.ok and "tuple is too large" in refused.failure, refused.failure
        assert ev.evaluate(TrialConfig({})).ok  # the next trial starts afresh
    assert not ev.scratch.exists()


def test_evaluator_vinyl_keeps_random_records_on_disk(base):
    """ycsb-b-vinyl: a vinyl space whose runs hold the records' random bytes (not compressed
    away), compacted to one run per range at load; trials take vinyl's quotas."""
    from pmem_advisor.engines.tarantool.workload import eval_lua
    from pmem_advisor.tuner.evaluator import TrialConfig

    eng = _engine()
    ev = eng.evaluator(EvalRequest(BINARY, eng.workload("ycsb-b-vinyl"), scale=3, clients=2,
                       duration=1.0, warmup=0.2, data_dir=base / "data", wal_dir=None,
                       workdir=None, catalog=eng.catalog()))
    with ev:
        ok = ev.evaluate(TrialConfig({}))
        assert ok.ok, ok.failure
        assert ok.throughput_tps > 0 and ev.initialisations == 1
        runs = list((base / "data").rglob("*.run"))
        # 3,000 records of ten random 100-byte fields: ~3 MB on disk (constant fields would
        # compress to a few KB)
        assert sum(r.stat().st_size for r in runs) > 2_500_000, runs
        inst = ev._prepare(TrialConfig({}))
        inst.start("box.cfg{vinyl_cache = 201326592, memtx_memory = 67108864}\n")
        try:
            got = eval_lua(inst.conninfo, "local s = box.space.usertable local st = "
                           "s.index.primary:stat() return {s.engine, s:count(), st.run_count, "
                           "st.range_count, box.cfg.vinyl_cache}")
        finally:
            inst.stop()
        assert got[:2] == ["vinyl", 3000]
        assert got[2] <= got[3]  # compacted at load: one run per range
        assert got[4] == 201326592
    assert not ev.scratch.exists()


def test_recommend_on_a_captured_pmem_machine_starts(tmp_path):
    from pmem_advisor.probes.profile import probe
    from pmem_advisor.probes.sysaccess import SysAccess
    from pmem_advisor.rules import combine as rules_engine
    from pmem_advisor.rules.facts import build_facts
    from tests.probes.machine_builder import build

    root = build("interleaved-2s-fsdax", tmp_path / "m")
    profile = probe(SysAccess(str(root)))
    pm = next(m["mountpoint"] for m in profile["mounts"] if m.get("medium") == "pmem")
    f = build_facts(profile, engine="tarantool", data_dir="/var/lib/tarantool",
                    wal_dir=f"{pm}/tarantool-wal", memory_bytes=1 * GB, workload="kv",
                    root=str(root))
    rec = rules_engine.recommend(f)
    assert {"PM071", "PM072", "PM073"} <= set(rec.fired)
    eng = _engine()
    text = eng.emit([Setting(s.name, s.value, s.rule) for s in rec.settings],
                    Header(fingerprint="interleaved-2s-fsdax")).text
    assert f"wal_dir = '{pm}/tarantool-wal'" in text and "wal_mode = 'fsync'" in text
    eng.validate_by_starting(text, None)  # Tarantool 2.6 starts with it (placement overridden)
    assert eng.parse_config(text, "rec.lua")["wal_mode"] == "fsync"


_CHILD = """
import sys, time
from pmem_advisor.engines.tarantool.instance import TarantoolInstance, find_tarantool
inst = TarantoolInstance(find_tarantool(), sys.argv[1])
inst.initialize()
inst.start("box.cfg{wal_mode = 'fsync'}\\n")
print(inst.pid, inst.home, flush=True)
time.sleep(600)
"""


def test_a_killed_run_is_reaped(tmp_path):
    """SIGKILL the owning process: the next run's reaper stops Tarantool and removes its dirs."""
    import signal
    import subprocess
    import sys
    import time

    from pmem_advisor.instances import registry

    work = Path(tempfile.mkdtemp(prefix="tara-kill-", dir="/var/tmp"))
    work.chmod(0o755)
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(work)], stdout=subprocess.PIPE,
                             text=True)
    try:
        line = child.stdout.readline().split()
        assert line, "the child did not start Tarantool"
        pid, home = int(line[0]), Path(line[1])
        assert psutil.pid_exists(pid) and home.is_dir()
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        registry.reap_stale()
        deadline = time.monotonic() + 30
        while psutil.pid_exists(pid) and time.monotonic() < deadline:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                break
            time.sleep(0.1)
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        assert not home.exists()
    finally:
        if child.poll() is None:
            child.kill()
        shutil.rmtree(work, ignore_errors=True)
