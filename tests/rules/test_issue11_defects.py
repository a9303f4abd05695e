"""Issue 11: each numbered defect of `recommend`, one test (or a few) per defect.

Every test here failed before its fix (the report of the change says how each was seen failing).
"""

from __future__ import annotations

import json

import pytest

from pmem_advisor.errors import EXIT_USAGE, UsageError
from pmem_advisor.knobs.catalog import load_catalog
from pmem_advisor.rules import build_facts, recommend
from pmem_advisor.rules.memory import worst_case
from tests.rules.machines import make_profile

GB = 1 << 30


def facts(machine="pmem", **kw):
    kw.setdefault("engine", "postgres")
    if "memory_gb" in kw:
        kw["memory_bytes"] = kw.pop("memory_gb") * GB
    return build_facts(make_profile(machine), **kw)


def settings_of(rec) -> dict:
    return {s.name: s.value for s in rec.settings}


def worst(rec):
    f = rec.facts
    return worst_case(f.engine, settings_of(rec), flavour=f.flavour, version=f.version,
                      host_cpus=f.cpus)


# ---------------------------------------------------------------- 1. unsafe values
def test_mariadb_doublewrite_fast_is_withheld_without_allow_unsafe():
    rec = recommend(facts(engine="mysql", flavour="mariadb", version="11.4.5",
                          data_dir="/mnt/pmem0/my"))
    s = rec.setting("innodb_doublewrite")
    assert s is None or s.text.upper() == "ON"
    withheld = {(w.name, w.text) for w in rec.withheld}
    assert ("innodb_doublewrite", "fast") in withheld
    allowed = recommend(facts(engine="mysql", flavour="mariadb", version="11.4.5",
                              data_dir="/mnt/pmem0/my", allow_unsafe=True))
    assert allowed.setting("innodb_doublewrite").unsafe


@pytest.mark.parametrize("version,has_fast", [("11.4.0", False), ("11.4.1", False),
                                              ("11.4.2", True), ("10.11.9", False),
                                              ("11.8", True)])
def test_doublewrite_fast_only_where_it_exists_and_always_risky(version, has_fast):
    knob = load_catalog("mysql", "mariadb", version).get("innodb_doublewrite")
    if has_fast:
        assert knob.is_risky("fast") and knob.is_risky("OFF") and not knob.is_risky("ON")
    else:
        with pytest.raises(UsageError):
            knob.coerce("fast")
        assert knob.is_risky(False)


def test_mariadb_o_direct_no_fsync_is_a_durability_risk():
    knob = load_catalog("mysql", "mariadb", "10.11").get("innodb_flush_method")
    assert knob.is_risky("O_DIRECT_NO_FSYNC")
    rec = recommend(facts(engine="mysql", flavour="mariadb", version="10.11",
                          data_dir="/mnt/pmem0/my"))
    assert rec.setting("innodb_flush_method").text == "O_DIRECT"
    texts = [s.reason for s in rec.settings] + [w.reason for w in rec.withheld]
    assert not any("like O_DIRECT" in t for t in texts), texts


def test_detect_only_is_never_safe():
    knob = load_catalog("mysql", "mysql", "8.0.30").get("innodb_doublewrite")
    assert knob.is_risky("DETECT_ONLY")


# ---------------------------------------------------------------- 2. NUMA binding
def _bound_node(rec):
    step = next((s for s in rec.os_steps if "--membind" in s.command), None)
    return None if step is None else int(step.command.split("--membind=")[1].split()[0])


@pytest.mark.parametrize("engine,flavour,version", [("postgres", None, "16"),
                                                    ("mysql", "mysql", "8.0"),
                                                    ("mysql", "mariadb", "10.11")])
