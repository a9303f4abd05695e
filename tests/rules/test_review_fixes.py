"""The reviewer's defects of `recommend` on captured trees (container-v2 cgroup, cxl-expander,
legacy-memmap), one test per defect; each failed before its fix."""

from __future__ import annotations

import pytest

from pmem_advisor.rules.memory import BUDGET_SHARE

GB = 1 << 30


@pytest.fixture(scope="module")
def container(tmp_path_factory):
    from tests.probes.machine_builder import build

    return str(build("container-v2", tmp_path_factory.mktemp("tree") / "container-v2"))


def _rec(engine, root, version, **kw):
    from pmem_advisor.library.recommend import build_recommendation

    kw.setdefault("data_dir", "/var/lib/postgresql/data")
    return build_recommendation(engine, root=root, version=version, **kw)


def test_mysql84_worst_case_fits_a_small_cgroup_and_keeps_the_pool(container):
    rec = _rec("mysql", container, "8.4.0")
    budget = rec.facts.memory_bytes
    assert budget == 4 * GB  # the cgroup's memory.max, not the host's 251.8 GiB
    assert rec.memory.total_bytes <= budget * BUDGET_SHARE
    assert rec.setting("innodb_buffer_pool_size").value >= 2 * GB
    tt = rec.setting("temptable_max_ram")
    assert tt is not None and tt.value <= budget // 16 and "budget" in tt.reason


def test_pg18_small_cgroup_lowers_connections_not_work_mem_and_passes_check(container, run_cli,
                                                                            tmp_path):
    out = tmp_path / "pg.conf"
    args = ("--root", container, "--data-dir", "/var/lib/postgresql/data", "--version", "18")
    code, _, err = run_cli("recommend", "postgres", *args, "--out", str(out))
    assert code == 0, err
    text = out.read_text()
    assert "work_mem = 4MB" in text.splitlines()[[ln.split(" =")[0] for ln in
                                                   text.splitlines()].index("work_mem")]
    conns = next(ln for ln in text.splitlines() if ln.startswith("max_connections ="))
    assert "300" not in conns.split("#")[0] and "--clients" in conns
    code, cout, cerr = run_cli("check", "--config", str(out), *args)
    assert code == 0 and "CK004" not in cout + cerr, cout + cerr


def test_pg_clients_given_keeps_max_connections(container):
    rec = _rec("postgres", container, "18", clients=300)
    assert rec.setting("max_connections").value >= 300


def test_pg_parallelism_follows_the_cgroup_cpus(container):
    rec = _rec("postgres", container, "18")
    assert rec.facts.cpus == 2
    par = rec.setting("max_parallel_workers")
    assert par is not None and par.value == 2 and "cpu.max" in par.reason
    assert rec.setting("max_parallel_workers_per_gather").value == 1
    assert rec.setting("max_parallel_maintenance_workers").value == 1


def test_control_character_in_a_path_is_a_one_line_error(run_cli, tmp_path):
    from pmem_advisor.errors import EXIT_USAGE

    bad = tmp_path / "w\nfsync=off"
    bad.mkdir()
    code, out, err = run_cli("recommend", "postgres", "--version", "18", "--medium", "ssd",
                             "--data-dir", str(tmp_path), "--wal-dir", str(bad))
    assert code == EXIT_USAGE and out == "" and err.count("\n") == 1 and "--wal-dir" in err


def test_os_step_paths_are_shell_quoted():
    import shlex

    from pmem_advisor.rules import build_facts, recommend
    from tests.rules.machines import make_profile

    f = build_facts(make_profile("pmem"), engine="postgres", version="18",
                    data_dir="/mnt/pmem0/my pg", wal_dir="/mnt/pmem0/my wal")
    cmds = [s.command for s in recommend(f).os_steps if "-D " in s.command]
    assert cmds
    for cmd in cmds:
        words = shlex.split(cmd)
        assert "/mnt/pmem0/my pg" in words, cmd


def test_piped_table_keeps_each_knob_on_one_line_and_notes_on_stderr(run_cli):
    code, out, err = run_cli("recommend", "postgres", "--version", "18", "--medium", "ssd")
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("autovacuum_work_mem "))
    assert "RAM/64" in line
    assert "note:" not in out and "note:" in err


@pytest.mark.parametrize("cpuless,want", [(False, "--interleave=0-1"), (True, "--interleave=0-2")])
def test_cxl_note_interleaves_cpu_nodes_unless_asked(tmp_path, cpuless, want):
    from tests.probes.machine_builder import build

    root = str(build("cxl-expander", tmp_path / "cxl"))
    rec = _rec("postgres", root, "18", data_dir=None, interleave_cpuless=cpuless)
    note = next(x for x in rec.findings if x.rule == "PM009")
    assert want in note.fix and "=all" not in note.fix


def test_memmap_wal_room_caps_max_wal_size_and_check_agrees(tmp_path, run_cli):
    from tests.probes.machine_builder import build

    root = str(build("legacy-memmap", tmp_path / "mm"))
    args = ("--root", root, "--data-dir", "/pmem/pgdata", "--version", "18")
    out = tmp_path / "pg.conf"
    assert run_cli("recommend", "postgres", *args, "--out", str(out))[0] == 0
    line = next(ln for ln in out.read_text().splitlines() if ln.startswith("max_wal_size ="))
    assert "8GB" not in line.split("#")[0] and "memmap-emulated PMEM" in line
    assert "tmpfs" not in line
    _, cout, cerr = run_cli("check", *args, "--config", str(out))
    assert "warn [PM013]" not in cout + cerr
    big = tmp_path / "big.conf"
    big.write_text("max_wal_size = 8GB\n")
    _, cout, cerr = run_cli("check", *args, "--config", str(big))
    assert "warn [PM013]" in cout + cerr


def test_jit_label_and_lz4_on_few_cpus():
    from pmem_advisor.rules import build_facts, recommend
    from tests.rules.machines import make_profile

    prof = make_profile({"preset": "ssd", "memory_gb": 24, "cores": 2, "threads": 2})
    f = build_facts(prof, engine="postgres", version="18", data_dir="/srv/pg")
    rec = recommend(f)
    assert "not a pgtune" not in rec.setting("jit").reason
    assert "pglz" in rec.setting("wal_compression").reason  # off: the measured cost was pglz's
    lz4 = build_facts(prof, engine="postgres", version="18", data_dir="/srv/pg",
                      features={"lz4"})
    assert recommend(lz4).setting("wal_compression").text == "lz4"  # 2 CPUs do not refuse lz4


def test_mysql84_read_io_threads_from_the_cgroup_cpus(container):
    s = _rec("mysql", container, "8.4.0").setting("innodb_read_io_threads")
    assert s is not None and s.value == 4 and "64 logical" in s.reason
