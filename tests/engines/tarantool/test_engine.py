"""Tarantool engine without a server: the box.cfg catalog, Lua emitter <-> parser, risky
values, the worst-case memory and the baseline (the live tests are test_live.py)."""

from __future__ import annotations

import pytest

from pmem_advisor.engines.tarantool.catalog import load
from pmem_advisor.engines.tarantool.lua import emit_box_cfg, parse_box_cfg, parse_box_cfg_values
from pmem_advisor.errors import UnknownKnobError, UsageError
from pmem_advisor.knobs.emit import Header, Setting

GB, MB = 1 << 30, 1 << 20


@pytest.fixture(scope="module")
def catalog():
    return load()


def _engine():
    from pmem_advisor.engines.registry import get_engine

    return get_engine("tarantool")


def test_catalog_has_the_box_cfg_knobs_and_safety(catalog):
    names = set(catalog.names())
    assert {"memtx_memory", "memtx_min_tuple_size", "memtx_max_tuple_size", "wal_mode",
            "wal_dir", "wal_max_size", "checkpoint_interval", "checkpoint_count",
            "checkpoint_wal_threshold", "readahead", "net_msg_max", "vinyl_memory",
            "vinyl_cache", "worker_pool_threads"} <= names
    wal_mode = catalog.get("wal_mode")
    assert wal_mode.default == "write"  # Tarantool's own default is the risky one
    assert wal_mode.is_risky("write") and wal_mode.is_risky("none")
    assert not wal_mode.is_risky("fsync")
    assert "fsync(2)" in wal_mode.safety_reason
    assert catalog.get("force_recovery").is_risky(True)
    assert catalog.version == "2.6"
    assert _engine().catalog().get("memtx_memory").default == 256 * MB


def test_round_trip(catalog):
    settings = [Setting("memtx_memory", "1G", "TT-BASE"), Setting("wal_dir", "/mnt/pm'em/wal",
                                                                   "PM070"),
                Setting("checkpoint_interval", 600, "trial 3"), Setting("readahead", 65536, "x"),
                Setting("slab_alloc_factor", 1.1, "y"), Setting("wal_mode", "fsync", "PM071")]
    text = emit_box_cfg(settings, Header(fingerprint="abc", notes=("line\nbreak",)),
                        catalog).text
    assert text.startswith("-- Tarantool init file")
    assert "box.cfg{" in text and "-- note: line break" in text
    assert "memtx_memory = 1073741824,  -- 1GB: TT-BASE" in text
    assert parse_box_cfg(text, "t.lua", catalog) == {
        "memtx_memory": "1073741824", "wal_dir": "/mnt/pm'em/wal",
        "checkpoint_interval": "600", "readahead": "65536", "slab_alloc_factor": "1.1",
        "wal_mode": "fsync"}


def test_emitter_writes_fsync_when_left_out_and_refuses_risky(catalog):
    text = emit_box_cfg([Setting("memtx_memory", 512 * MB, "r")], Header(), catalog).text
    assert "wal_mode = 'fsync'" in text
    with pytest.raises(UsageError, match="wal_mode = write is a durability risk"):
        emit_box_cfg([Setting("wal_mode", "write", "r")], Header(), catalog)
    with pytest.raises(UsageError, match="force_recovery"):
        _engine().emit([Setting("force_recovery", True, "r")], Header())
    ok = emit_box_cfg([Setting("wal_mode", "none", "r")], Header(), catalog, allow_unsafe=True)
    assert "wal_mode = 'none',  -- UNSAFE, durability risk: r" in ok.text
    marked = emit_box_cfg([Setting("wal_mode", "write", "UNSAFE, durability risk: user")],
                          Header(), catalog)  # what `config render --allow-unsafe` passes
    assert "wal_mode = 'write',  -- UNSAFE, durability risk: user" in marked.text


def test_parser_reads_a_dba_file(catalog):
    text = """
    -- an init file as people write it
    local log = require('log')
    box.cfg({
        listen = 3301,                              -- not a tuning knob: read past
        memtx_memory = 4 * 1024 * 1024 * 1024;      -- products of numbers are fine
        wal_mode = "fsync",
        checkpoint_count = 3, --[[ a block comment ]]
        force_recovery = false,
        replication = {'replicator:pw@10.0.0.2:3301'},
    })
    box.once('schema', function() end)
    """
    assert parse_box_cfg_values(text, "init.lua", catalog) == {
        "memtx_memory": 4 * GB, "wal_mode": "fsync", "checkpoint_count": 3,
        "force_recovery": False}