def test_membind_sizes_memory_and_cpus_from_the_node(engine, flavour, version):
    # 2 sockets x 24 threads, 192 GiB in all but 64 GiB per node
    rec = recommend(facts(engine=engine, flavour=flavour, version=version,
                          data_dir="/mnt/pmem0/db", clients=16, workload="olap"))
    node = _bound_node(rec)
    assert node == 0
    assert worst(rec).total_bytes <= 64 * GB
    if engine == "postgres":
        assert rec.setting("max_parallel_workers").value <= 12  # node 0's physical cores
        assert rec.setting("max_worker_processes").value <= 24
    assert any("node 0" in n for n in rec.notes)


def test_spanning_server_keeps_all_parallelism():
    rec = recommend(facts(data_dir="/mnt/pmem0/pg", cpus=48, workload="olap"))
    assert _bound_node(rec) is None
    assert rec.setting("max_parallel_workers").value >= 24  # every physical core


def test_interleave_leaves_out_cpu_less_nodes():
    rec = recommend(facts({"preset": "pmem", "pmem_mode": "memory", "cxl_nodes": 1},
                          data_dir="/mnt/pmem0/pg", cpus=48))
    cmd = next(s.command for s in rec.os_steps if "--interleave" in s.command)
    nodes = cmd.split("--interleave=")[1].split()[0]
    assert nodes == "0-1", cmd  # the CPU nodes; CXL node 2 is left out, so is "all"


# ---------------------------------------------------------------- 3. destructive steps
def test_reprovisioning_is_not_offered_over_mounted_namespaces():
    rec = recommend(facts({"preset": "pmem", "pmem_mode": "mixed"}, data_dir="/mnt/pmem0/pg"))
    assert not any("create -goal" in s.command for s in rec.os_steps)
    assert any("create -goal" in (x.fix + x.message) and "destroy" in (x.fix + x.message).lower()
               for x in rec.findings if x.rule == "PM001")
    assert not any("create -goal" in x.fix and "destroy" not in x.fix.lower()
                   for x in rec.findings)


def test_reprovisioning_without_mounted_data_is_marked_destructive():
    rec = recommend(facts({"preset": "pmem", "pmem_mode": "memory", "namespaces": [],
                           "mounts": {"/mnt/pmem0": None, "/mnt/pmem1": None}},
                          data_dir="/srv/pg"))
    step = next(s for s in rec.os_steps if "create -goal" in s.command)
    assert step.destructive and "destroys" in step.reason.lower()
    assert step.to_dict()["destructive"] is True


# ---------------------------------------------------------------- 4. memory overcommit
def test_dax_shared_buffers_rederives_work_mem_and_fits():
    rec = recommend(facts(machine={"preset": "pmem", "sockets": 1, "cores": 8, "threads": 16,
                                   "memory_gb": 64},
                          data_dir="/mnt/pmem0/pg", version="17", clients=290))
    assert rec.setting("shared_buffers").rule == "PM011"
    assert worst(rec).total_bytes <= rec.facts.memory_bytes
    wm = rec.setting("work_mem")
    assert "worst case" in wm.reason


def test_autovacuum_work_mem_is_capped_on_pg17():
    rec = recommend(facts(machine="ssd", data_dir="/srv/pg", version="17"))
    av = rec.setting("autovacuum_work_mem")
    assert av is not None and av.value * 1024 < rec.setting("maintenance_work_mem").value * 1024


@pytest.mark.parametrize("engine,flavour,version", [("postgres", None, "18"),
                                                    ("mysql", "mysql", "8.4"),
                                                    ("mysql", "mariadb", "11.4")])
def test_every_recommendation_fits_and_states_its_worst_case(engine, flavour, version):
    rec = recommend(facts(machine={"preset": "ssd", "memory_gb": 24, "cores": 2, "threads": 2},
                          engine=engine, flavour=flavour, version=version, data_dir="/srv/db"))
    assert worst(rec).total_bytes <= 24 * GB
    data = rec.to_json()
    assert data["memory"]["total_bytes"] <= data["memory"]["budget_bytes"] == 24 * GB
    assert any("worst case" in n for n in rec.header_notes())