@pytest.mark.parametrize("text,needle", [
    ("box.cfg{memtx_memory = '1G'}", "i.lua:1: memtx_memory = '1G' is a string; Tarantool "
                                     "wants a number of bytes"),
    ("box.cfg{memtx_memory = 1024}", "memtx_memory: 1K is outside the allowed range"),
    ("box.cfg{wal_mode = 'bogus'}", "wal_mode: 'bogus' is not one of none, write, fsync"),
    ("box.cfg{wal_mode = true}", "wal_mode = true is a boolean; Tarantool wants a string"),
    ("box.cfg{readahead = 1.5}", "readahead = 1.5 is not a whole number"),
    ("box.cfg{memtx_memory = os.getenv('X')}", "memtx_memory: only literal values"),
    ("box.cfg{checkpoint_count = 0}", "checkpoint_count: 0 is outside the allowed range"),
    ("print('no cfg')", "no box.cfg{...} call found"),
])
def test_bad_values_one_line_naming_the_option(catalog, text, needle):
    with pytest.raises(UsageError) as e:
        parse_box_cfg(text, "i.lua", catalog)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_unknown_option_suggests_the_closest(catalog):
    with pytest.raises(UnknownKnobError, match="memtx_memry.*did you mean memtx_memory"):
        parse_box_cfg("box.cfg{memtx_memry = 1}", "i.lua", catalog)


def test_engine_data_and_workloads():
    eng = _engine()
    assert eng.kind == "server" and eng.config_format == "tarantool-lua"
    assert eng.workloads == ("ycsb-a", "ycsb-b", "ycsb-c", "ycsb-a-vinyl", "ycsb-b-vinyl",
                             "ycsb-c-vinyl")
    shares = {n: eng.workload(n).read_share for n in eng.workloads}
    assert shares == {"ycsb-a": 0.5, "ycsb-b": 0.95, "ycsb-c": 1.0, "ycsb-a-vinyl": 0.5,
                      "ycsb-b-vinyl": 0.95, "ycsb-c-vinyl": 1.0}
    assert eng.workload("ycsb-a").write_heavy and not eng.workload("ycsb-b").write_heavy
    assert {n: eng.workload(n).storage_engine for n in ("ycsb-b", "tarantool-ycsb-b-vinyl")} \
        == {"ycsb-b": "memtx", "tarantool-ycsb-b-vinyl": "vinyl"}
    # vinyl's quotas are searched only when the data is in vinyl
    assert eng.workload_knobs(eng.workload("ycsb-b")) == []
    assert {"vinyl_cache", "vinyl_memory"} <= set(eng.workload_knobs(eng.workload("ycsb-c-vinyl")))
    with pytest.raises(UsageError, match="unknown Tarantool workload"):
        eng.workload("tpcc")


def test_memory_worst_case_counts_quotas_and_connections(catalog):
    est = _engine().memory({"memtx_memory": 2 * GB, "readahead": 65536}, flavour="tarantool",
                           version=None, catalog=catalog, connections=200)
    assert est.global_bytes == 2 * GB + 2 * 128 * MB + 64 * MB
    assert est.per_connection_bytes == 2 * 65536 and est.connections == 200
    assert {p.name for p in est.parts} >= {"memtx_memory", "vinyl_memory", "vinyl_cache"}


def test_recommend_fits_the_budget_and_is_durable():
    from pmem_advisor.rules import combine as rules_engine
    from pmem_advisor.rules.facts import build_facts
    from tests.rules.machines import make_profile

    f = build_facts(make_profile("pmem"), engine="tarantool", data_dir="/var/lib/tarantool",
                    wal_dir="/mnt/pmem0/tt", memory_bytes=8 * GB, workload="kv")
    rec = rules_engine.recommend(f)
    got = {s.name: s for s in rec.settings}
    assert got["wal_mode"].value == "fsync"
    assert got["wal_dir"].value == "/mnt/pmem0/tt"
    assert 4 * GB < got["memtx_memory"].value <= 6 * GB
    assert rec.memory.total_bytes <= 0.9 * 8 * GB
    assert {"PM071", "PM072", "PM073"} <= set(rec.fired)
    lo, hi = rec.bounds["memtx_memory"]
    assert lo == got["memtx_memory"].value * 3 // 4 and hi == got["memtx_memory"].value
    small = rules_engine.recommend(build_facts(make_profile("small"), engine="tarantool",
                                               memory_bytes=512 * MB, workload="kv"))
    arena = next(s for s in small.settings if s.name == "memtx_memory").value
    assert small.memory.total_bytes <= 0.9 * 512 * MB and arena >= 32 * MB