# ---------------------------------------------------------------- 5. rules vs papers/manuals
def test_no_innodb_thread_concurrency_cap():
    rec = recommend(facts(engine="mysql", flavour="mysql", version="8.0",
                          data_dir="/mnt/pmem0/my", clients=200))
    assert rec.setting("innodb_thread_concurrency") is None
    assert "innodb_thread_concurrency" not in rec.bounds
    assert not any(x.rule == "PM021" and x.severity == "warn" for x in rec.findings)


@pytest.mark.parametrize("version,want", [
    ("8.0.20", {"innodb_log_file_size": 1 * GB, "innodb_log_files_in_group": 14}),
    ("8.0.36", {"innodb_redo_log_capacity": 14 * GB}),  # memory-based: 0.5625 x 24 GB
    ("8.4", {"innodb_redo_log_capacity": 1 * GB}),  # CPU-based: 2 CPUs / 2 GB
])
def test_mysql_redo_sizing_per_version(version, want):
    # the dedicated-server baseline alone: OLTP raises the redo to the pool (PM031)
    rec = recommend(facts(machine={"preset": "ssd", "memory_gb": 24, "cores": 2, "threads": 2},
                          engine="mysql", flavour="mysql", version=version, data_dir="/srv/my",
                          workload="olap"))
    for name, value in want.items():
        assert rec.setting(name).value == value, (name, rec.setting(name))


def test_write_io_threads_bound_includes_8_on_one_socket():
    rec = recommend(facts({"preset": "pmem", "sockets": 1, "cores": 12, "threads": 24},
                          engine="mysql", flavour="mysql", version="8.0",
                          data_dir="/mnt/pmem0/my"))
    assert rec.bounds["innodb_write_io_threads"][1] >= 8


def test_dax_on_btt_says_the_real_cause():
    prof = {"preset": "pmem", "namespaces": [
        {"name": "namespace0.0", "region": "region0", "mode": "sector", "size_bytes": 500 * GB,
         "blockdev": "pmem0s", "numa_node": 0}],
        "mounts": {"/mnt/pmem0": {"device": "/dev/pmem0s", "dax": None,
                                  "options": "rw"}}}
    rec = recommend(facts(prof, data_dir="/mnt/pmem0/pg"))
    notes = [x for x in rec.findings if x.rule == "PM003"]
    assert notes and all("sector" in (x.message + x.fix) and "fsdax" in x.fix for x in notes)
    assert not any("dax=always" in s.command and s.rule == "PM003" for s in rec.os_steps)


def test_dax_with_wrong_block_size_says_recreate_the_filesystem():
    prof = {"preset": "pmem", "mounts": {"/mnt/pmem0": {"dax": None, "block_size": 1024,
                                                        "options": "rw"}}}
    rec = recommend(facts(prof, data_dir="/mnt/pmem0/pg"))
    fixes = " ".join(x.fix for x in rec.findings if x.rule == "PM003")
    assert "mkfs" in fixes and "4096" in fixes
    assert not any(s.rule == "PM003" and "mount -o dax=always" in s.command
                   and "mkfs" not in s.command for s in rec.os_steps)


def test_max_wal_size_cap_uses_the_wal_device_and_caps_below_the_baseline():
    # a 40 GiB WAL namespace on node 1 beside 500 GiB of data PMEM on node 0
    ns = make_profile("pmem")["pmem"]["namespaces"]
    ns[1]["size_bytes"] = 40 * GB
    rec = recommend(facts({"preset": "pmem", "namespaces": ns}, data_dir="/mnt/pmem0/pg",
                          wal_dir="/mnt/pmem1/wal"))
    assert rec.setting("max_wal_size").value == 10 * 1024  # MB: a quarter of the WAL device
    assert rec.bounds["max_wal_size"][1] == 10 * 1024
    # tmpfs WAL in 16 GiB of RAM: room for 2 GiB only, below pgtune's 8 GB: PM013 caps it to
    # the room with the reason (a full pg_wal is a PANIC; check would warn above it) and says so
    small = recommend(facts({"preset": "ssd", "memory_gb": 16}, data_dir="/dev/shm/pg"))
    s = small.setting("max_wal_size")
    assert s.value == 2 * 1024 and s.rule == "PM013" and "PANIC" in s.reason
    assert any(x.rule == "PM013" and x.subject == "max_wal_size" for x in small.findings)


def test_gains_match_the_corrected_insights():
    rec = recommend(facts(data_dir="/srv/pg", wal_dir="/mnt/pmem0/wal"))
    pm002 = " ".join(x.message for x in rec.findings if x.rule == "PM002")
    assert "+4.5-31%" in pm002 and "+36-117%" in pm002
    rec = recommend(facts(data_dir="/mnt/pmem0/pg"))
    reason = rec.setting("max_wal_size").reason
    assert "30 s" in reason and "x2.37" in reason
    my = recommend(facts(engine="mysql", flavour="mysql", version="8.0.36",
                         data_dir="/mnt/pmem0/my", allow_unsafe=True))
    assert "uncertain" in my.setting("innodb_flush_method").reason


# ---------------------------------------------------------------- 6. recommend's input
def test_nonexistent_path_on_this_machine_is_an_error(run_cli):
    code, _, err = run_cli("recommend", "postgres", "--data-dir", "/nonexistent/pg",
                           "--memory", "1G")
    assert code == EXIT_USAGE and "--medium" in err and err.count("\n") <= 2


def test_path_the_profile_does_not_know_is_said(run_cli, profile_file):
    code, out, err = run_cli("recommend", "postgres", "--profile", profile_file("ssd"),
                             "--data-dir", "/srv/pg", "--json")
    assert code == 0
    data = json.loads(out)
    assert any("/srv/pg" in n and "--medium" in n for n in data["notes"])
    code, out, _ = run_cli("recommend", "postgres", "--profile", profile_file("ssd"),
                           "--data-dir", "/srv/pg", "--medium", "nvme", "--json")
    assert code == 0 and json.loads(out)["target"]["data_medium"] == "nvme"


def test_memory_without_unit_is_an_error(run_cli, profile_file):
    code, _, err = run_cli("recommend", "postgres", "--profile", profile_file(), "--memory",
                           "24")
    assert code == EXIT_USAGE and "24G" in err