def test_recommend_data_in_vinyl_gives_the_budget_to_vinyls_cache():
    """With the data in vinyl the memtx arena holds only the system spaces and vinyl's tuple
    cache takes the budget's share (memtx's sizing would leave it at the 128 MB default with
    384 MB of an empty arena); the worst case still fits, and the data sets no memtx bound."""
    from pmem_advisor.rules import combine as rules_engine
    from pmem_advisor.rules.facts import build_facts
    from tests.rules.machines import make_profile

    def rec(engine):
        return rules_engine.recommend(build_facts(
            make_profile("ssd"), engine="tarantool", data_dir="/var/lib/tarantool",
            memory_bytes=1 * GB, workload="kv", clients=8, storage_engine=engine))

    memtx, vinyl = rec(None), rec("vinyl")
    assert rec("memtx").settings == memtx.settings  # memtx is the default
    m = {s.name: s.value for s in memtx.settings}
    v = {s.name: s.value for s in vinyl.settings}
    assert m["memtx_memory"] == 384 * MB and "vinyl_cache" not in m
    assert v["memtx_memory"] == 64 * MB and v["vinyl_memory"] == 128 * MB
    assert v["vinyl_cache"] == 496 * MB  # 768 MB less memtx, L0, runtime, 18 connections
    assert v["wal_mode"] == "fsync"
    assert vinyl.memory.total_bytes <= 0.9 * GB
    assert vinyl.bounds["vinyl_cache"] == (248 * MB, 496 * MB)
    assert "vinyl_cache" in vinyl.important and "memtx_memory" not in vinyl.bounds
    eng = _engine()
    assert eng.data_bounds(eng.workload("ycsb-b-vinyl"), 2000, load()) == []
    assert [b.knob for b in eng.data_bounds(eng.workload("ycsb-b"), 200, load())] == [
        "memtx_memory", "memtx_min_tuple_size"]
    # a budget too small for the shares: vinyl_cache gives way, never below the worst case
    small = rules_engine.recommend(build_facts(
        make_profile("small"), engine="tarantool", memory_bytes=512 * MB, workload="kv",
        clients=8, storage_engine="vinyl"))
    assert small.memory.total_bytes <= 0.9 * 512 * MB


def test_apply_lines_are_lua():
    lines = _engine().apply_lines("/x/tarantool.tuned.lua",
                                  {"memtx_memory": "256M", "readahead": "64K"}, ["memtx_memory"])
    assert "`tarantool /x/tarantool.tuned.lua`" in lines[0]
    assert "box.cfg{readahead = 65536}" in lines[1]
    assert "restart needed for memtx_memory" in lines[2]


def test_recommend_cli_on_a_captured_machine(run_cli, tmp_path):
    from tests.probes.machine_builder import build

    root = build("interleaved-2s-fsdax", tmp_path / "m")
    out = tmp_path / "tarantool.lua"
    code, stdout, stderr = run_cli("recommend", "tarantool", "--root", str(root), "--data-dir",
                                   "/var/lib/tarantool", "--wal-dir", "/mnt/pmem0/tt-wal",
                                   "--memory", "2G", "--workload", "kv", "--out", str(out))
    assert code == 0, stderr
    assert "wal_mode" in stdout and "PM072" in stdout + stderr
    text = out.read_text()
    assert text.startswith("-- Tarantool init file") and "-- note: note:" not in text
    values = parse_box_cfg_values(text, str(out), load())
    assert values["wal_mode"] == "fsync" and values["wal_dir"] == "/mnt/pmem0/tt-wal"
    assert 512 * MB <= values["memtx_memory"] <= 2 * GB


def test_check_cli_fails_risky_and_oversized_files(run_cli, tmp_path):
    bad = tmp_path / "init.lua"
    bad.write_text("box.cfg{ memtx_memory = 8 * 1024 * 1024 * 1024, wal_mode = 'write',\n"
                   "         force_recovery = true }\n")
    code, out, err = run_cli("check", "tarantool", "--config", str(bad), "--data-dir",
                             "/var/lib/tarantool", "--memory", "4G", "--version", "2.6")
    assert code == 1, err
    assert "[PM071] wal_mode" in out and "[PM071] force_recovery" in out
    assert "[CK004] memory" in out
    typo = tmp_path / "typo.lua"
    typo.write_text("box.cfg{ memtx_memory = '1G' }\n")
    code, out, err = run_cli("check", "tarantool", "--config", str(typo), "--memory", "4G",
                             "--version", "2.6")
    assert code == 2 and "memtx_memory = '1G' is a string" in err