def test_memory_above_the_hosts_ram_sizes_for_a_target_host(run_cli, profile_file):
    """--memory describes the host the config is for (what-if sizing, as pgtune does)."""
    code, out, err = run_cli("recommend", "postgres", "--profile", profile_file("small"),
                             "--memory", "64G", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"]["memory_bytes"] == 64 << 30
    assert doc["notes"][0].startswith("sizes for a target host: 64.0 GiB RAM (--memory)")


def test_target_version_in_json(run_cli, profile_file):
    code, out, _ = run_cli("recommend", "mysql", "--profile", profile_file(), "--version",
                           "8.0.36", "--json")
    assert code == 0
    t = json.loads(out)["target"]
    assert t["flavour"] == "mysql" and t["version"] == "8.0.36" and t["engine"] == "mysql"


# ---------------------------------------------------------------- 7. flavour mismatch
def test_mysql8_config_is_not_validated_on_mariadb(tmp_path):
    from pmem_advisor.engines.server_validate import check_flavour

    conf = tmp_path / "my.cnf"
    conf.write_text("[mysqld]\ninnodb_redo_log_capacity = 2G\ninnodb_buffer_pool_size = 1G\n")
    from pmem_advisor.engines.mysql.parse import parse_mycnf

    config = parse_mycnf(str(conf))
    with pytest.raises(UsageError) as e:
        check_flavour(config, "mysql", "mariadb", "10.11.9")
    assert "MySQL" in str(e.value) and "MariaDB" in str(e.value)
    # issue 53: the hint asks for a MySQL server; it does not say one is installed
    assert "--flavour mysql (it must be installed here)" in e.value.hint
    assert ", installed)" not in e.value.hint
    check_flavour(config, "mysql", "mysql", "8.0.36")  # the right server is fine


def test_emitted_header_names_the_flavour(tmp_path):
    from pmem_advisor.engines.mysql.parse import parse_mycnf
    from pmem_advisor.engines.server_validate import check_flavour

    conf = tmp_path / "my.cnf"
    conf.write_text("# my.cnf written by pmem-advisor 0.1\n# target: MySQL 8.4\n[mysqld]\n"
                    "innodb_buffer_pool_size = 1G\n")
    with pytest.raises(UsageError):
        check_flavour(parse_mycnf(str(conf)), "mysql", "mariadb", "10.11.9")


def test_binary_profile_is_a_one_line_input_error(run_cli, tmp_path):
    p = tmp_path / "probe.json"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    code, _, err = run_cli("recommend", "postgres", "--profile", str(p))
    assert code == EXIT_USAGE and "not text" in err and err.count("\n") == 1


# ---------------------------------------------------------------- PROBE's measured medium
def test_measured_medium_sizes_io_and_is_said():
    prof = make_profile("ssd")
    prof["paths"] = [{"path": "/srv/my", "mountpoint": "/", "fstype": "ext4", "device": "/dev/vdb",
                      "medium": "ssd", "medium_source": "measured",
                      "medium_note": "medium: ssd (measured 0.05 ms random 4 KB read, 26000 read "
                                     "IOPS, 18000 write IOPS (fio, 5.0 s))",
                      "measured": {"read_lat_ms": 0.05, "read_iops": 26000, "write_iops": 18000,
                                   "method": "fio", "seconds": 5.0}}]
    rec = recommend(build_facts(prof, engine="mysql", flavour="mysql", version="8.4",
                                data_dir="/srv/my"))
    # the medium's figure: 9,000 (half the measured peak) is flushing the workload pays for
    assert rec.setting("innodb_io_capacity").value == 2000
    assert rec.setting("innodb_flush_neighbors").value == 0
    assert any("measured 0.05 ms" in n for n in rec.notes)
    assert any("measured 0.05 ms" in n for n in rec.header_notes())
    assert rec.to_json()["target"]["data_medium_source"] == "measured"


def test_medium_per_path():
    f = facts("ssd", data_dir="/srv/pg", wal_dir="/srv/wal", medium="/srv/wal=pmem")
    assert f.wal.medium == "pmem" and f.data.medium == "ssd"
    f = facts("ssd", data_dir="/srv/pg", wal_dir="/srv/wal", medium="nvme")
    assert f.data.medium == "nvme" and f.wal.medium == "ssd"  # CLASS is the data dir's
    with pytest.raises(UsageError):
        facts("ssd", data_dir="/srv/pg", medium="/elsewhere=pmem")


def test_interleave_includes_cpu_less_nodes_only_when_asked():
    spec = {"preset": "pmem", "pmem_mode": "memory", "cxl_nodes": 1}
    rec = recommend(facts(spec, data_dir="/mnt/pmem0/pg", cpus=48, interleave_cpuless=True))
    cmd = next(s.command for s in rec.os_steps if "--interleave" in s.command)
    assert "--interleave=0-2" in cmd


def test_path_missing_from_a_machine_tree_is_said(tmp_path):
    from pmem_advisor.library.recommend import build_recommendation
    from tests.probes.machine_builder import build

    root = build("this-vm", tmp_path / "tree")
    rec = build_recommendation("postgres", root=str(root), data_dir="/nowhere/pg", version="18")
    assert any("/nowhere/pg does not exist in" in n and "--medium" in n for n in rec.notes)


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "dir"])
def test_config_parse_refuses_what_is_not_a_file(run_cli, tmp_path, target):
    import os

    if target == "fifo":
        target = str(tmp_path / "fifo")
        os.mkfifo(target)
    elif target == "dir":
        target = str(tmp_path)
    code, _, err = run_cli("config", "parse", target)  # returns: no endless read, no hang
    assert code == EXIT_USAGE and err.count("\n") == 1
